/**
 * The transactional outbox: an event is written in the same database transaction as the state
 * change it describes, then a relay publishes it and marks it sent after the bus acknowledged it.
 *
 * Exactly once, end to end: a crash after the commit but before the publish leaves the row unsent
 * and the next relay run publishes it; a crash after the publish but before the mark re-sends it
 * with the same stored id, which the bus drops as a duplicate (JetStream `Nats-Msg-Id`, in-memory
 * duplicate window) and reports `duplicate: true`, and the row is then marked sent. Several relays
 * (one per replica) may run at once for the same reason.
 *
 * The table (`fleetgate_outbox`) is created by the store's `0001_outbox` migration.
 */
import { randomUUID } from 'node:crypto';
import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import { insertOutboxRows } from './outbox-direct.js';
import { readRow } from './outbox-parking.js';
import type { OutboxEventInput } from './outbox-rows.js';
import {
  OUTBOX_CHUNK,
  checkOutboxTopics,
  outboxInsertSql,
  outboxRowValues,
} from './outbox-rows.js';
import type { OutboxDatabase } from './outbox-tables.js';

export type { OutboxDatabase, OutboxParkedTable, OutboxTable } from './outbox-tables.js';
import type { EventEnvelope, FleetgateTopics, TopicMap, TopicOf } from '../protocol/index.js';

/**
 * A kysely handle the outbox can write through: a `Kysely<DB>` or an open `Transaction<DB>` for
 * any schema `DB` that includes the outbox table. (Structural on purpose: kysely's types are
 * invariant in `DB`, so `Kysely<AppDatabase>` is not a `Kysely<OutboxDatabase>`.)
 */
export interface OutboxExecutor {
  insertInto(table: 'fleetgate_outbox'): unknown;
}

/**
 * What {@link writeOutboxEvents} runs its statements through: a `Kysely<DB>` or an open
 * `Transaction<DB>` of any schema (the statements name the outbox table; the type need not).
 */
export interface OutboxQueryExecutor {
  executeQuery(query: CompiledQuery): Promise<QueryResult<unknown>>;
}

/** A kysely database the relay can read and mark outbox rows through. */
export interface OutboxRelayDatabase extends OutboxExecutor {
  selectFrom(table: 'fleetgate_outbox'): unknown;
  updateTable(table: 'fleetgate_outbox'): unknown;
}

/** Options of {@link writeOutboxEvent}. */
export interface OutboxWriteOptions {
  /** Event id; pass a deterministic one where the same event can be written twice. */
  id?: string;
  correlationId?: string;
  /** Epoch milliseconds used for `created_at` and the event time (default now). */
  now?: number;
}

/** What {@link writeOutboxEvent} did. */
export interface OutboxWriteResult {
  id: string;
  /** False when a row with this id already existed (the same event written twice). */
  inserted: boolean;
}

/** Writes events of topic map `M` into the outbox; see {@link writeOutboxEvent}. */
export interface OutboxWriter<M extends TopicMap> {
  write<T extends TopicOf<M>>(
    executor: OutboxExecutor,
    topic: T,
    payload: M[T],
    options?: OutboxWriteOptions,
  ): Promise<OutboxWriteResult>;
}

/**
 * An outbox writer for a topic map other than {@link FleetgateTopics} (tests, extensions).
 *
 * @example
 * ```ts
 * const outbox = createOutboxWriter<OpenTopics>();
 * await db.transaction().execute((trx) => outbox.write(trx, 'ledger.credited', { amount }));
 * ```
 */
export function createOutboxWriter<M extends TopicMap = FleetgateTopics>(): OutboxWriter<M> {
  return {
    async write(executor, topic, payload, options = {}) {
      const db = executor as unknown as Kysely<OutboxDatabase>;
      const id = options.id ?? randomUUID();
      const event: OutboxEventInput = { id, topic, payload, correlationId: options.correlationId };
      // A batch of one, through the same statements as the materialiser's batches.
      const inserted = await writeOutboxEvents(
        db,
        dialectOf(db),
        [event],
        options.now ?? Date.now(),
      );
      return { id, inserted: inserted > 0 };
    },
  };
}

/** The engine of each dialect adapter seen (a store's handle and its transactions share one). */
const engines = new WeakMap<object, 'sqlite' | 'postgres'>();

/**
 * The engine behind `db`, read once per dialect from the placeholder its compiler writes (`$1` on
 * PostgreSQL, `?` on SQLite): the single-event writers are called with a kysely handle alone.
 */
function dialectOf(db: Kysely<OutboxDatabase>): 'sqlite' | 'postgres' {
  const adapter = db.getExecutor().adapter;
  let engine = engines.get(adapter);
  if (engine === undefined) {
    const probe = db.deleteFrom('fleetgate_outbox').where('seq', '=', 0).compile();
    engine = probe.sql.endsWith('$1') ? 'postgres' : 'sqlite';
    engines.set(adapter, engine);
  }
  return engine;
}

// The SQL builder loads with the first write through a store, once (an `import()` per write costs
// a resolution each time): the in-process bus never needs it.
let compiledQuery: typeof CompiledQuery | undefined;

/**
 * Writes `events` into the outbox through `executor` (call it with the transaction that makes the
 * state change), in order, so their `seq` (the relay's publish order) follows the array, in as few
 * statements as the bound-parameter limits allow: one multi-row statement per 500 rows, as one row
 * per statement cost a fifth of a batched SQLite unit of work and a round trip per event on
 * PostgreSQL. Every row gets `created_at = now` and the event time `now` as RFC 3339; an id
 * already in the outbox keeps its first row. Resolves how many rows were inserted.
 * {@link writeOutboxEvent} is this with one event; `insertOutboxRows` writes the same rows on a
 * SQLite store's direct access.
 *
 * @throws FleetgateError `FLEETGATE_TOPIC_INVALID` for an invalid topic (nothing is written).
 *
 * @example
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   // …the state change…
 *   await writeOutboxEvents(trx, store.kind, events, Date.now());
 * });
 * relay.notify();
 * ```
 */
export async function writeOutboxEvents(
  executor: OutboxQueryExecutor,
  kind: 'sqlite' | 'postgres',
  events: readonly OutboxEventInput[],
  now: number,
): Promise<number> {
  if (events.length === 0) return 0;
  checkOutboxTopics(events);
  const compiled = compiledQuery ?? (compiledQuery = (await import('kysely')).CompiledQuery);
  const time = new Date(now).toISOString();
  let inserted = 0;
  for (let start = 0; start < events.length; start += OUTBOX_CHUNK) {
    const end = Math.min(events.length, start + OUTBOX_CHUNK);
    const params: unknown[] = [];
    for (let i = start; i < end; i++) outboxRowValues(events[i]!, time, now, params);
    const result = await executor.executeQuery(
      compiled.raw(outboxInsertSql(kind, end - start), params),
    );
    inserted += Number(result.numAffectedRows ?? 0n);
  }
  return inserted;
}

const fleetgateWriter = createOutboxWriter<FleetgateTopics>();

/**
 * Writes one event into the outbox through `executor`: call it with the transaction that makes
 * the state change, so both commit or neither does. Writing the same id twice keeps the first row.
 *
 * @example
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto('task').values(row).execute();
 *   await writeOutboxEvent(trx, 'world.state.delta', payload, {
 *     id: deterministicEventId('world.state.delta', agent, taskId),
 *   });
 * });
 * relay.notify();
 * ```
 */
export function writeOutboxEvent<T extends TopicOf<FleetgateTopics>>(
  executor: OutboxExecutor,
  topic: T,
  payload: FleetgateTopics[T],
  options: OutboxWriteOptions = {},
): Promise<OutboxWriteResult> {
  return fleetgateWriter.write(executor, topic, payload, options);
}

/**
 * The outbox's writers of many events on both of a store's paths, as one value: what the
 * composition root hands a writer of batches (the world's SQL store, as its `outbox`).
 *
 * @example
 * ```ts
 * createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS });
 * ```
 */
export const OUTBOX_WRITERS = Object.freeze({
  writeEvents: writeOutboxEvents,
  insertRows: insertOutboxRows,
});

/**
 * Retention: deletes outbox rows sent before `sentBefore` (epoch ms), at most `batchSize` per
 * statement (default 1,000), and resolves how many. Unsent rows are never deleted, whatever their
 * age. Keep sent rows at least as long as the bus's duplicate window.
 *
 * @example
 * ```ts
 * await pruneOutbox(store.db, Date.now() - 7 * 86_400_000);
 * ```
 */
export async function pruneOutbox(
  database: OutboxRelayDatabase,
  sentBefore: number,
  batchSize = 1_000,
): Promise<number> {
  const db = database as unknown as Kysely<OutboxDatabase>;
  let total = 0;
  for (;;) {
    // In batches: one huge delete would hold its locks (and grow the log) for long.
    const result = await db
      .deleteFrom('fleetgate_outbox')
      .where('seq', 'in', (eb) =>
        eb
          .selectFrom('fleetgate_outbox')
          .select('seq')
          .where('sent_at', 'is not', null)
          .where('sent_at', '<', sentBefore)
          .limit(batchSize),
      )
      .executeTakeFirst();
    const n = Number(result.numDeletedRows);
    total += n;
    if (n < batchSize) return total;
  }
}

/** An event of the outbox's log, as {@link OutboxLog.read} reads it. */
export interface LoggedEvent {
  /** Its position in the outbox (`seq`). */
  seq: number;
  event: EventEnvelope;
}

/** The outbox read as a log of the events it relayed, by position (`seq`). */
export interface OutboxLog {
  /**
   * The events at positions after `after` up to `upTo`, oldest first, at most `limit`, as the bus
   * delivered them (id, topic, original time, correlation id, payload). A row that was parked, or
   * pruned after `retention.outbox`, is not there.
   */
  read(range: { after: number; upTo: number; limit: number }): Promise<LoggedEvent[]>;
  /** The newest position the relay has sent (0 for none). */
  head(): Promise<number>;
}

/**
 * The outbox as a log: rows are kept after they are sent, for `retention.outbox`, so a reader
 * that lost its place (a live-event client on a bus that keeps no log) reads on from a position.
 *
 * @example
 * ```ts
 * const next = await createOutboxLog(store.db).read({ after: 1200, upTo: 1500, limit: 100 });
 * ```
 */
export function createOutboxLog(database: OutboxRelayDatabase): OutboxLog {
  const db = database as unknown as Kysely<OutboxDatabase>;
  return {
    async read(range) {
      const rows = await db
        .selectFrom('fleetgate_outbox')
        .select(['seq', 'id', 'topic', 'payload', 'correlation_id', 'time'])
        .where('seq', '>', range.after)
        .where('seq', '<=', range.upTo)
        .orderBy('seq')
        .limit(range.limit)
        .execute();
      const out: LoggedEvent[] = [];
      for (const row of rows) {
        // Read as the relay reads it; a row it would park was never published.
        const read = readRow(row, undefined);
        if ('parked' in read) continue;
        const payload = read.payload;
        out.push({
          seq: Number(row.seq),
          event: {
            id: row.id,
            topic: row.topic,
            time: row.time,
            correlationId: row.correlation_id,
            payload,
          },
        });
      }
      return out;
    },
    async head() {
      const row = await db
        .selectFrom('fleetgate_outbox')
        .select((eb) => eb.fn.max('seq').as('head'))
        .where('sent_at', 'is not', null)
        .executeTakeFirst();
      return Number(row?.head ?? 0);
    },
  };
}
