/**
 * The pure steps of applying one `world.state.delta` event: checking the envelope, splitting its
 * entries into the parseable and the rejected, and building audit records. No I/O.
 */
import type { EventEnvelope, WorldStateDeltaEvent } from '../protocol/index.js';
import { FleetgateError } from '../protocol/index.js';
import type { DeltaOp, RejectedDeltaEntry } from '../protocol/index.js';
import { LIMITS, acceptDeltaEntry, parseDeltaEntry } from '../protocol/index.js';
import { auditSnapshot, isPlainObject } from './json.js';
import type { AuditStatus, NewAuditRecord } from './types.js';

/** A `world.state.delta` event as the bus delivers it. */
export type WorldStateDeltaEnvelope = EventEnvelope<'world.state.delta', WorldStateDeltaEvent>;

const NAME_PREVIEW = LIMITS.nameLength;

function invalidEvent(message: string, eventId: string): FleetgateError {
  return new FleetgateError('FLEETGATE_WORLD_EVENT_INVALID', message, { details: { eventId } });
}

/**
 * Text as the audit log can keep it: NUL, which PostgreSQL text cannot hold, written as the six
 * characters `\u0000`. Only rejected entries can carry it (the delta rule refuses NUL in a domain
 * or path), and their record must not fail the event's valid entries on PostgreSQL.
 */
function storable(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '\\u0000') : text;
}

function textOf(value: unknown, max: number): string {
  return typeof value === 'string' ? storable(value.slice(0, max)) : '';
}

/** An audit copy that never throws (a rejected value may be anything). */
export function safeSnapshot(value: unknown, maxBytes: number): unknown {
  try {
    return auditSnapshot(value, maxBytes);
  } catch {
    return { $summary: 'unserialisable', type: typeof value };
  }
}

/** The fields every audit record of one event shares. */
export interface RecordBase {
  agent: string;
  skill: string;
  taskId: string;
  eventId: string;
  time: string;
  recordedAt: number;
}

/** What an audit record keeps of the entry it records. */
type AuditedEntry = Pick<NewAuditRecord, 'domain' | 'path' | 'op' | 'index'>;

/**
 * The audit record of one entry of `base`'s event, but for the field its status adds (`version`
 * or `reason`, set by {@link appliedRecord} or {@link rejectedRecord} before it is returned).
 * Built field by field, not by spreading `base`: this runs once per entry, and spread copies were
 * the single largest cost of the in-memory apply path.
 */
function entryRecord(
  status: AuditStatus,
  base: RecordBase,
  entry: AuditedEntry,
  value: unknown,
  previous?: unknown,
  next?: unknown,
): NewAuditRecord {
  return {
    domain: entry.domain,
    path: entry.path,
    op: entry.op,
    value,
    previous,
    next,
    status,
    agent: base.agent,
    skill: base.skill,
    taskId: base.taskId,
    eventId: base.eventId,
    index: entry.index,
    time: base.time,
    recordedAt: base.recordedAt,
  };
}

/** The audit record of an applied entry: its value before and after, and the version it made. */
export function appliedRecord(
  base: RecordBase,
  entry: AuditedEntry,
  value: unknown,
  previous: unknown,
  next: unknown,
  version: number,
): NewAuditRecord {
  const record = entryRecord('applied', base, entry, value, previous, next);
  record.version = version;
  return record;
}

/** The audit record of a rejected entry, with why it was not applied. */
export function rejectedRecord(
  base: RecordBase,
  entry: AuditedEntry,
  value: unknown,
  reason: string,
): NewAuditRecord {
  const record = entryRecord('rejected', base, entry, value);
  record.reason = reason;
  return record;
}

/** Lists `candidate` among the event's rejected entries (a function, not a closure per event). */
function reject(out: ParsedEvent, index: number, candidate: unknown, reason: string): void {
  const raw = isPlainObject(candidate) ? candidate : {};
  out.rejected.push({
    index,
    entry: candidate,
    reason: storable(reason),
    domain: textOf(raw.domain, NAME_PREVIEW),
    path: textOf(raw.path, LIMITS.pathLength),
    op: textOf(raw.op, 16),
  });
}

export interface ParsedEvent {
  envelope: WorldStateDeltaEnvelope;
  source: string;
  skill: string;
  taskId: string;
  /** Valid entries with their index. */
  entries: {
    index: number;
    domain: string;
    path: string;
    op: DeltaOp;
    value: unknown;
  }[];
  rejected: (RejectedDeltaEntry & { domain: string; path: string; op: string })[];
}

/**
 * Checks the envelope and splits its entries into the parseable and the rejected.
 *
 * @throws FleetgateError `FLEETGATE_WORLD_EVENT_INVALID` when the payload itself is malformed.
 */
export function parseEvent(envelope: WorldStateDeltaEnvelope): ParsedEvent {
  const payload: unknown = envelope.payload;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw invalidEvent(`world.state.delta ${envelope.id}: payload must be an object`, envelope.id);
  }
  const p = payload as Record<string, unknown>;
  for (const field of ['source', 'skill', 'taskId'] as const) {
    const value = p[field];
    if (typeof value !== 'string' || value.includes('\0')) {
      throw invalidEvent(
        `world.state.delta ${JSON.stringify(envelope.id)}: payload.${field} must be a string without NUL`,
        storable(envelope.id),
      );
    }
  }
  if (envelope.id.includes('\0')) {
    throw invalidEvent(
      `world.state.delta ${JSON.stringify(envelope.id)}: the event id must not contain NUL`,
      storable(envelope.id),
    );
  }
  if (!Array.isArray(p.deltas)) {
    throw invalidEvent(
      `world.state.delta ${envelope.id}: payload.deltas must be an array`,
      envelope.id,
    );
  }
  const out: ParsedEvent = {
    envelope,
    source: p.source as string,
    skill: p.skill as string,
    taskId: p.taskId as string,
    entries: [],
    rejected: [],
  };
  const deltas = p.deltas as unknown[];
  for (let index = 0; index < deltas.length; index++) {
    const candidate = deltas[index];
    if (index >= LIMITS.deltasPerTask) {
      reject(
        out,
        index,
        candidate,
        `too many entries: an event may carry at most ${LIMITS.deltasPerTask}`,
      );
      continue;
    }
    // The protocol's rule, the same one the parser applied where the entry entered: a publisher
    // that skipped the parser gets the same verdict and reason here. The fast check first; the
    // full parser words the reason of anything it does not accept.
    let entry = acceptDeltaEntry(candidate);
    if (entry === undefined) {
      const verdict = parseDeltaEntry(candidate);
      if (!verdict.ok) {
        reject(out, index, candidate, verdict.reason);
        continue;
      }
      entry = verdict.entry;
    }
    out.entries.push({
      index,
      domain: entry.domain,
      path: entry.path,
      op: entry.op,
      value: entry.value,
    });
  }
  return out;
}
