/**
 * Applying one parsed `world.state.delta` event to the domains its unit of work loaded: each entry
 * in order (within the domain size limit), its audit records in reported order, and its emissions
 * (`world.state.updated` per changed domain, the domain-full alerts, the rejections). No I/O.
 */
import { deterministicEventId } from '../protocol/index.js';
import type { RejectedDeltaEntry } from '../protocol/index.js';
import { applyDeltaAt, growthOf } from './apply.js';
import { jsonLength } from './json-length.js';
import { DomainsFull, domainFullRejection, rejectionEmissions } from './emissions.js';
import type { PathCache } from './path-cache.js';
import type { ParsedEvent, RecordBase } from './parse-event.js';
import { appliedRecord, rejectedRecord, safeSnapshot } from './parse-event.js';
import { copyJsonValue, isPlainObject } from './json.js';
import type { LoadedDomain, NewAuditRecord, StoredDomain, WorldEmission } from './types.js';

/** What applying one event did. */
export interface ApplyReport {
  eventId: string;
  /** True when the event id was already applied; nothing changed. */
  skipped: boolean;
  /** Entries applied. */
  applied: number;
  /** Entries rejected, with reasons (also published on `world.state.delta.rejected`). */
  rejected: RejectedDeltaEntry[];
  /** The domains the event changed, with their new versions and the paths touched. */
  updated: { domain: string; version: number; paths: string[] }[];
}

/** What applying an event takes from its materialiser: the path cache and the size limits. */
export interface ApplySettings {
  /** Split paths of the materialiser (one per materialiser). */
  paths: PathCache;
  /** Largest value of a rejected entry kept whole in its audit record, as JSON bytes. */
  auditMax: number;
  /** Largest payload of one emitted event, as JSON bytes. */
  maxEventBytes: number;
  /** Largest size of one domain, about its JSON bytes. */
  maxDomainBytes: number;
}

/** What one unit of work collects while it applies its events. */
export interface UnitOutput {
  /** Names of the domains it changed. */
  changed: Set<string>;
  /** Audit records: per event, in the order its entries were reported. */
  audit: NewAuditRecord[];
  emissions: WorldEmission[];
}

/** A domain one event touches: its loaded state, the paths it changed, and its new version. */
interface DomainTouch {
  name: string;
  domain: StoredDomain;
  paths: string[];
  /** Set when the first entry for the domain applied. */
  version?: number;
}

/**
 * Applies one parsed event to the loaded domains; appends its audit records (in entry order),
 * its emissions and the domains it changed to `out`.
 */
export function applyEvent(
  e: ParsedEvent,
  fresh: ReadonlySet<string>,
  seen: Set<string> | undefined,
  loaded: ReadonlyMap<string, LoadedDomain>,
  at: number,
  out: UnitOutput,
  settings: ApplySettings,
): ApplyReport {
  const id = e.envelope.id;
  const report: ApplyReport = {
    eventId: id,
    skipped: false,
    applied: 0,
    rejected: [],
    updated: [],
  };
  if (!fresh.has(id) || seen?.has(id) === true) {
    report.skipped = true;
    return report;
  }
  seen?.add(id);
  const base: RecordBase = {
    agent: e.source,
    skill: e.skill,
    taskId: e.taskId,
    eventId: id,
    time: e.envelope.time,
    recordedAt: at,
  };
  const first = out.audit.length;
  // Domains in order of first appearance; each gets one version per event, taken when its first
  // entry applies (so every applied record is built with its version).
  const touched: DomainTouch[] = [];
  const domainsFull = applyEntries(e, base, loaded, touched, report, out, settings);
  if (e.rejected.length > 0) {
    recordUnparsed(e, base, report, out.audit, settings.auditMax);
    // Entries that did not parse interleave with the others: back in reported order. (Without
    // them the records already are in that order.)
    const mine = out.audit.splice(first).sort((a, b) => a.index - b.index);
    for (const record of mine) out.audit.push(record);
  }
  emitFor(e, touched, domainsFull, report, out.emissions, settings);
  return report;
}

/** The touch of `name` in `touched`, added (in order of first appearance) when it is not yet. */
function touchOf(
  touched: DomainTouch[],
  loaded: ReadonlyMap<string, LoadedDomain>,
  name: string,
): DomainTouch {
  for (const t of touched) if (t.name === name) return t;
  const touch: DomainTouch = { name, domain: loaded.get(name)!.domain, paths: [] };
  touched.push(touch);
  return touch;
}

/**
 * Applies the event's valid entries in order, recording each in the audit and the report;
 * returns the domains that were found full, if any.
 */
function applyEntries(
  e: ParsedEvent,
  base: RecordBase,
  loaded: ReadonlyMap<string, LoadedDomain>,
  touched: DomainTouch[],
  report: ApplyReport,
  out: UnitOutput,
  settings: ApplySettings,
): DomainsFull | undefined {
  const { paths, auditMax, maxDomainBytes } = settings;
  let domainsFull: DomainsFull | undefined;
  for (const entry of e.entries) {
    const touch = touchOf(touched, loaded, entry.domain);
    const domain = touch.domain;
    const segments = paths.segments(entry.path);
    domain.bytes ??= jsonLength(domain.state);
    const growth =
      segments === undefined ? 0 : growthOf(domain.state, segments, entry.op, entry.value);
    if (growth > 0 && domain.bytes + growth > maxDomainBytes) {
      const value = safeSnapshot(entry.value, auditMax);
      const rejection = domainFullRejection(entry, value, domain.bytes + growth, maxDomainBytes);
      report.rejected.push(rejection);
      out.audit.push(rejectedRecord(base, entry, value, rejection.reason));
      (domainsFull ??= new DomainsFull()).note(entry.domain, domain.bytes);
      continue;
    }
    const outcome = applyDeltaAt(domain.state, entry.path, segments, entry.op, entry.value);
    if (!outcome.ok) {
      rejectEntry(entry, outcome.reason, base, report, out.audit, auditMax);
      continue;
    }
    domain.bytes += growth;
    report.applied += 1;
    if (touch.version === undefined) {
      domain.version += 1;
      domain.updatedAt = base.recordedAt;
      touch.version = domain.version;
      out.changed.add(touch.name);
    }
    if (!touch.paths.includes(entry.path)) touch.paths.push(entry.path);
    // The audit keeps its own copy of the operand (replay needs it whole). A set's new value is
    // that same copy and the replaced value has left the tree, so neither needs another copy;
    // the store summarises large ones when it writes them.
    const value = copyJsonValue(entry.value) ?? null;
    const next = entry.op === 'set' ? value : outcome.next;
    out.audit.push(appliedRecord(base, entry, value, outcome.previous, next, touch.version));
  }
  return domainsFull;
}

/** Records a valid entry that could not apply, with `reason`. */
function rejectEntry(
  entry: ParsedEvent['entries'][number],
  reason: string,
  base: RecordBase,
  report: ApplyReport,
  audit: NewAuditRecord[],
  auditMax: number,
): void {
  report.rejected.push({
    index: entry.index,
    entry: {
      domain: entry.domain,
      path: entry.path,
      op: entry.op,
      value: safeSnapshot(entry.value, auditMax),
    },
    reason,
  });
  audit.push(rejectedRecord(base, entry, safeSnapshot(entry.value, auditMax), reason));
}

/** Records the entries of the event that did not parse. */
function recordUnparsed(
  e: ParsedEvent,
  base: RecordBase,
  report: ApplyReport,
  audit: NewAuditRecord[],
  auditMax: number,
): void {
  for (const r of e.rejected) {
    // The entry goes out on the bus and into the outbox: a huge one (the usual reason it was
    // rejected) is summarised, so it can never block the relay or the bus.
    report.rejected.push({
      index: r.index,
      entry: safeSnapshot(r.entry, auditMax),
      reason: r.reason,
    });
    audit.push(
      rejectedRecord(
        base,
        r,
        safeSnapshot(isPlainObject(r.entry) ? r.entry.value : r.entry, auditMax),
        r.reason,
      ),
    );
  }
}

/**
 * The event's emissions: `world.state.updated` per changed domain (and the report's `updated`),
 * an alert per domain found full, and its rejections.
 */
function emitFor(
  e: ParsedEvent,
  touched: readonly DomainTouch[],
  domainsFull: DomainsFull | undefined,
  report: ApplyReport,
  emissions: WorldEmission[],
  settings: ApplySettings,
): void {
  const { maxDomainBytes, maxEventBytes } = settings;
  const id = e.envelope.id;
  let updatedIdBase: string | undefined;
  for (const touch of touched) {
    const version = touch.version;
    if (version === undefined) continue;
    report.updated.push({ domain: touch.name, version, paths: touch.paths });
    emissions.push({
      topic: 'world.state.updated',
      payload: { domain: touch.name, version, paths: touch.paths },
      // One hash per event, the domain appended: deterministic, unique, and cheap.
      id: `${(updatedIdBase ??= deterministicEventId('world.state.updated', id))}.${touch.name}`,
      correlationId: e.envelope.correlationId,
    });
  }
  if (domainsFull === undefined && report.rejected.length === 0) return;
  const context = {
    eventId: id,
    correlationId: e.envelope.correlationId,
    source: e.source,
    skill: e.skill,
    taskId: e.taskId,
  };
  if (domainsFull !== undefined) {
    for (const alert of domainsFull.alerts(context, maxDomainBytes)) emissions.push(alert);
  }
  if (report.rejected.length > 0) {
    report.rejected.sort((a, b) => a.index - b.index);
    for (const part of rejectionEmissions(report.rejected, context, maxEventBytes)) {
      emissions.push(part);
    }
  }
}
