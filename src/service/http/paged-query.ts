/**
 * One page of a search, done by the store: the rows of a table that meet the route's conditions,
 * newest first, after an opaque `a:b` cursor (a number then a string), with the count of
 * everything that matches. The search routes (`routes-search.ts`) each build their conditions
 * and make items of the rows; the paged SQL is here once.
 */
import { sql, type RawBuilder } from 'kysely';
import { FleetgateError } from '../../protocol/index.js';
import type { ApiContext } from './context.js';
import { num, page as pageOf } from './sql-values.js';

/** The store the searches read. */
type Db = ApiContext['ports']['store']['db'];

function badCursor(cursor: string): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_HTTP_REQUEST_INVALID',
    `Invalid request query: cursor: not a cursor of this list (got ${JSON.stringify(cursor)})`,
    { details: { issues: [{ path: 'query.cursor', message: 'not a cursor of this list' }] } },
  );
}

/** Where the previous page ended: the sort key of its last row. */
interface Cursor {
  at: number;
  id: string;
}

/** `a:b` cursors: a number then a string. */
function readCursor(cursor: string | undefined): Cursor | undefined {
  if (cursor === undefined) return undefined;
  const at = cursor.indexOf(':');
  const n = Number(cursor.slice(0, at));
  if (at <= 0 || !Number.isFinite(n)) throw badCursor(cursor);
  return { at: n, id: cursor.slice(at + 1) };
}

function where(conditions: RawBuilder<unknown>[]): RawBuilder<unknown> {
  return conditions.length === 0 ? sql`1 = 1` : sql.join(conditions, sql` and `);
}

/** How a list runs newest first: its order, the rows after a cursor, and a row's cursor. */
export interface Order {
  by: RawBuilder<unknown>;
  after: (cursor: Cursor) => RawBuilder<unknown>;
  cursorOf: (row: Record<string, unknown>) => string;
}

/** By creation time, ties broken by id (dispatches, approval requests). */
export const BY_CREATED: Order = {
  by: sql`created_at desc, id desc`,
  after: (c) => sql`(created_at < ${c.at} or (created_at = ${c.at} and id < ${c.id}))`,
  cursorOf: (r) => `${num(r.created_at) ?? 0}:${String(r.id)}`,
};

/** By sequence number (the audit log). */
export const BY_SEQ: Order = {
  by: sql`seq desc`,
  after: (c) => sql`seq < ${c.at}`,
  cursorOf: (r) => `${num(r.seq) ?? 0}:`,
};

/**
 * One page of a search: the rows of `table` that meet every condition, after the query's cursor
 * in `order`, each made an item; with the count of all that match unless the query says
 * `count=false`. `table` and `columns` are the route's own text, never a request's.
 */
export async function queryPage<T>(
  db: Db,
  search: {
    table: string;
    columns: string;
    order: Order;
    conditions: RawBuilder<unknown>[];
    query: { limit: number; cursor?: string | undefined; count: 'true' | 'false' };
    item: (row: Record<string, unknown>) => T;
  },
): Promise<{ items: T[]; next: string | null; total: number | null }> {
  const { order, query } = search;
  const table = sql.raw(search.table);
  const filter = where(search.conditions);
  const cursor = readCursor(query.cursor);
  const after = cursor === undefined ? sql`1 = 1` : order.after(cursor);
  const [rows, total] = await Promise.all([
    sql<Record<string, unknown>>`select ${sql.raw(search.columns)} from ${table}
        where ${filter} and ${after} order by ${order.by} limit ${query.limit}`.execute(db),
    query.count === 'false'
      ? undefined
      : sql<{ n: unknown }>`select count(*) as n from ${table} where ${filter}`.execute(db),
  ]);
  const found = pageOf(rows.rows, query.limit, order.cursorOf, total);
  return { ...found, items: found.items.map((r) => search.item(r)) };
}
