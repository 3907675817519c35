import fc from 'fast-check';
import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import { createInMemoryEventBus } from './in-memory-bus.js';
import { topicMatches } from './topic-pattern.js';
import type {
  CostSampleEvent,
  EventEnvelope,
  OpenTopics,
  SystemErrorEvent,
  WorldStateDeltaEvent,
} from '../protocol/index.js';
import type { UnreportedErrorHandler } from './types.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('InMemoryEventBus', () => {
  it('does not call handlers synchronously inside publish, and idle() waits for delivery', async () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    const seen: string[] = [];
    await bus.subscribe('a.b', (e) => void seen.push(e.id), { name: 's' });
    const accepted = bus.publish('a.b', {});
    expect(seen).toEqual([]);
    const { id } = await accepted;
    await bus.idle();
    expect(seen).toEqual([id]);
  });

  it('delivers each subscription exactly the topics the reference matcher selects, in order (property)', async () => {
    const token = fc.constantFrom('a', 'b', 'c');
    const topic = fc.array(token, { minLength: 1, maxLength: 4 }).map((t) => t.join('.'));
    const pattern = fc
      .tuple(fc.array(fc.constantFrom('a', 'b', '*'), { minLength: 1, maxLength: 4 }), fc.boolean())
      .map(([t, rest]) => (rest ? [...t.slice(0, -1), '>'] : t).join('.'));
    await fc.assert(
      fc.asyncProperty(
        fc.array(pattern, { minLength: 1, maxLength: 8 }),
        fc.array(topic, { maxLength: 30 }),
        async (patterns, topics) => {
          const bus = createInMemoryEventBus<OpenTopics>();
          const got = patterns.map(() => [] as string[]);
          for (const [i, p] of patterns.entries()) {
            await bus.subscribe(p, (e) => void got[i]!.push(e.topic), { name: `s${i}` });
          }
          for (const t of topics) await bus.publish(t, {});
          await bus.idle();
          patterns.forEach((p, i) => {
            expect(got[i]).toEqual(topics.filter((t) => topicMatches(p, t)));
          });
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a slow subscription does not delay another one', async () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    const gate = deferred();
    const fast: string[] = [];
    const fastDone = deferred();
    let slowCalls = 0;
    await bus.subscribe(
      't',
      () => {
        slowCalls += 1;
        return gate.promise;
      },
      { name: 'slow' },
    );
    await bus.subscribe(
      't',
      (e) => {
        fast.push(e.id);
        if (fast.length === 2) fastDone.resolve();
      },
      { name: 'fast' },
    );
    await bus.publish('t', {});
    await bus.publish('t', {});
    await fastDone.promise; // resolves although the slow handler is still blocked
    expect(slowCalls).toBe(1);
    gate.resolve();
    await bus.idle();
  });

  describe("overflow policy 'reject' (default)", () => {
    it('rejects the publish with FLEETGATE_BUS_OVERFLOW, delivers it to nobody, reports it', async () => {
      const bus = createInMemoryEventBus<OpenTopics>({ maxQueue: 2 });
      const gate = deferred();
      const stuck: number[] = [];
      const other: number[] = [];
      const errors: SystemErrorEvent[] = [];
      await bus.subscribe('system.error', (e) => void errors.push(e.payload as SystemErrorEvent), {
        name: 'errors',
      });
      await bus.subscribe(
        'q',
        async (e) => {
          await gate.promise;
          stuck.push((e.payload as { i: number }).i);
        },
        { name: 'stuck' },
      );
      await bus.subscribe('q', (e) => void other.push((e.payload as { i: number }).i), {
        name: 'other',
        maxQueue: 100,
      });
      await bus.publish('q', { i: 0 });
      await Promise.resolve(); // the drain takes event 0 out of the queue and waits on the gate
      await bus.publish('q', { i: 1 });
      await bus.publish('q', { i: 2 });
      const overflow = await bus.publish('q', { i: 3 }).catch((e: unknown) => e);
      expect(isFleetgateError(overflow, 'FLEETGATE_BUS_OVERFLOW')).toBe(true);
      gate.resolve();
      await bus.idle();
      expect(stuck).toEqual([0, 1, 2]);
      expect(other).toEqual([0, 1, 2]);
      expect(errors).toEqual([
        expect.objectContaining({
          code: 'FLEETGATE_BUS_OVERFLOW',
          source: 'subscription:stuck',
          topic: 'q',
        }),
      ]);
      expect(bus.stats()).toMatchObject({ overflows: 1, published: 4 });
    });
  });

  describe("overflow policy 'drop-oldest'", () => {
    it('drops the oldest queued event of that subscription and reports the drop', async () => {
      const bus = createInMemoryEventBus<OpenTopics>();
      const gate = deferred();
      const got: number[] = [];
      const errors: SystemErrorEvent[] = [];
      await bus.subscribe('system.error', (e) => void errors.push(e.payload as SystemErrorEvent), {
        name: 'errors',
      });
      await bus.subscribe(
        'q',
        async (e) => {
          await gate.promise;
          got.push((e.payload as { i: number }).i);
        },
        { name: 'tail', maxQueue: 2, overflow: 'drop-oldest' },
      );
      await bus.publish('q', { i: 0 });
      await Promise.resolve();
      for (let i = 1; i <= 4; i += 1) await bus.publish('q', { i });
      gate.resolve();
      await bus.idle();
      expect(got).toEqual([0, 3, 4]);
      expect(errors.map((e) => e.code)).toEqual([
        'FLEETGATE_BUS_OVERFLOW',
        'FLEETGATE_BUS_OVERFLOW',
      ]);
      expect(bus.stats().dropped).toBe(2);
    });
  });

  describe('durable subscriptions and PublishResult.handled', () => {
    it('resolves handled true only after every durable handler ran on the event', async () => {
      const bus = createInMemoryEventBus<OpenTopics>();
      const gate = deferred();
      const order: string[] = [];
      await bus.subscribe(
        'a.>',
        async () => {
          await gate.promise;
          order.push('slow');
        },
        { name: 'slow', durable: true },
      );
      await bus.subscribe('a.>', () => void order.push('fast'), { name: 'fast', durable: true });
      await bus.subscribe('a.>', () => void order.push('live'), { name: 'live' });
      const result = await bus.publish('a.b', {}, { id: 'e1' });
      let handled: boolean | undefined;
      void result.handled!.then((ok) => (handled = ok));
      await new Promise((r) => setTimeout(r, 20));
      expect(order.sort()).toEqual(['fast', 'live']);
      expect(handled).toBeUndefined();
      // A duplicate waits for the same handling.
      const again = await bus.publish('a.b', {}, { id: 'e1' });
      expect(again.duplicate).toBe(true);
      expect(again.handled).toBe(result.handled);
      gate.resolve();
      expect(await result.handled).toBe(true);
      expect(order).toContain('slow');
    });

    it('counts a failing handler as handled (it was reported), and has no handled without durable subscribers', async () => {
      const bus = createInMemoryEventBus<OpenTopics>({ onUnreportedError: () => undefined });
      await bus.subscribe('a.b', () => void 0, { name: 'live' });
      expect((await bus.publish('a.b', {})).handled).toBeUndefined();
      await bus.subscribe(
        'a.b',
        () => {
          throw new Error('boom');
        },
        { name: 'failing', durable: true },
      );
      expect(await (await bus.publish('a.b', {})).handled).toBe(true);
    });

    it('lets a handler take the events queued behind its own, handled when it resolves', async () => {
      const bus = createInMemoryEventBus<OpenTopics>();
      const gate = deferred();
      const calls: string[][] = [];
      await bus.subscribe(
        'a.b',
        async (event, delivery) => {
          const more = delivery.takeQueued?.(2) ?? [];
          calls.push([event.id, ...more.map((e) => e.id)]);
          await gate.promise;
        },
        { name: 'batching', durable: true },
      );
      const results = [];
      for (const id of ['e1', 'e2', 'e3', 'e4']) results.push(await bus.publish('a.b', {}, { id }));
      const states: (boolean | undefined)[] = [undefined, undefined, undefined, undefined];
      results.forEach((r, i) => void r.handled!.then((ok) => (states[i] = ok)));
      await new Promise((r) => setTimeout(r, 10));
      // e1 was delivered alone (nothing queued yet when its handler started); e2 took e3 and e4
      // (two at most).
      expect(states).toEqual([undefined, undefined, undefined, undefined]);
      gate.resolve();
      await bus.idle();
      expect(calls).toEqual([['e1'], ['e2', 'e3', 'e4']]);
      expect(states).toEqual([true, true, true, true]);
      expect(bus.stats().delivered).toBe(4);
    });

    it('reports a handler that fails once, naming the events it took along, all done with', async () => {
      const bus = createInMemoryEventBus<OpenTopics>();
      const errors: unknown[] = [];
      await bus.subscribe('system.error', (e) => void errors.push(e.payload), { name: 'errs' });
      await bus.subscribe(
        'a.b',
        (_event, delivery) => {
          delivery.takeQueued?.(10);
          throw new Error('boom');
        },
        { name: 'failing', durable: true },
      );
      const first = bus.publish('a.b', {}, { id: 'e1' });
      const second = bus.publish('a.b', {}, { id: 'e2' });
      const [a, b] = await Promise.all([first, second]);
      expect([await a.handled, await b.handled]).toEqual([true, true]);
      await bus.idle();
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({
        source: 'subscription:failing',
        eventId: 'e1',
        message: expect.stringContaining('the 1 events it took along (e2): boom') as unknown,
      });
    });

    it('resolves handled false when the durable subscription goes away before handling it', async () => {
      const bus = createInMemoryEventBus<OpenTopics>();
      const gate = deferred();
      const sub = await bus.subscribe('a.b', () => gate.promise, { name: 'd', durable: true });
      const first = await bus.publish('a.b', {});
      const second = await bus.publish('a.b', {});
      await new Promise((r) => setTimeout(r, 5));
      const gone = sub.unsubscribe();
      gate.resolve();
      await gone;
      expect(await first.handled).toBe(true);
      expect(await second.handled).toBe(false);
    });
  });

  it('publishNow returns what publish resolves to and throws what it rejects with', async () => {
    const bus = createInMemoryEventBus<OpenTopics>({ maxQueue: 1 });
    const seen: unknown[] = [];
    const gate = deferred();
    await bus.subscribe(
      'q',
      async (e) => {
        seen.push(e.payload);
        await gate.promise;
      },
      { name: 'slow' },
    );
    expect(bus.publishNow('q', { i: 0 }, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
    expect(bus.publishNow('q', { i: 0 }, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
    await Promise.resolve(); // the drain takes event 0 and waits on the gate
    bus.publishNow('q', { i: 1 });
    const refused = (() => {
      try {
        return bus.publishNow('q', { i: 2 }, { id: 'b' });
      } catch (error) {
        return error;
      }
    })();
    expect(isFleetgateError(refused, 'FLEETGATE_BUS_OVERFLOW')).toBe(true);
    // A duplicate is answered as one even while the queue is full.
    expect(bus.publishNow('q', { i: 0 }, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
    // Refused, so not recorded: the same id is taken once there is room.
    gate.resolve();
    await bus.idle();
    expect(bus.publishNow('q', { i: 2 }, { id: 'b' })).toEqual({ id: 'b', duplicate: false });
    await bus.close();
    expect(() => bus.publishNow('q', {})).toThrow(
      expect.objectContaining({ code: 'FLEETGATE_BUS_CLOSED' }),
    );
    expect(seen).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
  });

  it('forgets an explicit id after the duplicate window', async () => {
    let now = 1_000;
    const bus = createInMemoryEventBus<OpenTopics>({ duplicateWindowMs: 100, now: () => now });
    expect((await bus.publish('d', {}, { id: 'x' })).duplicate).toBe(false);
    now += 99;
    expect((await bus.publish('d', {}, { id: 'x' })).duplicate).toBe(true);
    now += 2;
    expect((await bus.publish('d', {}, { id: 'x' })).duplicate).toBe(false);
    expect(bus.stats().duplicates).toBe(1);
  });

  it('unsubscribe resolves after the handler in progress finished, and no call follows', async () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    const gate = deferred();
    const calls: string[] = [];
    const started = deferred();
    let finished = false;
    const sub = await bus.subscribe(
      'u',
      async (e) => {
        calls.push(e.id);
        started.resolve();
        await gate.promise;
        finished = true;
      },
      { name: 'u' },
    );
    await bus.publish('u', {});
    await bus.publish('u', {});
    await started.promise;
    const done = sub.unsubscribe();
    gate.resolve();
    await done;
    expect(finished).toBe(true);
    await bus.publish('u', {});
    await bus.idle();
    expect(calls).toHaveLength(1);
    expect(bus.stats().subscriptions).toBe(0);
  });

  it('close delivers what is already queued, then refuses new events', async () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    const got: number[] = [];
    await bus.subscribe(
      'c',
      async (e) => {
        await Promise.resolve();
        got.push((e.payload as { i: number }).i);
      },
      { name: 'c' },
    );
    for (let i = 0; i < 5; i += 1) await bus.publish('c', { i });
    await bus.close();
    expect(got).toEqual([0, 1, 2, 3, 4]);
    await expect(bus.publish('c', {})).rejects.toSatisfy((e) =>
      isFleetgateError(e, 'FLEETGATE_BUS_CLOSED'),
    );
  });

  it('reports a failing system.error handler to onUnreportedError, once', async () => {
    const onUnreportedError = vi.fn<UnreportedErrorHandler>();
    const bus = createInMemoryEventBus<OpenTopics>({ onUnreportedError });
    await bus.subscribe(
      'system.error',
      () => {
        throw new Error('nested');
      },
      { name: 'bad' },
    );
    await bus.subscribe(
      'x',
      () => {
        throw new Error('outer');
      },
      { name: 'x' },
    );
    await bus.publish('x', {});
    await bus.idle();
    expect(onUnreportedError).toHaveBeenCalledTimes(1);
    expect(String(onUnreportedError.mock.calls[0]![0])).toContain('nested');
    expect(bus.stats().handlerFailures).toBe(2);
  });

  it('validates subscription names and queue sizes', () => {
    const bus = createInMemoryEventBus<OpenTopics>();
    expect(() => bus.subscribe('a', () => undefined, { name: '' })).toThrow(/subscription name/);
    expect(() => bus.subscribe('a', () => undefined, { name: 'a', maxQueue: 0 })).toThrow(
      /maxQueue/,
    );
    expect(() => createInMemoryEventBus({ maxQueue: 1.5 })).toThrow(/maxQueue/);
  });

  it('types publish payloads and handler events from the topic map', () => {
    const bus = createInMemoryEventBus();
    const delta: WorldStateDeltaEvent = {
      source: 'quinn',
      skill: 'triage',
      deltas: [{ domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 }],
      taskId: 't1',
      correlationId: 'c1',
    };
    // Compile-time checks: wrong payloads and unknown topics do not type-check.
    const typed = async (): Promise<void> => {
      await bus.publish('world.state.delta', delta);
      const cost = { agent: 'a', skill: 's', wallMs: 1, success: true, measured: 'agent' as const };
      // @ts-expect-error a cost.sample payload is not a world.state.delta payload
      await bus.publish('world.state.delta', cost);
      await bus.publish('cost.sample', cost);
      // @ts-expect-error not a Fleetgate topic
      await bus.publish('no.such.topic', {});
      await bus.publish('ops.alert.radius', {
        kind: 'radius',
        severity: 'warning',
        agent: 'a',
        skill: 's',
        radius: 'repo',
        message: 'm',
        evidence: null,
      });
      await bus.subscribe(
        'world.state.>',
        (e) => {
          expectTypeOf(e.topic).toEqualTypeOf<
            'world.state.delta' | 'world.state.delta.rejected' | 'world.state.updated'
          >();
          if (e.topic === 'world.state.delta')
            expectTypeOf(e.payload).toEqualTypeOf<WorldStateDeltaEvent>();
        },
        { name: 'typed' },
      );
      await bus.subscribe(
        'ops.alert.*',
        (e) => {
          expectTypeOf(e.payload.severity).toEqualTypeOf<
            'info' | 'warning' | 'error' | 'critical'
          >();
        },
        { name: 'alerts' },
      );
      await bus.subscribe(
        'cost.sample',
        (e) => {
          expectTypeOf(e).toEqualTypeOf<EventEnvelope<'cost.sample', CostSampleEvent>>();
        },
        { name: 'cost' },
      );
    };
    expect(typeof typed).toBe('function');
  });
});
