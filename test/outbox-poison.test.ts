/**
 * An event no bus will ever take never blocks the outbox: the relay parks it (moved to
 * `fleetgate_outbox_parked`, reported with a coded error and an `ops.alert.outbox_parked`) and goes
 * on with the rows after it — against the real NATS server (whose `max_payload` is 1 MiB), on a
 * SQLite file and on PostgreSQL. And deltas too many bytes for one event are published in parts,
 * never parked: a task reporting 20 × 60 KiB through `createGateway` on JetStream lands whole in
 * the world state, and the next task's delta is not held up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../src/bus/index.js';
import { createOutboxRelay, createOutboxWriter } from '../src/bus/index.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import { createJetStreamEventBus } from '../src/nats.js';
import type { Gateway, GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import type { RawAgent } from './support/raw-agent.js';
import { deltaPartJson, rpcResult, startRawAgent, taskJson } from './support/raw-agent.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import { assembleGateway, type GatewayParts } from '../src/service/internal.js';

const natsUp = await requireNats();
const pgUp = await requirePostgres();

const outbox = createOutboxWriter<OpenTopics>();

async function jetstream(): Promise<{ bus: EventBus<OpenTopics>; close: () => Promise<void> }> {
  const stream = uniqueName('POISON').toUpperCase();
  const prefix = uniqueName('poison');
  const bus = await createJetStreamEventBus<OpenTopics>({
    servers: NATS_URL,
    stream,
    subjectPrefix: prefix,
    deadLetterPrefix: `${prefix}_dlq`,
  });
  return {
    bus,
    close: async () => {
      await bus.close();
      await deleteNatsStream(stream);
    },
  };
}

/** Collects the events of `pattern` on `bus`. */
async function collect(bus: EventBus<OpenTopics>, pattern: string): Promise<EventEnvelope[]> {
  const seen: EventEnvelope[] = [];
  await bus.subscribe(pattern, (e) => void seen.push(e), {
    name: uniqueName('seen'),
  });
  return seen;
}

async function until(check: () => boolean, ms = 10_000, what = 'the condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe.skipIf(!natsUp || (backend === 'postgres' && !pgUp))(
    `outbox relay parks poison rows (${backend}, JetStream)`,
    () => {
      let store: GatewayStore;
      let dir: string | undefined;
      const schema = uniqueName('poison');

      beforeAll(async () => {
        if (backend === 'sqlite') {
          dir = mkdtempSync(join(tmpdir(), 'fleetgate-poison-'));
          store = await openGatewayStore(`sqlite:${join(dir, 'outbox.db')}`);
        } else store = await openGatewayStore(PG_URL, { schema });
      });
      afterAll(async () => {
        if (backend === 'postgres') {
          await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
        }
        await store.close();
        if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      });

      it('publishes the rows around an event NATS refuses as too large and one that is not JSON', async () => {
        const { bus, close } = await jetstream();
        const errors: unknown[] = [];
        try {
          const events = await collect(bus, 'test.>');
          const alerts = await collect(bus, 'ops.alert.outbox_parked');
          const write = (topic: string, payload: unknown, id: string) =>
            store.db.transaction().execute((trx) => outbox.write(trx, topic, payload, { id }));
          await write('test.small', { n: 1 }, `${backend}-a`);
          // 2 MiB: more than the server's max_payload (1 MiB). No relay limit of its own: the bus says.
          await write(
            'test.huge',
            { source: 'evil', skill: 's', taskId: 't1', blob: 'x'.repeat(2 << 20) },
            `${backend}-huge`,
          );
          await write('test.small', { n: 2 }, `${backend}-b`);
          await sql`update fleetgate_outbox set payload = ${'{"broken":'} where id = ${`${backend}-b`}`.execute(
            store.db,
          );
          await write('test.small', { n: 3 }, `${backend}-c`);
          const relay = createOutboxRelay({
            db: store.db,
            bus,
            lockRows: backend === 'postgres',
            onError: (error) => errors.push(error),
          });
          expect(await relay.drain()).toBe(2);
          await until(() => events.length === 2 && alerts.length === 2, 10_000, 'the events');
          expect(events.map((e) => e.payload)).toEqual([{ n: 1 }, { n: 3 }]);
          // Parked, with why, out of the way for good.
          const parked = await store.db
            .selectFrom('fleetgate_outbox_parked')
            .select(['id', 'topic', 'reason'])
            .orderBy('seq')
            .execute();
          expect(parked.map((p) => p.id)).toEqual([`${backend}-huge`, `${backend}-b`]);
          expect(parked[0]!.reason).toMatch(/max_payload 1048576/);
          expect(parked[1]!.reason).toMatch(/JSON/);
          const unsent = await store.db
            .selectFrom('fleetgate_outbox')
            .select('id')
            .where('sent_at', 'is', null)
            .execute();
          expect(unsent).toEqual([]);
          // Reported with a code, and raised as an alert naming the agent it came from.
          const codes = errors.map((e) => (isFleetgateError(e) ? e.code : String(e)));
          expect(codes).toEqual(['FLEETGATE_OUTBOX_EVENT_PARKED', 'FLEETGATE_OUTBOX_EVENT_PARKED']);
          expect(alerts[0]!.payload).toMatchObject({
            kind: 'outbox_parked',
            severity: 'error',
            agent: 'evil',
            skill: 's',
            evidence: { eventId: `${backend}-huge`, topic: 'test.huge', taskId: 't1' },
          });
          // Nothing left to retry: a second round publishes nothing and reports nothing.
          expect(await relay.drain()).toBe(0);
          expect(errors).toHaveLength(2);
          await relay.stop();
        } finally {
          await close();
        }
      });

      it('parks a row over its own limit without trying the bus', async () => {
        const { bus, close } = await jetstream();
        const errors: unknown[] = [];
        try {
          const events = await collect(bus, 'limit.>');
          await store.db.transaction().execute(async (trx) => {
            await outbox.write(
              trx,
              'limit.big',
              { blob: 'y'.repeat(200_000) },
              { id: `${backend}-l1` },
            );
            await outbox.write(trx, 'limit.ok', { n: 1 }, { id: `${backend}-l2` });
          });
          const relay = createOutboxRelay({
            db: store.db,
            bus,
            maxPayloadBytes: 100_000,
            onError: (error) => errors.push(error),
          });
          expect(await relay.drain()).toBe(1);
          await until(() => events.length === 1, 10_000, 'the small event');
          expect(errors.map((e) => isFleetgateError(e) && e.code)).toEqual([
            'FLEETGATE_OUTBOX_EVENT_PARKED',
          ]);
          expect((errors[0] as Error).message).toContain('more than the limit of 100000');
        } finally {
          await close();
        }
      });
    },
  );
}

describe.skipIf(!natsUp)('deltas too large for one event, through the gateway on JetStream', () => {
  let dir: string;
  let agent: RawAgent;
  let nats: Awaited<ReturnType<typeof jetstream>>;
  let gw: Gateway;
  let gwParts: GatewayParts;
  const VALUE = 'v'.repeat(60 * 1024);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-parts-'));
    let calls = 0;
    agent = await startRawAgent('bulk', (call, res) => {
      if (call.method !== 'SendMessage') return false;
      calls += 1;
      // The first task reports 20 × 60 KiB (1.2 MiB, more than NATS takes in one message), the
      // next a small one.
      const deltas =
        calls === 1
          ? Array.from({ length: 20 }, (_, i) => ({
              domain: 'bulk',
              path: `data.item${i}`,
              op: 'set',
              value: VALUE,
            }))
          : [{ domain: 'bulk', path: 'data.after', op: 'inc', value: 1 }];
      return rpcResult(res, call.id, {
        task: taskJson(`bulk-${calls}`, 'TASK_STATE_COMPLETED', [deltaPartJson(deltas)]),
      });
    });
    nats = await jetstream();
    ({ gateway: gw, parts: gwParts } = await assembleGateway(
      {
        store: `sqlite:${join(dir, 'gw.db')}`,
        agents: [{ name: 'bulk', url: agent.url }],
        policy: { unknownRadius: 'proceed' },
      },
      { bus: nats.bus, relay: { pollIntervalMs: 20 } },
    ));
  });
  afterAll(async () => {
    await gw.close();
    await nats.close();
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('publishes them in parts under the limit, applies every entry, and the next task goes through', async () => {
    const deltas = await collect(nats.bus, 'world.state.delta');
    const errors = await collect(nats.bus, 'system.error');
    await gw.call('bulk', 's', 'big');
    await gw.call('bulk', 's', 'small');
    await until(() => deltas.length === 4, 20_000, 'three parts and the small delta');
    const parts = deltas.filter((e) => (e.payload as { taskId: string }).taskId === 'bulk-1');
    expect(parts.map((e) => (e.payload as { part?: unknown }).part)).toEqual([
      { index: 0, count: 3 },
      { index: 1, count: 3 },
      { index: 2, count: 3 },
    ]);
    for (const part of parts) {
      expect(Buffer.byteLength(JSON.stringify(part.payload))).toBeLessThanOrEqual(512 * 1024);
    }
    expect(parts.flatMap((e) => (e.payload as { deltas: unknown[] }).deltas)).toHaveLength(20);
    // The materialiser applies what the relay delivers: wait for the last task's entry.
    const dataOf = async (): Promise<Record<string, unknown>> =>
      ((await gw.world.getDomain('bulk'))?.state as { data?: Record<string, unknown> } | undefined)
        ?.data ?? {};
    let data = await dataOf();
    const end = Date.now() + 10_000;
    while (data['after'] === undefined && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 25));
      data = await dataOf();
    }
    expect(Object.keys(data).filter((k) => k.startsWith('item'))).toHaveLength(20);
    expect(data['item19']).toBe(VALUE);
    expect(data['after']).toBe(1);
    const parked = await gwParts.store.db
      .selectFrom('fleetgate_outbox_parked')
      .select('id')
      .execute();
    expect(parked).toEqual([]);
    expect(errors).toEqual([]);
  });
});
