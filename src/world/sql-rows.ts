/**
 * Row mapping of the SQL world store: domain and audit rows to and from the model, and the audit
 * insert statement built once per chunk size. No I/O.
 */
import type { Selectable } from 'kysely';
import type { AuditSummary, JsonObject } from './json.js';
import { AUDIT_MAX_ITEMS, auditView } from './json.js';
import type { WorldAuditTable, WorldDomainTable } from './store-tables.js';
import type { AuditRecord, NewAuditRecord, StoredDomain } from './types.js';

/** Rows per multi-row insert: well below SQLite's and PostgreSQL's bound-parameter limits. */
export const INSERT_CHUNK = 200;

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function encode(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

export function decode(text: string | null): unknown {
  return text === null ? undefined : (JSON.parse(text) as unknown);
}

export function toDomain(row: WorldDomainTable): StoredDomain {
  return {
    name: row.name,
    version: Number(row.version),
    state: JSON.parse(row.state) as JsonObject,
    updatedAt: Number(row.updated_at),
    base: JSON.parse(row.base_state) as JsonObject,
    baseVersion: Number(row.base_version),
  };
}

export function toAuditRecord(row: Selectable<WorldAuditTable>): AuditRecord {
  const record: AuditRecord = {
    seq: Number(row.seq),
    domain: row.domain,
    path: row.path,
    op: row.op,
    value: decode(row.value),
    previous: decode(row.previous),
    next: decode(row.next),
    status: row.status === 'applied' ? 'applied' : 'rejected',
    agent: row.agent,
    skill: row.skill,
    taskId: row.task_id,
    eventId: row.event_id,
    index: Number(row.entry_index),
    time: row.time,
    recordedAt: Number(row.recorded_at),
  };
  if (row.reason !== null) record.reason = row.reason;
  if (row.version !== null) record.version = Number(row.version);
  return record;
}

/** JSON text of an audit `previous` / `next`, summarised when larger than `maxBytes`. */
export function encodeView(value: unknown, maxBytes: number): string | null {
  if (value === undefined) return null;
  if (Array.isArray(value) && value.length > AUDIT_MAX_ITEMS) {
    return JSON.stringify({ $summary: 'array', size: value.length } satisfies AuditSummary);
  }
  const text = JSON.stringify(value);
  return text.length <= maxBytes ? text : JSON.stringify(auditView(value, maxBytes));
}

/** Columns of an audit insert, in parameter order. */
const AUDIT_COLUMNS = [
  'domain',
  'path',
  'op',
  'value',
  'previous',
  'next',
  'status',
  'reason',
  'version',
  'agent',
  'skill',
  'task_id',
  'event_id',
  'entry_index',
  'time',
  'recorded_at',
] as const satisfies readonly (keyof Omit<WorldAuditTable, 'seq'>)[];

// A memo of a pure function (statement text by dialect and row count, at most a few entries);
// it holds no state any caller could observe.
const auditSqlCache = new Map<string, string>();

/** `insert into fleetgate_world_audit (…) values (…), …` for `rows` rows, placeholders per dialect. */
export function auditInsertSql(kind: 'sqlite' | 'postgres', rows: number): string {
  const key = `${kind}:${rows}`;
  let text = auditSqlCache.get(key);
  if (text === undefined) {
    const width = AUDIT_COLUMNS.length;
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) {
      const marks: string[] = [];
      for (let c = 1; c <= width; c++) marks.push(kind === 'postgres' ? `$${r * width + c}` : '?');
      tuples.push(`(${marks.join(', ')})`);
    }
    text = `insert into "fleetgate_world_audit" (${AUDIT_COLUMNS.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')}`;
    auditSqlCache.set(key, text);
  }
  return text;
}

export function auditParams(row: Omit<WorldAuditTable, 'seq'>, into: unknown[]): void {
  for (const column of AUDIT_COLUMNS) into.push(row[column]);
}

export function toAuditRow(record: NewAuditRecord, maxBytes: number): Omit<WorldAuditTable, 'seq'> {
  return {
    domain: record.domain,
    path: record.path,
    op: record.op,
    value: encode(record.value),
    previous: encodeView(record.previous, maxBytes),
    next: encodeView(record.next, maxBytes),
    status: record.status,
    reason: record.reason ?? null,
    version: record.version ?? null,
    agent: record.agent,
    skill: record.skill,
    task_id: record.taskId,
    event_id: record.eventId,
    entry_index: record.index,
    time: record.time,
    recorded_at: record.recordedAt,
  };
}
