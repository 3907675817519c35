/**
 * The outbox on a SQLite store's direct access (the store's `sqlite`): rows written with prepared
 * statements inside a caller's group-committed write, and the relay's reads and marks, without
 * the SQL builder. Same table, same rows (`outbox-rows.ts`) as `writeOutboxEvents` in `outbox.ts`.
 */
import type { OutboxEventInput } from './outbox-rows.js';
import { checkOutboxTopics, outboxInsertSql, outboxRowValues } from './outbox-rows.js';

/** Statements on the store's SQLite connection, run synchronously (`?` placeholders). */
export interface SqliteStatementsPort {
  run(sql: string, params?: readonly unknown[]): { changes: number };
  all<R>(sql: string, params?: readonly unknown[]): R[];
  get<R>(sql: string, params?: readonly unknown[]): R | undefined;
}

/**
 * A SQLite store's direct access as the outbox uses it (the store's `sqlite` satisfies it): writes
 * grouped into shared transactions, and reads outside them. Declared here, structurally, so the
 * bus depends on no other folder.
 */
export interface OutboxSqlite {
  write<T>(
    work: (sql: SqliteStatementsPort) => T | Promise<T>,
    options?: { group?: 'turn' | 'loop' },
  ): Promise<T>;
  read<T>(work: (sql: SqliteStatementsPort) => T): Promise<T>;
}

/**
 * Writes `events` into the outbox through `sql` (inside the caller's transaction), in order (their
 * `seq` follows the array), with `created_at = now` and the event time `now` as RFC 3339; an id
 * already in the outbox keeps its first row. Returns how many rows were inserted.
 *
 * One prepared row statement bound per event, not a multi-row one as through kysely: SQLite
 * parses it once, while a statement per batch size would be prepared again for every new size.
 *
 * @throws FleetgateError `FLEETGATE_TOPIC_INVALID` for an invalid topic (nothing is written).
 */
export function insertOutboxRows(
  sql: SqliteStatementsPort,
  events: readonly OutboxEventInput[],
  now: number,
): number {
  checkOutboxTopics(events);
  const time = new Date(now).toISOString();
  const text = outboxInsertSql('sqlite', 1);
  let inserted = 0;
  for (const event of events) {
    const params: unknown[] = [];
    outboxRowValues(event, time, now, params);
    inserted += sql.run(text, params).changes;
  }
  return inserted;
}

/** The relay's read of one round: unsent rows in `seq` order. */
export const SELECT_UNSENT =
  'select "seq", "id", "topic", "payload", "correlation_id", "time" from "fleetgate_outbox" ' +
  'where "sent_at" is null order by "seq" limit ?';

/** Rows marked per statement: one statement text, whatever the round's size. */
const MARK_WIDTH = 16;
const MARK_SENT =
  'update "fleetgate_outbox" set "sent_at" = ?, "last_error" = null where "sent_at" is null and "seq" in (' +
  Array.from({ length: MARK_WIDTH }, () => '?').join(', ') +
  ')';

/**
 * Marks the rows at positions `seqs` (the table's key: no lookup through the index of random ids)
 * sent at `at`, in the caller's transaction: one statement per {@link MARK_WIDTH} rows, the last
 * chunk padded by repeating a position (the same row, marked once).
 */
export function markOutboxRowsSent(
  sql: SqliteStatementsPort,
  seqs: readonly number[],
  at: number,
): void {
  for (let start = 0; start < seqs.length; start += MARK_WIDTH) {
    const params: unknown[] = [at];
    for (let i = 0; i < MARK_WIDTH; i += 1) {
      params.push(seqs[Math.min(start + i, seqs.length - 1)]);
    }
    sql.run(MARK_SENT, params);
  }
}
