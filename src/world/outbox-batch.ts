/**
 * Many outbox rows in one statement: the materialiser's emissions of a unit of work, written into
 * the `fleetgate_outbox` table of `src/bus/outbox.ts` with the row shape and conflict rule of
 * `writeOutboxEvent` (`ON CONFLICT (id) DO NOTHING`: the same id written twice keeps the first
 * row). One row per statement cost a fifth of a batched SQLite unit of work and one round trip per
 * emission on PostgreSQL.
 */
import { CompiledQuery } from 'kysely';
import type { WorldSqlStatements } from './sqlite-port.js';
import type { WorldEmission } from './types.js';

/**
 * What the rows are written through: a `Kysely<DB>` or an open `Transaction<DB>` of any schema
 * that includes the outbox table (structural, as kysely's types are invariant in `DB`).
 */
export interface OutboxBatchExecutor {
  executeQuery(query: CompiledQuery): Promise<unknown>;
}

/**
 * The columns of the bus's `fleetgate_outbox` table this module writes: the world's own view of
 * the outbox (a port), so `world` does not import `bus`. The bus's table has these and more.
 */
export interface WorldOutboxRow {
  id: string;
  topic: string;
  payload: string;
  correlation_id: string;
  time: string;
  created_at: number;
  sent_at: number | null;
  last_error: string | null;
}

/** A database that has the outbox table. */
export interface WorldOutboxDatabase {
  fleetgate_outbox: WorldOutboxRow;
}

/** Rows per statement: 9 parameters each, far below SQLite's and PostgreSQL's limits. */
const OUTBOX_CHUNK = 500;

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
const outboxSqlCache = new Map<string, string>();

function outboxInsertSql(kind: 'sqlite' | 'postgres', rows: number): string {
  const key = `${kind}:${rows}`;
  let text = outboxSqlCache.get(key);
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
    outboxSqlCache.set(key, text);
  }
  return text;
}

/**
 * Writes `events` into the outbox through `trx`, in order (so their `seq`, the relay's publish
 * order, follows the array), in as few statements as the bound-parameter limits allow. Every row
 * gets `created_at = now` and `time` = `now` as RFC 3339, like `writeOutboxEvent` with
 * `{ now }`; an event whose id is already in the outbox is skipped.
 *
 * @example
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   // …the state change…
 *   await writeOutboxEvents(trx, 'sqlite', emissions, Date.now());
 * });
 * relay.notify();
 * ```
 */
export async function writeOutboxEvents(
  trx: OutboxBatchExecutor,
  kind: 'sqlite' | 'postgres',
  events: readonly WorldEmission[],
  now: number,
): Promise<void> {
  for (const chunk of outboxStatements(kind, events, now)) {
    await trx.executeQuery(CompiledQuery.raw(chunk.text, chunk.params));
  }
}

/**
 * {@link writeOutboxEvents} through a SQLite store's direct statements: one prepared row statement
 * bound per event (SQLite parses it once; a statement per batch size would be prepared again for
 * every new size).
 */
export function writeOutboxEventsDirect(
  sql: WorldSqlStatements,
  events: readonly WorldEmission[],
  now: number,
): void {
  if (events.length === 0) return;
  const time = new Date(now).toISOString();
  const text = outboxInsertSql('sqlite', 1);
  for (const event of events) sql.run(text, rowParams(event, time, now));
}

/** One outbox row's values, in the column order of {@link outboxInsertSql}. */
function rowParams(event: WorldEmission, time: string, now: number): unknown[] {
  return [
    event.id,
    event.topic,
    JSON.stringify(event.payload),
    event.correlationId,
    time,
    now,
    null,
    null,
  ];
}

/** The statements that write `events`: one per chunk of rows. */
function outboxStatements(
  kind: 'sqlite' | 'postgres',
  events: readonly WorldEmission[],
  now: number,
): { text: string; params: unknown[] }[] {
  if (events.length === 0) return [];
  const time = new Date(now).toISOString();
  const out: { text: string; params: unknown[] }[] = [];
  for (let start = 0; start < events.length; start += OUTBOX_CHUNK) {
    const end = Math.min(events.length, start + OUTBOX_CHUNK);
    const params: unknown[] = [];
    for (let i = start; i < end; i++) {
      params.push(...rowParams(events[i]!, time, now));
    }
    out.push({ text: outboxInsertSql(kind, end - start), params });
  }
  return out;
}
