/**
 * The outbox row as every writer binds it, on both of a store's paths (`writeOutboxEvents` through
 * kysely, `insertOutboxRows` on SQLite's direct access): the columns, the statement text and the
 * conflict rule (`ON CONFLICT (id) DO NOTHING`: the same id written twice keeps the first row).
 */
import { parseTopic } from './topic-pattern.js';

/** An event to write into the outbox (what the event collector or the materialiser kept). */
export interface OutboxEventInput {
  topic: string;
  payload: unknown;
  /** Event id; pass a deterministic one where the same event can be written twice. */
  id: string;
  /** Defaults to the id. */
  correlationId?: string | undefined;
}

/** Rows per statement: 8 parameters each, far below SQLite's and PostgreSQL's limits. */
export const OUTBOX_CHUNK = 500;

/** Columns written, in parameter order; `seq` and `attempts` take their defaults. */
const OUTBOX_COLUMNS = [
  'id',
  'topic',
  'payload',
  'correlation_id',
  'time',
  'created_at',
  'sent_at',
  'last_error',
] as const;

// A memo of a pure function (statement text by dialect and row count, a few entries at most).
const insertSqlCache = new Map<string, string>();

/**
 * The statement that inserts `rows` outbox rows (values from {@link outboxRowValues}, one after
 * the other), skipping an id already there. Rows get their `seq` in the order of the values.
 */
export function outboxInsertSql(kind: 'sqlite' | 'postgres', rows: number): string {
  const key = `${kind}:${rows}`;
  let text = insertSqlCache.get(key);
  if (text === undefined) {
    const width = OUTBOX_COLUMNS.length;
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) {
      const marks: string[] = [];
      for (let c = 1; c <= width; c++) marks.push(kind === 'postgres' ? `$${r * width + c}` : '?');
      tuples.push(`(${marks.join(', ')})`);
    }
    text =
      `insert into "fleetgate_outbox" (${OUTBOX_COLUMNS.map((c) => `"${c}"`).join(', ')}) ` +
      `values ${tuples.join(', ')} on conflict ("id") do nothing`;
    insertSqlCache.set(key, text);
  }
  return text;
}

/**
 * Appends `event`'s row to `params`, in the column order of {@link outboxInsertSql}: unsent,
 * `created_at = now`, the event time `time` (`now` as RFC 3339).
 */
export function outboxRowValues(
  event: OutboxEventInput,
  time: string,
  now: number,
  params: unknown[],
): void {
  params.push(
    event.id,
    event.topic,
    JSON.stringify(event.payload),
    event.correlationId ?? event.id,
    time,
    now,
    null,
    null,
  );
}

/**
 * Checks every event's topic before any row is written.
 *
 * @throws FleetgateError `FLEETGATE_TOPIC_INVALID` for an invalid topic.
 */
export function checkOutboxTopics(events: readonly OutboxEventInput[]): void {
  let checked: string | undefined;
  for (const event of events) {
    // A batch is mostly one or two topics in runs: each run is parsed once.
    if (event.topic === checked) continue;
    parseTopic(event.topic);
    checked = event.topic;
  }
}
