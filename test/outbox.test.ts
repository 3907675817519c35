/**
 * The transactional outbox end to end: SQLite file and PostgreSQL, relayed to JetStream on the
 * real server. A relay killed between the publish and the "sent" mark is restarted, and every
 * event arrives exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventBus, PublishOptions, PublishResult } from '../src/bus/index.js';
import type { OpenTopics } from '../src/protocol/index.js';
import {
  createInMemoryEventBus,
  createOutboxRelay,
  createOutboxWriter,
  insertOutboxRows,
  writeOutboxEvents,
} from '../src/bus/index.js';
import { deterministicEventId } from '../src/protocol/index.js';
import type { OutboxDatabase } from '../src/bus/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import { createJetStreamEventBus } from '../src/nats.js';
import type { StoreMigration } from '../src/store/index.js';
import { Collector } from './support/event-bus-contract.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import type { GatewayStore } from '../src/service/index.js';
import { GATEWAY_MIGRATIONS, openGatewayStore } from '../src/service/index.js';

const natsUp = await requireNats();
const pgUp = await requirePostgres();

interface TestDatabase extends OutboxDatabase {
  account: { id: string; balance: number };
}

/** The state change the events describe, in a table of the test's own. */
const TEST_MIGRATIONS: Record<string, StoreMigration> = {
  ...GATEWAY_MIGRATIONS,
  '9000_test_account': {
    tables: { account: { columns: { id: 'text primary key', balance: 'bigint not null' } } },
  },
};

const outbox = createOutboxWriter<OpenTopics>();

/** A bus whose publish "crashes" the relay right after the server acknowledged call `n`. */
function crashingAfter(bus: EventBus<OpenTopics>, n: number): EventBus<OpenTopics> {
  let calls = 0;
  return {
    async publish(
      topic: string,
      payload: unknown,
      options?: PublishOptions,
    ): Promise<PublishResult> {
      calls += 1;
      const result = await bus.publish(topic, payload, options);
      if (calls === n) throw new Error('relay killed after the ack, before marking the row sent');
      return result;
    },
    subscribe: (...args) => bus.subscribe(...args),
    close: () => bus.close(),
  };
}

async function credit(db: Kysely<TestDatabase>, account: string, amount: number, i: number) {
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('account')
      .values({ id: account, balance: amount })
      .onConflict((oc) =>
        oc.column('id').doUpdateSet({ balance: sql`account.balance + ${amount}` }),
      )
      .execute();
    await outbox.write(
      trx,
      'ledger.credited',
      { account, amount, i },
      {
        id: deterministicEventId('ledger.credited', account, i),
        correlationId: `call-${i}`,
      },
    );
  });
}

type Backend = { label: string; enabled: boolean; open: () => Promise<GatewayStore> };

const tempDirs: string[] = [];
const backends: Backend[] = [
  {
    label: 'SQLite file',
    enabled: true,
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'fleetgate-outbox-'));
      tempDirs.push(dir);
      return openGatewayStore(`sqlite:${join(dir, 'fleetgate.db')}`, {
        migrations: TEST_MIGRATIONS,
      });
    },
  },
  {
    label: 'PostgreSQL',
    enabled: pgUp,
    open: () =>
      openGatewayStore(PG_URL, { migrations: TEST_MIGRATIONS, schema: uniqueName('fgob') }),
  },
];

for (const backend of backends) {
  describe.skipIf(!backend.enabled)(`outbox on ${backend.label}`, () => {
    let store: GatewayStore | undefined;
    const cleanups: (() => Promise<void>)[] = [];

    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
      await store?.close();
      store = undefined;
      for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    });

    async function openDb(): Promise<Kysely<TestDatabase>> {
      store = await backend.open();
      const opened = store;
      if (opened.kind === 'postgres') {
        // Drop the test schema afterwards, on the store's own pool, before it closes.
        const schemaRow = await sql<{ schema: string }>`select current_schema() as schema`.execute(
          opened.db,
        );
        const schema = schemaRow.rows[0]!.schema;
        cleanups.push(async () => {
          await sql`drop schema ${sql.id(schema)} cascade`.execute(opened.db);
        });
      }
      return opened.db as unknown as Kysely<TestDatabase>;
    }

    it('writes the event in the state change transaction: a rollback leaves neither', async () => {
      const db = await openDb();
      await credit(db, 'acme', 10, 0);
      await expect(
        db.transaction().execute(async (trx) => {
          await trx.insertInto('account').values({ id: 'ghost', balance: 1 }).execute();
          await outbox.write(trx, 'ledger.credited', { account: 'ghost' });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      const rows = await db.selectFrom('fleetgate_outbox').select(['topic', 'sent_at']).execute();
      expect(rows).toEqual([{ topic: 'ledger.credited', sent_at: null }]);
      expect(await db.selectFrom('account').select('id').execute()).toEqual([{ id: 'acme' }]);
      // Writing the same deterministic id again keeps one row.
      const again = await outbox.write(
        db,
        'ledger.credited',
        {},
        {
          id: deterministicEventId('ledger.credited', 'acme', 0),
        },
      );
      expect(again.inserted).toBe(false);
    });

    it('relays to the in-memory bus in order and marks rows sent', async () => {
      const db = await openDb();
      const bus = createInMemoryEventBus<OpenTopics>();
      const got = new Collector();
      await bus.subscribe('ledger.>', got.push, { name: 'ledger' });
      for (let i = 0; i < 5; i += 1) await credit(db, 'acme', i, i);
      const relay = createOutboxRelay({ db, bus, batchSize: 2 });
      expect(await relay.drain()).toBe(5);
      expect((await got.until(5)).map((e) => (e.payload as { i: number }).i)).toEqual([
        0, 1, 2, 3, 4,
      ]);
      expect(got.events[3]!.correlationId).toBe('call-3');
      const unsent = await db
        .selectFrom('fleetgate_outbox')
        .where('sent_at', 'is', null)
        .selectAll()
        .execute();
      expect(unsent).toEqual([]);
      expect(await relay.drain()).toBe(0);
    });

    it('relays through the direct statements of a SQLite store the same way', async () => {
      const db = await openDb();
      if (store?.sqlite === undefined) return; // PostgreSQL: no direct access
      const bus = createInMemoryEventBus<OpenTopics>();
      const got = new Collector();
      await bus.subscribe('ledger.>', got.push, { name: 'ledger', durable: true });
      for (let i = 0; i < 5; i += 1) await credit(db, 'acme', i, i);
      const relay = createOutboxRelay({ db, sqlite: store.sqlite, bus, batchSize: 2 });
      expect(await relay.drain()).toBe(5);
      expect(got.events.map((e) => (e.payload as { i: number }).i)).toEqual([0, 1, 2, 3, 4]);
      const rows = await db.selectFrom('fleetgate_outbox').select('sent_at').execute();
      expect(rows.filter((r) => r.sent_at === null)).toEqual([]);
      expect(await relay.drain()).toBe(0);
    });

    it('writes a batch past one statement in array order, the rows one event at a time would be', async () => {
      const db = await openDb();
      const now = 1_700_000_000_123;
      const read = (prefix: string) =>
        db
          .selectFrom('fleetgate_outbox')
          .select(['id', 'topic', 'payload', 'correlation_id', 'time', 'created_at', 'sent_at'])
          .where('id', 'like', `${prefix}%`)
          .orderBy('seq')
          .execute();
      const rowOf = (e: {
        id: string;
        topic: string;
        payload: unknown;
        correlationId?: string;
      }) => ({
        id: e.id,
        topic: e.topic,
        payload: JSON.stringify(e.payload),
        correlation_id: e.correlationId ?? e.id,
        time: new Date(now).toISOString(),
        created_at: now,
        sent_at: null,
      });
      await outbox.write(db, 'ledger.credited', { i: -1 }, { id: 'k-single', now });
      const batch = (prefix: string) =>
        Array.from({ length: 1201 }, (_, i) => ({
          // Ids that do not sort in array order: the position must come from the array.
          id: i === 700 ? 'k-single' : `${prefix}${(i * 7919) % 1201}`,
          topic: i % 2 === 0 ? 'ledger.credited' : 'ledger.closed',
          payload: { i },
          ...(i % 3 === 0 ? { correlationId: `call-${i}` } : {}),
        }));
      const kysely = batch('k-');
      // An id already there keeps its first row, wherever it is in the batch.
      expect(await writeOutboxEvents(db, store!.kind, kysely, now)).toBe(1200);
      expect(await writeOutboxEvents(db, store!.kind, kysely.slice(0, 3), now)).toBe(0);
      expect(await read('k-')).toEqual([
        rowOf({ id: 'k-single', topic: 'ledger.credited', payload: { i: -1 } }),
        ...kysely.filter((e) => e.id !== 'k-single').map(rowOf),
      ]);
      if (store?.sqlite === undefined) return; // PostgreSQL: no direct access
      // The direct statements write the same rows, in the same order.
      const direct = batch('d-').filter((e) => e.id !== 'k-single');
      expect(await store.sqlite.write((q) => insertOutboxRows(q, direct, now))).toBe(1200);
      expect(await read('d-')).toEqual(direct.map(rowOf));
    });

    it('writes nothing of a batch with an invalid topic', async () => {
      const db = await openDb();
      const events = [
        { id: 'ok', topic: 'ledger.credited', payload: {} },
        { id: 'bad', topic: 'ledger.*', payload: {} },
      ];
      const thrown = await writeOutboxEvents(db, store!.kind, events, 1).catch((e: unknown) => e);
      expect(isFleetgateError(thrown) && thrown.code).toBe('FLEETGATE_TOPIC_INVALID');
      await expect(db.selectFrom('fleetgate_outbox').selectAll().execute()).resolves.toEqual([]);
    });

    it('wakes the relay on notify after what the caller does next', async () => {
      const db = await openDb();
      const bus = createInMemoryEventBus<OpenTopics>();
      const got = new Collector();
      await bus.subscribe('ledger.>', got.push, { name: 'ledger' });
      const relay = createOutboxRelay({
        db,
        ...(store?.sqlite === undefined ? {} : { sqlite: store.sqlite }),
        bus,
        pollIntervalMs: 60_000,
      });
      relay.start();
      cleanups.push(() => relay.stop());
      await new Promise((resolve) => setTimeout(resolve, 20)); // the first round found nothing
      await credit(db, 'acme', 1, 0);
      relay.notify();
      for (let i = 0; i < 20; i += 1) await Promise.resolve();
      // The caller's own continuation ran without the relay's round in the middle of it.
      expect(got.events).toEqual([]);
      await got.until(1);
      expect(got.events.map((e) => e.id)).toEqual([
        deterministicEventId('ledger.credited', 'acme', 0),
      ]);
    });

    it.skipIf(!natsUp)(
      'a relay killed between publish and mark is restarted: every event arrives on JetStream once',
      async () => {
        const db = await openDb();
        const name = uniqueName('fgob');
        const stream = name.toUpperCase();
        cleanups.push(() => deleteNatsStream(stream));
        const open = () =>
          createJetStreamEventBus<OpenTopics>({ servers: NATS_URL, stream, subjectPrefix: name });
        const consumerBus = await open();
        cleanups.push(() => consumerBus.close());
        const got = new Collector();
        await consumerBus.subscribe('ledger.>', got.push, { name: 'ledger', durable: true });

        const n = 12;
        for (let i = 0; i < n; i += 1) await credit(db, `acct-${i % 3}`, 5, i);

        // First relay: publishes events 1..7, the 7th is acknowledged but the relay dies before
        // marking it sent.
        const firstBus = await open();
        const firstRelay = createOutboxRelay({
          db,
          bus: crashingAfter(firstBus, 7),
          batchSize: 100,
        });
        await expect(firstRelay.relayOnce()).rejects.toSatisfy((e) =>
          isFleetgateError(e, 'FLEETGATE_OUTBOX_RELAY_FAILED'),
        );
        await firstRelay.stop();
        await firstBus.close();
        const afterCrash = await db
          .selectFrom('fleetgate_outbox')
          .select(['id', 'attempts', 'last_error'])
          .where('sent_at', 'is', null)
          .orderBy('seq')
          .execute();
        expect(afterCrash).toHaveLength(n - 6);
        expect(afterCrash[0]).toMatchObject({ attempts: 1 });
        expect(afterCrash[0]!.last_error).toContain('relay killed');

        // Restarted relay (new process in real life: a new connection and relay).
        const secondBus = await open();
        cleanups.push(() => secondBus.close());
        const relay = createOutboxRelay({ db, bus: secondBus, pollIntervalMs: 20 });
        relay.start();
        cleanups.push(() => relay.stop());
        await got.until(n);
        await db.transaction().execute(async (trx) => {
          await outbox.write(trx, 'ledger.closed', {}, { id: 'sentinel' });
        });
        relay.notify();
        await got.until(n + 1);
        await relay.stop(); // lets the round in progress mark the sentinel sent

        const ids = got.events.map((e) => e.id);
        expect(new Set(ids).size).toBe(ids.length);
        const expected = Array.from({ length: n }, (_, i) =>
          deterministicEventId('ledger.credited', `acct-${i % 3}`, i),
        );
        expect(ids).toEqual([...expected, 'sentinel']);
        await expect(
          db.selectFrom('fleetgate_outbox').where('sent_at', 'is', null).selectAll().execute(),
        ).resolves.toEqual([]);
        const accounts = await db.selectFrom('account').selectAll().orderBy('id').execute();
        expect(accounts.map((a) => Number(a.balance))).toEqual([20, 20, 20]);
      },
    );
  });
}
