/** JetStream-only guarantees, against the real NATS server: dedupe, durable resume, dead letters. */
import { afterEach, describe, expect, it } from 'vitest';
import type { EventEnvelope, OpenTopics, SystemErrorEvent } from '../src/protocol/index.js';
import { deterministicEventId } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { DeadLetter, JetStreamEventBus, JetStreamEventBusOptions } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { Collector } from './support/event-bus-contract.js';
import { NATS_URL, deleteNatsStream, requireNats, uniqueName } from './support/services.js';

const natsUp = await requireNats();

describe.skipIf(!natsUp)('JetStreamEventBus on nats-server', () => {
  const buses: JetStreamEventBus<OpenTopics>[] = [];
  const streams = new Set<string>();
  let name = '';

  /** A bus on this test's stream; several calls give several independent connections. */
  async function open(
    options: JetStreamEventBusOptions = {},
  ): Promise<JetStreamEventBus<OpenTopics>> {
    const stream = name.toUpperCase();
    streams.add(stream);
    const bus = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: name,
      redeliveryDelayMs: 20,
      ...options,
    });
    buses.push(bus);
    return bus;
  }

  function fresh(): void {
    name = uniqueName('fgjs');
  }

  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await Promise.all([...streams].map((s) => deleteNatsStream(s)));
    streams.clear();
  });

  it('publishing the same id twice stores and delivers it once, the second returns duplicate: true', async () => {
    fresh();
    const bus = await open();
    const got = new Collector();
    await bus.subscribe('world.state.delta', got.push, { name: 'tracker', durable: true });
    const payload = {
      source: 'quinn',
      skill: 'triage',
      deltas: [],
      taskId: 't1',
      correlationId: 'c1',
    };
    const id = deterministicEventId('world.state.delta', 'quinn', 't1');
    const first = await bus.publish('world.state.delta', payload, { id });
    const second = await bus.publish('world.state.delta', payload, { id });
    expect(first).toMatchObject({ id, duplicate: false });
    expect(second).toMatchObject({ id, duplicate: true, sequence: first.sequence });
    await bus.publish('world.state.delta', { ...payload, taskId: 't2' }, { id: 'sentinel' });
    const events = await got.until(2);
    expect(events.map((e) => e.id)).toEqual([id, 'sentinel']);
  });

  it('a durable subscriber that stops and restarts receives what was published meanwhile, exactly once', async () => {
    fresh();
    const publisher = await open();
    const firstRun = await open();
    const before = new Collector();
    const sub = await firstRun.subscribe('orders.>', before.push, {
      name: 'billing',
      durable: true,
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await publisher.publish('orders.placed', { i })).id);
    await before.until(5);
    await sub.unsubscribe();
    await firstRun.close();

    const meanwhile: string[] = [];
    for (let i = 5; i < 12; i += 1) {
      meanwhile.push((await publisher.publish(i % 2 ? 'orders.paid' : 'orders.placed', { i })).id);
    }
    const secondRun = await open();
    const after = new Collector();
    await secondRun.subscribe('orders.>', after.push, { name: 'billing', durable: true });
    await after.until(meanwhile.length);
    // A sentinel behind them proves nothing else (no redelivery of the first five) is queued.
    const sentinel = (await publisher.publish('orders.sentinel', {})).id;
    await after.until(meanwhile.length + 1);
    expect(before.events.map((e) => e.id)).toEqual(ids);
    expect(after.events.map((e) => e.id)).toEqual([...meanwhile, sentinel]);
  });

  it('a durable subscriber stopped mid-batch hands unhandled events back at once; any caught in transit follow after ack_wait', async () => {
    fresh();
    const bus = await open({ ackWaitMs: 3_000 });
    const first: string[] = [];
    let release: () => void = () => undefined;
    const blocked = new Promise<void>((r) => (release = r));
    const started = new Collector();
    const sub = await bus.subscribe(
      'batch.*',
      async (e) => {
        first.push(e.id);
        started.push(e);
        await blocked;
      },
      { name: 'batcher', durable: true },
    );
    const ids: string[] = [];
    for (let i = 0; i < 20; i += 1) ids.push((await bus.publish('batch.item', { i })).id);
    await started.until(1);
    const stopping = sub.unsubscribe();
    release();
    await stopping;
    const rest = new Collector();
    const restarted = await open();
    await restarted.subscribe('batch.*', rest.push, { name: 'batcher', durable: true });
    // Well under the ack wait: pulled-but-unhandled events were nak'd on stop. A message still on
    // the wire when the consumer stopped cannot be nak'd; the server redelivers it after ack_wait.
    const remaining = ids.length - first.length;
    await rest.until(Math.ceil(remaining / 2), 1_500);
    await rest.until(remaining, 10_000);
    expect([...first, ...rest.events.map((e) => e.id)].sort()).toEqual([...ids].sort());
    expect(first).toHaveLength(1);
  });

  it('replicas sharing a durable name split the work: each event is handled once overall', async () => {
    fresh();
    const a = await open();
    const b = await open();
    const seen = new Collector();
    const byA: string[] = [];
    const byB: string[] = [];
    await a.subscribe(
      'jobs.*',
      (e) => {
        byA.push(e.id);
        seen.push(e);
      },
      { name: 'workers', durable: true },
    );
    await b.subscribe(
      'jobs.*',
      (e) => {
        byB.push(e.id);
        seen.push(e);
      },
      { name: 'workers', durable: true },
    );
    const ids: string[] = [];
    for (let i = 0; i < 40; i += 1) ids.push((await a.publish('jobs.run', { i })).id);
    await seen.until(40);
    const sentinel = (await a.publish('jobs.run', { last: true })).id;
    await seen.until(41);
    expect([...byA, ...byB].sort()).toEqual([...ids, sentinel].sort());
  });

  it('a handler that always throws ends in the dead-letter subject after maxDeliver tries', async () => {
    fresh();
    const bus = await open({ maxDeliver: 3 });
    const tries: number[] = [];
    const errors = new Collector<EventEnvelope>();
    const dead = new Collector<DeadLetter>();
    await bus.subscribe('system.error', errors.push, { name: 'errors' });
    await bus.subscribeDeadLetters('>', dead.push, { name: 'dlq-reader' });
    const healthy = new Collector();
    await bus.subscribe('payments.*', healthy.push, { name: 'healthy', durable: true });
    await bus.subscribe(
      'payments.*',
      (e) => {
        tries.push(Date.now());
        throw new Error(`cannot charge ${String((e.payload as { card: string }).card)}`);
      },
      { name: 'charger', durable: true },
    );
    const { id } = await bus.publish('payments.requested', { card: 'x-1' });
    const [letter] = await dead.until(1);
    expect(letter).toMatchObject({
      subscription: 'charger',
      deliveries: 3,
      event: { id, topic: 'payments.requested', payload: { card: 'x-1' } },
    });
    expect(letter!.error).toContain('cannot charge x-1');
    expect(tries).toHaveLength(3);
    expect(healthy.events.map((e) => e.id)).toEqual([id]);
    await errors.until(4);
    const codes = errors.events.map((e) => (e.payload as SystemErrorEvent).code);
    expect(codes.filter((c) => c === 'FLEETGATE_BUS_HANDLER_FAILED')).toHaveLength(3);
    expect(codes).toContain('FLEETGATE_BUS_DEAD_LETTERED');
    // Terminated after dead-lettering: a later event proves no fourth try is coming.
    const next = await bus.publish('payments.requested', { card: 'x-2' });
    await dead.until(2);
    expect(dead.events[1]!.event.id).toBe(next.id);
    expect(tries).toHaveLength(6);
    await errors.until(8); // 3 failures + 1 dead-letter report per event
  });

  it("a durable subscription with from: 'all' starts at the beginning of the stream", async () => {
    fresh();
    const bus = await open();
    await bus.publish('audit.one', {});
    await bus.publish('audit.two', {});
    const got = new Collector();
    await bus.subscribe('audit.*', got.push, { name: 'auditor', durable: true, from: 'all' });
    const live = new Collector();
    await bus.subscribe('audit.*', live.push, { name: 'live-all', from: 'all' });
    expect((await got.until(2)).map((e) => e.topic)).toEqual(['audit.one', 'audit.two']);
    expect((await live.until(2)).map((e) => e.topic)).toEqual(['audit.one', 'audit.two']);
  });

  it('refuses to reuse a durable name with another pattern', async () => {
    fresh();
    const bus = await open();
    const sub = await bus.subscribe('a.*', () => undefined, { name: 'owner', durable: true });
    await sub.unsubscribe();
    await expect(
      bus.subscribe('b.*', () => undefined, { name: 'owner', durable: true }),
    ).rejects.toSatisfy((e) => isFleetgateError(e, 'FLEETGATE_BUS_SUBSCRIPTION_INVALID'));
    await bus.deleteDurable('owner');
    await expect(
      bus.subscribe('b.*', () => undefined, { name: 'owner', durable: true }),
    ).resolves.toMatchObject({ name: 'owner', pattern: 'b.*' });
  });

  it('a second gateway on the same stream updates nothing it should not and shares the events', async () => {
    fresh();
    const a = await open();
    const b = await open();
    const got = new Collector();
    await b.subscribe('x.>', got.push, { name: 'other-replica' });
    const { id } = await a.publish('x.y', { from: 'a' });
    expect((await got.until(1))[0]!.id).toBe(id);
  });

  it('fails with FLEETGATE_BUS_CONNECT_FAILED when no server answers', async () => {
    await expect(
      createJetStreamEventBus({ servers: 'nats://127.0.0.1:1', stream: 'NOPE' }),
    ).rejects.toSatisfy((e) => isFleetgateError(e, 'FLEETGATE_BUS_CONNECT_FAILED'));
  });
});
