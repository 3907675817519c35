/**
 * The outbox relay's queries, one contract for every implementation (`bus/outbox-relay-rows.ts`):
 * SQLite's prepared statements (with the rows the writers hand over), kysely on SQLite, and kysely
 * on PostgreSQL with and without locked rows. Driven through the relay as the gateway runs it: rows
 * go out in order and are marked sent once, a row no bus will take is parked with its reason and
 * the rows around it go on, and a failed publish is counted on its row and stops the round there
 * until the next one.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EventBus, PublishOptions, PublishResult } from '../src/bus/index.js';
import {
  createInMemoryEventBus,
  createOutboxRelay,
  insertOutboxRows,
  writeOutboxEvents,
} from '../src/bus/index.js';
import { FleetgateError, isFleetgateError, type OpenTopics } from '../src/protocol/index.js';
import { Collector } from './support/event-bus-contract.js';
import { requirePostgres } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();

const variants = storeVariants(pgUp).flatMap((variant) =>
  variant.kind === 'postgres'
    ? [
        { ...variant, lockRows: true },
        { ...variant, lockRows: false },
      ]
    : [{ ...variant, lockRows: false }],
);

/** A bus that refuses what `refuse` says, as the real ones do, and passes the rest on. */
function refusingBus(
  bus: EventBus<OpenTopics>,
  refuse: (id: string) => Error | undefined,
): EventBus<OpenTopics> {
  return {
    async publish(
      topic: string,
      payload: unknown,
      options?: PublishOptions,
    ): Promise<PublishResult> {
      const error = refuse(options?.id ?? '');
      if (error !== undefined) throw error;
      return bus.publish(topic, payload, options);
    },
    subscribe: (...args) => bus.subscribe(...args),
    close: () => bus.close(),
  };
}

describe.each(variants)(
  'outbox relay rows ($kind, direct: $direct, lockRows: $lockRows)',
  (variant) => {
    const { direct, skip, lockRows } = variant;
    let opened: TestStore;
    const prefix = `${variant.kind}-${direct}-${lockRows}`;
    let n = 0;

    beforeAll(async () => {
      if (skip) return;
      opened = await openTestStore(variant, 'fgrelayrows', 4);
    });

    afterAll(async () => {
      if (!skip) await opened.remove();
    });

    beforeEach(async () => {
      // Each case starts from an outbox with nothing to send.
      if (!skip) {
        await sql`update fleetgate_outbox set sent_at = 0 where sent_at is null`.execute(
          opened.store.db,
        );
      }
    });

    /** Writes events as the gateway does on this store: direct statements, else kysely. */
    async function write(topic: string, payloads: unknown[]): Promise<string[]> {
      const events = payloads.map((payload) => ({ topic, payload, id: `${prefix}-${(n += 1)}` }));
      const { store } = opened;
      if (direct) await store.sqlite!.write((q) => insertOutboxRows(q, events, Date.now()));
      else {
        await store.db
          .transaction()
          .execute((trx) => writeOutboxEvents(trx, variant.kind, events, Date.now()));
      }
      return events.map((e) => e.id);
    }

    function relayOn(bus: EventBus<OpenTopics>, errors: unknown[] = []) {
      const { store } = opened;
      return createOutboxRelay({
        db: store.db,
        ...(direct ? { sqlite: store.sqlite } : {}),
        lockRows,
        bus,
        batchSize: 3,
        onError: (error) => errors.push(error),
      });
    }

    async function unsent(
      ids: string[],
    ): Promise<{ id: string; attempts: number; last_error: string | null }[]> {
      const rows = await sql<{ id: string; attempts: number; last_error: string | null }>`
        select id, attempts, last_error from fleetgate_outbox
        where sent_at is null and id in (${sql.join(ids)}) order by seq
      `.execute(opened.store.db);
      return rows.rows.map((r) => ({ ...r, attempts: Number(r.attempts) }));
    }

    it.skipIf(skip)('publishes rows in order across rounds and marks each sent once', async () => {
      const bus = createInMemoryEventBus<OpenTopics>();
      const got = new Collector();
      await bus.subscribe('test.ordered', got.push, { name: `ordered-${prefix}`, durable: true });
      const relay = relayOn(bus);
      relay.start();
      let ids: string[] = [];
      try {
        ids = [
          ...(await write('test.ordered', [{ i: 0 }, { i: 1 }])),
          ...(await write('test.ordered', [{ i: 2 }, { i: 3 }, { i: 4 }])),
          ...(await write('test.ordered', [{ i: 5 }])),
        ];
        relay.notify();
        await got.until(6);
      } finally {
        await relay.stop();
      }
      expect(got.events.map((e) => e.id)).toEqual(ids);
      expect(await unsent(ids)).toEqual([]);
      expect(await relay.drain()).toBe(0);
      expect(got.events).toHaveLength(6);
    });

    it.skipIf(skip)(
      'parks the rows no bus will take, with why, and publishes the rows around them',
      async () => {
        const ids = await write('test.poison', [{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }]);
        const poison = ids[1];
        const inner = createInMemoryEventBus<OpenTopics>();
        const got = new Collector();
        await inner.subscribe('test.poison', got.push, { name: `poison-${prefix}`, durable: true });
        const bus = refusingBus(inner, (id) =>
          id === poison
            ? new FleetgateError(
                'FLEETGATE_EVENT_TOO_LARGE',
                'The payload is larger than the bus takes.',
              )
            : undefined,
        );
        await sql`update fleetgate_outbox set payload = ${'{"broken":'} where id = ${ids[2]!}`.execute(
          opened.store.db,
        );
        const errors: unknown[] = [];
        const relay = relayOn(bus, errors);
        // The first round publishes one row and parks two; the drain goes on to the row after.
        expect(await relay.drain()).toBe(2);
        expect(got.events.map((e) => e.id)).toEqual([ids[0], ids[3]]);
        const parked = await sql<{ id: string; seq: number; topic: string; reason: string }>`
        select id, seq, topic, reason from fleetgate_outbox_parked where id in (${sql.join(ids)}) order by seq
      `.execute(opened.store.db);
        expect(parked.rows.map((r) => [r.id, r.topic])).toEqual([
          [ids[1], 'test.poison'],
          [ids[2], 'test.poison'],
        ]);
        expect(parked.rows[0]!.reason).toMatch(/larger than the bus takes/);
        expect(parked.rows[1]!.reason).toMatch(/JSON/);
        // Out of the outbox for good: nothing left unsent, nothing parked twice.
        expect(await unsent(ids)).toEqual([]);
        const left = await sql<{ n: number }>`
        select count(*) as n from fleetgate_outbox where id in (${sql.join([ids[1]!, ids[2]!])})
      `.execute(opened.store.db);
        expect(Number(left.rows[0]!.n)).toBe(0);
        expect(errors.map((e) => (isFleetgateError(e) ? e.code : String(e)))).toEqual([
          'FLEETGATE_OUTBOX_EVENT_PARKED',
          'FLEETGATE_OUTBOX_EVENT_PARKED',
        ]);
        expect(await relay.drain()).toBe(0);
      },
    );

    it.skipIf(skip)(
      'counts a failed publish on its row, stops the round there, and goes on once the bus takes it',
      async () => {
        let down = true;
        const ids = await write('test.outage', [{ i: 0 }, { i: 1 }, { i: 2 }]);
        const failing = ids[1];
        const inner = createInMemoryEventBus<OpenTopics>();
        const got = new Collector();
        await inner.subscribe('test.outage', got.push, { name: `outage-${prefix}`, durable: true });
        const bus = refusingBus(inner, (id) =>
          down && id === failing ? new Error('the bus is down') : undefined,
        );
        const relay = relayOn(bus);
        const first = await relay.relayOnce().catch((error: unknown) => error);
        expect(isFleetgateError(first, 'FLEETGATE_OUTBOX_RELAY_FAILED')).toBe(true);
        expect(got.events.map((e) => e.id)).toEqual([ids[0]]);
        // With locked rows the round's transaction rolls back with its marks: the row published
        // before the failure stays unsent and goes out again (its id makes the copy a no-op).
        const before = lockRows ? [{ id: ids[0], attempts: 0, last_error: null }] : [];
        expect(await unsent(ids)).toEqual([
          ...before,
          { id: ids[1], attempts: 1, last_error: 'the bus is down' },
          { id: ids[2], attempts: 0, last_error: null },
        ]);
        await relay.relayOnce().catch(() => undefined);
        expect((await unsent(ids))[before.length]!.attempts).toBe(2);
        down = false;
        expect(await relay.drain()).toBe(2 + before.length);
        expect([...new Set(got.events.map((e) => e.id))]).toEqual(ids);
        expect(await unsent(ids)).toEqual([]);
      },
    );
  },
);
