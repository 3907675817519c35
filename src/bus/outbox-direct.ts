/**
 * The outbox on a SQLite store's direct access (the store's `sqlite`): rows written with prepared
 * statements inside a caller's group-committed write, and the relay's reads and marks, without
 * the SQL builder. Same table, same rows (`outbox-rows.ts`) as `writeOutboxEvents` in `outbox.ts`.
 */
import type { SqliteAccess, SqliteStatements } from '../store/index.js';
import type { OutboxEventInput } from './outbox-rows.js';
import { checkOutboxTopics, outboxInsertSql, outboxRowValues } from './outbox-rows.js';

/** An outbox row as the relay reads it, and as a writer hands it over once it committed. */
export interface OutboxRow {
  seq: number;
  id: string;
  topic: string;
  payload: string;
  correlation_id: string;
  time: string;
}

/** Who is told of the rows written through a connection's statements once they committed. */
type OutboxTap = (rows: readonly OutboxRow[]) => void;

// By the statements object of a store's connection (the same for all its writes): at most a
// relay or two per connection, gone with it.
const taps = new WeakMap<object, Set<OutboxTap>>();

/**
 * Tells `tap` of every row {@link insertOutboxRows} writes through `sqlite`'s statements, once its
 * unit committed, in `seq` order (the relay's handover, `outbox-handover.ts`). Rows written another
 * way (through kysely) are not told. Resolves the function that stops it.
 */
export async function tapOutbox(sqlite: SqliteAccess, tap: OutboxTap): Promise<() => void> {
  const statements = await sqlite.read((sql) => sql);
  let set = taps.get(statements);
  if (set === undefined) taps.set(statements, (set = new Set()));
  set.add(tap);
  return () => void set.delete(tap);
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
  sql: SqliteStatements,
  events: readonly OutboxEventInput[],
  now: number,
): number {
  checkOutboxTopics(events);
  const time = new Date(now).toISOString();
  const text = outboxInsertSql('sqlite', 1);
  const tapped = taps.get(sql);
  const rows: OutboxRow[] = [];
  let inserted = 0;
  for (const event of events) {
    const params: unknown[] = [];
    outboxRowValues(event, time, now, params);
    const result = sql.run(text, params);
    inserted += result.changes;
    if (tapped !== undefined && result.changes === 1 && result.lastInsertRowid !== undefined) {
      rows.push(handedRow(Number(result.lastInsertRowid), params, time));
    }
  }
  if (tapped !== undefined && rows.length > 0 && sql.afterCommit !== undefined) {
    sql.afterCommit(() => {
      for (const tap of tapped) tap(rows);
    });
  }
  return inserted;
}

/** The row just inserted at `seq` from its values (`outboxRowValues`' order). */
function handedRow(seq: number, params: readonly unknown[], time: string): OutboxRow {
  return {
    seq,
    id: params[0] as string,
    topic: params[1] as string,
    payload: params[2] as string,
    correlation_id: params[3] as string,
    time,
  };
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
  sql: SqliteStatements,
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
