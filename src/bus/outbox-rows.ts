/**
 * The outbox row as every writer binds it, on both of a store's paths (`writeOutboxEvents` through
 * kysely, `insertOutboxRows` on SQLite's direct access): the columns, the statement text and the
 * conflict rule (`ON CONFLICT (id) DO NOTHING`: the same id written twice keeps the first row).
 */
import { insertRowsSql } from '../store/index.js';
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

/**
 * The statement that inserts `rows` outbox rows (values from {@link outboxRowValues}, one after
 * the other), skipping an id already there. Rows get their `seq` in the order of the values.
 */
export function outboxInsertSql(kind: 'sqlite' | 'postgres', rows: number): string {
  return insertRowsSql(
    kind,
    'fleetgate_outbox',
    OUTBOX_COLUMNS,
    rows,
    'on conflict ("id") do nothing',
  );
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
