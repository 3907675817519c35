/**
 * A database outage delays world-state updates and never loses them: the materialiser's
 * subscription keeps the event and retries until PostgreSQL (behind a proxy the test cuts) is
 * back — on the in-memory bus, and on JetStream without dead-lettering it. And the outbox relay
 * marks an event sent on the in-memory bus only after the durable subscribers handled it, so a
 * process that dies in between sends it again instead of losing it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../src/bus/index.js';
import {
  createInMemoryEventBus,
  createOutboxRelay,
  writeOutboxEvent,
  OUTBOX_WRITERS,
} from '../src/bus/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { deterministicEventId } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';
import type { WorldMaterialiser } from '../src/world/index.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';
import { deltaEvent } from './world-store-contract.js';

const pgUp = await requirePostgres();
const natsUp = await requireNats();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const OUTAGE_MS = 3_000;

describe.skipIf(!pgUp || !natsUp)('world state across a PostgreSQL outage', () => {
  const schema = uniqueName('fgoutage');
  const target = new URL(PG_URL);
  let proxy: TcpProxy;
  let admin: GatewayStore;
  let store: GatewayStore;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    admin = await openGatewayStore(PG_URL, { schema });
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    const url = new URL(PG_URL);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    store = await openGatewayStore(url.toString(), {
      schema,
      migrate: false,
      timeouts: { connectMs: 500, queryMs: 2_000 },
    });
  });
  afterEach(async () => {
    proxy.pass();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await store?.close();
    await proxy?.close();
    if (admin !== undefined) {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(admin.db);
      await admin.close();
    }
  });

  async function materialiser(bus: EventBus, name: string): Promise<WorldMaterialiser> {
    const retries: unknown[] = [];
    const world = createWorldMaterialiser({
      store: createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
      bus,
      subscriptionName: name,
      retry: { initialDelayMs: 50, maxDelayMs: 400, onRetry: (error) => retries.push(error) },
    });
    await world.start();
    cleanups.push(() => world.stop());
    return world;
  }

  /** Publishes `count` events while the database is cut off, then brings it back. */
  async function publishDuringOutage(bus: EventBus, domain: string, count: number) {
    proxy.cut();
    for (let i = 0; i < count; i += 1) {
      const event = deltaEvent([{ domain, path: 'data.count', op: 'inc', value: 1 }]);
      await bus.publish('world.state.delta', event.payload, { id: event.id });
    }
    await sleep(OUTAGE_MS);
    proxy.pass();
  }

  it('in-memory bus: events that arrive while the database is down apply once it is back', async () => {
    const bus = createInMemoryEventBus({ onUnreportedError: () => undefined });
    cleanups.push(() => bus.close());
    const errors: EventEnvelope[] = [];
    await bus.subscribe('system.error', (e) => void errors.push(e), { name: 'errors' });
    const world = await materialiser(bus, uniqueName('mat'));
    await publishDuringOutage(bus, 'outage_mem', 5);
    await bus.idle();
    expect((await world.getDomain('outage_mem'))?.state).toEqual({ data: { count: 5 } });
    expect(errors.filter((e) => String(e.topic) === 'system.error')).toEqual([]);
  });

  it('JetStream: a durable consumer waits the outage out instead of dead-lettering', async () => {
    const stream = uniqueName('FGOUT').toUpperCase();
    const bus: JetStreamEventBus = await createJetStreamEventBus({
      servers: NATS_URL,
      stream,
      subjectPrefix: stream.toLowerCase(),
      deadLetterPrefix: `${stream.toLowerCase()}_dlq`,
      // Tight limits: before waiting out outages, 3 failed tries 200 ms apart dead-lettered.
      maxDeliver: 3,
      redeliveryDelayMs: 200,
      ackWaitMs: 1_000,
    });
    cleanups.push(async () => {
      await bus.close();
      await deleteNatsStream(stream);
    });
    const dead: unknown[] = [];
    await bus.subscribeDeadLetters('>', (d) => void dead.push(d), {
      name: uniqueName('dlq'),
    });
    const world = await materialiser(bus, uniqueName('mat'));
    await publishDuringOutage(bus, 'outage_js', 5);
    const deadline = Date.now() + 15_000;
    for (;;) {
      const count = (await world.getDomain('outage_js'))?.state;
      if (JSON.stringify(count) === JSON.stringify({ data: { count: 5 } })) break;
      if (Date.now() > deadline) throw new Error(`world never converged: ${JSON.stringify(count)}`);
      await sleep(100);
    }
    await sleep(500);
    expect((await world.getDomain('outage_js'))?.state).toEqual({ data: { count: 5 } });
    expect(dead).toEqual([]);
  });

  it('the materialiser gives up waiting when it is stopped, leaving the event unapplied', async () => {
    const bus = createInMemoryEventBus({ onUnreportedError: () => undefined });
    cleanups.push(() => bus.close());
    const world = await materialiser(bus, uniqueName('mat'));
    proxy.cut();
    const event = deltaEvent([{ domain: 'outage_stop', path: 'data.count', op: 'inc', value: 1 }]);
    await bus.publish('world.state.delta', event.payload, { id: event.id });
    await sleep(300);
    await world.stop();
    proxy.pass();
    expect(await world.getDomain('outage_stop')).toBeUndefined();
  });
});

describe('outbox relay on the in-memory bus', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('marks a row sent only after the durable subscribers handled its event', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-relay-'));
    dirs.push(dir);
    const store = await openGatewayStore(`sqlite:${join(dir, 'relay.db')}`);
    const bus = createInMemoryEventBus();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const handled: string[] = [];
    await bus.subscribe(
      'world.state.delta',
      async (e) => {
        await gate;
        handled.push(e.id);
      },
      { name: 'durable-consumer', durable: true },
    );
    const relay = createOutboxRelay({ db: store.db, bus });
    try {
      const id = deterministicEventId('world.state.delta', 'ops', 'task-1');
      await writeOutboxEvent(
        store.db,
        'world.state.delta',
        { source: 'ops', skill: 's', taskId: 'task-1', correlationId: 'c', deltas: [] },
        { id },
      );
      const round = relay.relayOnce();
      await sleep(50);
      const unsent = await store.db
        .selectFrom('fleetgate_outbox')
        .select(['id', 'sent_at'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      // The process dying now must leave the row unsent: the event exists only in memory.
      expect(unsent.sent_at).toBeNull();
      release();
      expect(await round).toBe(1);
      expect(handled).toEqual([id]);
      const sent = await store.db
        .selectFrom('fleetgate_outbox')
        .select('sent_at')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(sent.sent_at).not.toBeNull();
    } finally {
      release();
      await relay.stop();
      await bus.close();
      await store.close();
    }
  });

  it('stops waiting when the relay stops: the row stays unsent for the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-relay-'));
    dirs.push(dir);
    const store = await openGatewayStore(`sqlite:${join(dir, 'relay.db')}`);
    const bus = createInMemoryEventBus();
    await bus.subscribe('world.state.delta', () => new Promise<void>(() => undefined), {
      name: 'stuck',
      durable: true,
    });
    const relay = createOutboxRelay({ db: store.db, bus, pollIntervalMs: 10 });
    try {
      await writeOutboxEvent(store.db, 'world.state.delta', {
        source: 'ops',
        skill: 's',
        taskId: 'task-2',
        correlationId: 'c',
        deltas: [],
      });
      relay.start();
      await sleep(100);
      await relay.stop();
      const row = await store.db
        .selectFrom('fleetgate_outbox')
        .select('sent_at')
        .executeTakeFirstOrThrow();
      expect(row.sent_at).toBeNull();
    } finally {
      await store.close();
    }
  });
});
