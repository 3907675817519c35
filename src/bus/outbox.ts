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
import type { Kysely } from 'kysely';
import { parseTopic } from './topic-pattern.js';
import { readRow } from './outbox-parking.js';
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
      parseTopic(topic);
      const db = executor as unknown as Kysely<OutboxDatabase>;
      const id = options.id ?? randomUUID();
      const now = options.now ?? Date.now();
      const result = await db
        .insertInto('fleetgate_outbox')
        .values({
          id,
          topic,
          payload: JSON.stringify(payload),
          correlation_id: options.correlationId ?? id,
          time: new Date(now).toISOString(),
          created_at: now,
          sent_at: null,
          last_error: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      return { id, inserted: Number(result.numInsertedOrUpdatedRows ?? 0n) > 0 };
    },
  };
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

/** An event of the outbox's log, as {@link readOutboxLog} reads it. */
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
