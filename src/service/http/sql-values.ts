/**
 * Values of the rows the read routes query with SQL, the same on both stores: PostgreSQL answers
 * bigints as strings and JSON columns as text where SQLite answers numbers, and a page of rows
 * ends with the cursor of its last.
 */
import type { AuditRecord } from '../../world/index.js';

/** A number column (bigints come back as strings from PostgreSQL), or null. */
export function num(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

/** A text column, or null. */
export function str(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A JSON column: its value, or the text itself when it is not JSON. */
export function parseJson(text: unknown): unknown {
  if (typeof text !== 'string') return text ?? null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * A page of search results: the cursor of its last item when the page is full (another may
 * follow), and the count when it was asked for (`count` is the `select count(*) as n` answer).
 */
export function page<T>(
  items: T[],
  limit: number,
  cursor: (last: T) => string,
  count: { rows: { n?: unknown }[] } | undefined,
): { items: T[]; next: string | null; total: number | null } {
  const last = items.at(-1);
  return {
    items,
    next: items.length === limit && last !== undefined ? cursor(last) : null,
    total: count === undefined ? null : (num(count.rows[0]?.n) ?? 0),
  };
}

/** One world-audit row as the API shows it (the world search and a call's story). */
export function auditEffect(r: Record<string, unknown>): Pick<
  AuditRecord,
  'seq' | 'domain' | 'path' | 'op' | 'value' | 'previous' | 'next' | 'status'
> & {
  reason: string | null;
  version: number | null;
} {
  return {
    seq: num(r.seq) ?? 0,
    domain: String(r.domain),
    path: String(r.path),
    op: String(r.op),
    value: parseJson(r.value),
    previous: parseJson(r.previous),
    next: parseJson(r.next),
    status: r.status === 'rejected' ? 'rejected' : 'applied',
    reason: str(r.reason),
    version: num(r.version),
  };
}
