/**
 * The `EventBus` contract suite, run against every implementation (in-memory, JetStream): what
 * any caller may rely on, whatever the backend. Waits are event-driven with bounded timeouts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isFleetgateError } from '../../src/protocol/index.js';
import type { EventBus, UnreportedErrorHandler } from '../../src/bus/index.js';
import type { EventEnvelope, OpenTopics } from '../../src/protocol/index.js';
import { deterministicEventId } from '../../src/protocol/index.js';

/** What a bus factory gets: hooks the contract needs to observe. */
export interface ContractBusOptions {
  onUnreportedError: UnreportedErrorHandler;
}

/** A bus under test and how to dispose of what it created (streams, connections). */
export interface ContractBus {
  bus: EventBus<OpenTopics>;
  cleanup(): Promise<void>;
}

/** Records events and lets a test wait for a count, with a bounded timeout. */
export class Collector<E = EventEnvelope> {
  readonly events: E[] = [];
  #waiters: { n: number; resolve: () => void }[] = [];

  readonly push = (event: E): void => {
    this.events.push(event);
    this.#waiters = this.#waiters.filter((w) => {
      if (this.events.length < w.n) return true;
      w.resolve();
      return false;
    });
  };

  /** Resolves once at least `n` events arrived; rejects after `timeoutMs`. */
  until(n: number, timeoutMs = 5_000): Promise<E[]> {
    if (this.events.length >= n) return Promise.resolve(this.events);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out waiting for ${n} events, got ${this.events.length}`)),
        timeoutMs,
      );
      this.#waiters.push({
        n,
        resolve: () => {
          clearTimeout(timer);
          resolve(this.events);
        },
      });
    });
  }
}

function topics(events: readonly EventEnvelope[]): string[] {
  return events.map((e) => e.topic);
}

function expectTopicError(call: () => unknown): void {
  let thrown: unknown;
  try {
    call();
  } catch (error) {
    thrown = error;
  }
  expect(isFleetgateError(thrown, 'FLEETGATE_TOPIC_INVALID')).toBe(true);
}

/**
 * Registers the contract tests for the bus `makeBus` builds (a fresh bus per test); with
 * `enabled` false (its server is unreachable) they are registered as skipped.
 *
 * @example
 * ```ts
 * eventBusContract('InMemoryEventBus', async (o) => ({ bus: createInMemoryEventBus(o), cleanup }));
 * ```
 */
export function eventBusContract(
  label: string,
  makeBus: (options: ContractBusOptions) => Promise<ContractBus>,
  enabled = true,
): void {
  describe.skipIf(!enabled)(`EventBus contract: ${label}`, () => {
    let current: ContractBus | undefined;
    let unreported = new Collector<unknown>();

    async function fresh(): Promise<EventBus<OpenTopics>> {
      unreported = new Collector<unknown>();
      const onUnreportedError: UnreportedErrorHandler = (error) => unreported.push(error);
      current = await makeBus({ onUnreportedError });
      return current.bus;
    }

    afterEach(async () => {
      await current?.bus.close();
      await current?.cleanup();
      current = undefined;
    });

    it('delivers an exact pattern only its own topic', async () => {
      const bus = await fresh();
      const got = new Collector();
      const all = new Collector();
      await bus.subscribe('a.b', got.push, { name: 'exact' });
      await bus.subscribe('>', all.push, { name: 'all' });
      for (const t of ['a.b.c', 'a', 'a.c', 'x.b', 'a.b']) await bus.publish(t, { t });
      await all.until(5);
      await got.until(1);
      expect(topics(got.events)).toEqual(['a.b']);
    });

    it("matches '*' to exactly one token", async () => {
      const bus = await fresh();
      const got = new Collector();
      const all = new Collector();
      await bus.subscribe('a.*', got.push, { name: 'star' });
      await bus.subscribe('>', all.push, { name: 'all' });
      for (const t of ['a', 'a.b', 'a.b.c', 'b.a', 'a.c']) await bus.publish(t, {});
      await all.until(5);
      await got.until(2);
      expect(topics(got.events)).toEqual(['a.b', 'a.c']);
    });

    it("matches '>' to one or more trailing tokens", async () => {
      const bus = await fresh();
      const got = new Collector();
      const mid = new Collector();
      const all = new Collector();
      await bus.subscribe('a.>', got.push, { name: 'rest' });
      await bus.subscribe('*.b.>', mid.push, { name: 'mid' });
      await bus.subscribe('>', all.push, { name: 'all' });
      for (const t of ['a', 'a.b', 'a.b.c.d', 'b.a', 'x.b', 'x.b.y']) await bus.publish(t, {});
      await all.until(6);
      expect(topics(await got.until(2))).toEqual(['a.b', 'a.b.c.d']);
      expect(topics(await mid.until(2))).toEqual(['a.b.c.d', 'x.b.y']);
    });

    it('wraps the payload in an envelope with id, topic, time and correlationId', async () => {
      const bus = await fresh();
      const got = new Collector();
      await bus.subscribe('world.state.>', got.push, { name: 'env' });
      const first = await bus.publish('world.state.updated', {
        domain: 'ci',
        version: 3,
        paths: ['a'],
      });
      const second = await bus.publish(
        'world.state.updated',
        { domain: 'ci', version: 4, paths: [] },
        { correlationId: 'call-7', id: 'event-42' },
      );
      const [a, b] = await got.until(2);
      expect(a).toMatchObject({
        id: first.id,
        topic: 'world.state.updated',
        correlationId: first.id,
        payload: { domain: 'ci', version: 3, paths: ['a'] },
      });
      expect(Number.isNaN(Date.parse(a!.time))).toBe(false);
      expect(b).toMatchObject({ id: 'event-42', correlationId: 'call-7' });
      expect(second).toMatchObject({ id: 'event-42', duplicate: false });
    });

    it('delivers to a new subscription only events published after it was set up', async () => {
      const bus = await fresh();
      await bus.publish('a.before', {});
      const got = new Collector();
      await bus.subscribe('a.>', got.push, { name: 'late' });
      await bus.publish('a.after', {});
      expect(topics(await got.until(1))).toEqual(['a.after']);
    });

    it('keeps publish order per subscription, awaiting each handler', async () => {
      const bus = await fresh();
      const n = 100;
      const slow: number[] = [];
      let running = 0;
      let overlapped = false;
      const slowDone = new Collector<number>();
      const fast = new Collector();
      await bus.subscribe(
        'seq.*',
        async (e) => {
          running += 1;
          if (running > 1) overlapped = true;
          // Yield several times so a bus that did not await handlers would interleave them.
          for (let i = 0; i < 3; i += 1) await Promise.resolve();
          slow.push((e.payload as { i: number }).i);
          running -= 1;
          slowDone.push(0);
        },
        { name: 'slow' },
      );
      await bus.subscribe('seq.>', fast.push, { name: 'fast' });
      for (let i = 0; i < n; i += 1) await bus.publish(i % 2 === 0 ? 'seq.even' : 'seq.odd', { i });
      await slowDone.until(n);
      await fast.until(n);
      const expected = Array.from({ length: n }, (_, i) => i);
      expect(slow).toEqual(expected);
      expect(fast.events.map((e) => (e.payload as { i: number }).i)).toEqual(expected);
      expect(overlapped).toBe(false);
    });

    it('keeps pattern semantics and order for a durable subscription', async () => {
      const bus = await fresh();
      const got = new Collector();
      await bus.subscribe('d.*.x', got.push, { name: 'durable-order', durable: true });
      for (let i = 0; i < 20; i += 1) {
        await bus.publish(i % 3 === 0 ? 'd.skip.y' : `d.t${i}.x`, { i });
      }
      const expected = Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 3 !== 0);
      const events = await got.until(expected.length);
      expect(events.map((e) => (e.payload as { i: number }).i)).toEqual(expected);
    });

    it('isolates a throwing or rejecting handler and reports it on system.error', async () => {
      const bus = await fresh();
      const errors = new Collector();
      const good = new Collector();
      let thrownCalls = 0;
      await bus.subscribe('system.error', errors.push, { name: 'errors' });
      await bus.subscribe(
        'job.*',
        () => {
          thrownCalls += 1;
          throw new Error('sync boom');
        },
        { name: 'thrower' },
      );
      await bus.subscribe('job.*', () => Promise.reject(new Error('async boom')), {
        name: 'rejecter',
      });
      await bus.subscribe('job.*', good.push, { name: 'good' });
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) ids.push((await bus.publish('job.run', { i })).id);
      expect((await good.until(3)).map((e) => e.id)).toEqual(ids);
      const reported = await errors.until(6);
      const payloads = reported.map((e) => e.payload as Record<string, unknown>);
      for (const name of ['thrower', 'rejecter']) {
        const mine = payloads.filter((p) => p.source === `subscription:${name}`);
        expect(mine.map((p) => p.eventId)).toEqual(ids);
        expect(mine.every((p) => p.topic === 'job.run')).toBe(true);
        expect(mine.every((p) => typeof p.code === 'string' && typeof p.message === 'string')).toBe(
          true,
        );
      }
      expect(String(payloads.find((p) => p.source === 'subscription:thrower')?.message)).toContain(
        'sync boom',
      );
      // Worded alike on every bus: the code in its field, the message a sentence without it.
      for (const p of payloads) {
        expect(p.code).toBe('FLEETGATE_BUS_HANDLER_FAILED');
        expect(String(p.message)).toMatch(
          /^Handler of subscription (thrower|rejecter) failed on job\.run /,
        );
      }
      expect(thrownCalls).toBe(3);
    });

    it('does not report a failing system.error handler on system.error again', async () => {
      const bus = await fresh();
      const calls = new Collector();
      await bus.subscribe(
        'system.error',
        (e) => {
          calls.push(e);
          throw new Error('handler of system.error fails too');
        },
        { name: 'bad-errors' },
      );
      await bus.subscribe('boom', () => Promise.reject(new Error('first')), { name: 'boom' });
      await bus.publish('boom', {});
      await calls.until(1);
      await unreported.until(1);
      // One failure, one report, one unreported error: no loop.
      const witness = new Collector();
      await bus.subscribe('witness', witness.push, { name: 'witness' });
      await bus.publish('witness', {});
      await witness.until(1);
      expect(calls.events).toHaveLength(1);
      expect(unreported.events).toHaveLength(1);
      expect(String(unreported.events[0])).toContain('handler of system.error fails too');
    });

    it('stops delivery on unsubscribe, idempotently', async () => {
      const bus = await fresh();
      const gone = new Collector();
      const control = new Collector();
      const sub = await bus.subscribe('u.*', gone.push, { name: 'gone' });
      await bus.subscribe('u.*', control.push, { name: 'control' });
      await bus.publish('u.one', {});
      await gone.until(1);
      await sub.unsubscribe();
      await sub.unsubscribe();
      await bus.publish('u.two', {});
      await bus.publish('u.three', {});
      await control.until(3);
      expect(topics(gone.events)).toEqual(['u.one']);
      expect(sub).toMatchObject({ name: 'gone', pattern: 'u.*' });
    });

    it('delivers an event published twice with the same id once and reports the duplicate', async () => {
      const bus = await fresh();
      const got = new Collector();
      await bus.subscribe('dup.>', got.push, { name: 'dup' });
      const id = deterministicEventId('dup.test', 'task-1');
      const first = await bus.publish('dup.event', { n: 1 }, { id });
      const second = await bus.publish('dup.event', { n: 2 }, { id });
      await bus.publish('dup.after', {});
      await got.until(2);
      expect(first.duplicate).toBe(false);
      expect(second).toMatchObject({ id, duplicate: true });
      expect(got.events.map((e) => e.topic)).toEqual(['dup.event', 'dup.after']);
      expect(got.events[0]!.payload).toEqual({ n: 1 });
    });

    it('throws FLEETGATE_TOPIC_INVALID at the call for invalid topics and patterns', async () => {
      const bus = await fresh();
      const noop = (): void => undefined;
      for (const topic of ['', 'a..b', '.a', 'a.', 'a b', 'a.*', 'a.>', '>', 'a\tb', 'a.b*']) {
        expectTopicError(() => bus.publish(topic, {}));
      }
      for (const pattern of ['', 'a..b', 'a.>.b', '>.a', 'a*', 'a.b>', ' a', 'a.\n']) {
        expectTopicError(() => bus.subscribe(pattern, noop, { name: 'bad' }));
      }
      expect(() => bus.subscribe('a.b', noop, { name: 'not valid!' })).toThrow(
        /Invalid subscription name/,
      );
    });

    it('refuses publish and subscribe after close, and close is idempotent', async () => {
      const bus = await fresh();
      const got = new Collector();
      await bus.subscribe('c.*', got.push, { name: 'closing' });
      await bus.publish('c.one', {});
      await got.until(1);
      await bus.close();
      await bus.close();
      await expect(bus.publish('c.two', {})).rejects.toSatisfy((e) =>
        isFleetgateError(e, 'FLEETGATE_BUS_CLOSED'),
      );
      await expect(bus.subscribe('c.*', got.push, { name: 'after' })).rejects.toSatisfy((e) =>
        isFleetgateError(e, 'FLEETGATE_BUS_CLOSED'),
      );
      expect(topics(got.events)).toEqual(['c.one']);
    });
  });
}
