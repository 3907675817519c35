/**
 * The in-memory {@link WorldStore}: one process, nothing survives a restart. Used by unit tests,
 * the `memory_deltas_per_s` benchmark and embedded setups that do not need durability. Units of
 * work run one at a time and stage every change, so a failing unit leaves nothing behind.
 */
import type { JsonObject } from './json.js';
import { cloneJsonObject, copyJsonValue } from './json.js';
import { replayRecords } from './replay.js';
import type {
  AuditRecord,
  HistoryQuery,
  LoadedDomain,
  NewAuditRecord,
  PruneResult,
  StoredDomain,
  WorldEmission,
  WorldStore,
  WorldUnitOfWork,
} from './types.js';
import type { NormalisedHistoryQuery } from './history-query.js';
import { matchesHistory, normaliseHistoryQuery } from './history-query.js';

function copyDomain(domain: StoredDomain): StoredDomain {
  return { ...domain, state: cloneJsonObject(domain.state), base: cloneJsonObject(domain.base) };
}

/** The fields every audit record of one event shares, kept once per event. */
interface EventFields {
  agent: string;
  skill: string;
  taskId: string;
  eventId: string;
  time: string;
  recordedAt: number;
}

/** A copy of a kept value for a reader: the store's own objects never leave it. */
function copyOut(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  // Kept values are plain JSON (copies the materialiser made): a JSON copy is enough and
  // cheaper than structuredClone; anything else still gets the general copy.
  return copyJsonValue(value) ?? structuredClone(value);
}

const NO_VERSION = -1;

/** `last` when `record` belongs to the same event (the usual case: records come by event), else new. */
function eventFields(record: NewAuditRecord, last: EventFields | undefined): EventFields {
  if (
    last !== undefined &&
    last.eventId === record.eventId &&
    last.recordedAt === record.recordedAt &&
    last.agent === record.agent &&
    last.skill === record.skill &&
    last.taskId === record.taskId &&
    last.time === record.time
  ) {
    return last;
  }
  return {
    agent: record.agent,
    skill: record.skill,
    taskId: record.taskId,
    eventId: record.eventId,
    time: record.time,
    recordedAt: record.recordedAt,
  };
}

/**
 * The audit log, one column per field: a record is a position in parallel arrays, not an object
 * of its own. The log is the bulk of the store's memory and every record survives, so what the
 * garbage collector pays for on each event is the number of objects it keeps: here that is the
 * values alone (the event's shared fields are kept once per event). A record is built as an
 * object only when a reader asks for it.
 */
class AuditColumns {
  seq: number[] = [];
  event: EventFields[] = [];
  domain: string[] = [];
  path: string[] = [];
  op: string[] = [];
  value: unknown[] = [];
  previous: unknown[] = [];
  next: unknown[] = [];
  applied: boolean[] = [];
  reason: (string | undefined)[] = [];
  /** {@link NO_VERSION} when the record has none. */
  version: number[] = [];
  index: number[] = [];

  get length(): number {
    return this.seq.length;
  }

  push(seq: number, event: EventFields, r: NewAuditRecord): void {
    this.seq.push(seq);
    this.event.push(event);
    this.domain.push(r.domain);
    this.path.push(r.path);
    this.op.push(r.op);
    this.value.push(r.value);
    this.previous.push(r.previous);
    this.next.push(r.next);
    this.applied.push(r.status === 'applied');
    this.reason.push(r.reason);
    this.version.push(r.version ?? NO_VERSION);
    this.index.push(r.index);
  }

  /** Record `i` as readers see it (the SQL store's field order), its values copied. */
  record(i: number): AuditRecord {
    const e = this.event[i]!;
    const record: AuditRecord = {
      seq: this.seq[i]!,
      domain: this.domain[i]!,
      path: this.path[i]!,
      op: this.op[i]!,
      value: copyOut(this.value[i]),
      previous: copyOut(this.previous[i]),
      next: copyOut(this.next[i]),
      status: this.applied[i] ? 'applied' : 'rejected',
      agent: e.agent,
      skill: e.skill,
      taskId: e.taskId,
      eventId: e.eventId,
      index: this.index[i]!,
      time: e.time,
      recordedAt: e.recordedAt,
    };
    const reason = this.reason[i];
    if (reason !== undefined) record.reason = reason;
    const version = this.version[i]!;
    if (version !== NO_VERSION) record.version = version;
    return record;
  }

  /** The applied records of `domain`, in log order (optionally only up to `maxSeq`). */
  appliedOf(domain: string, maxSeq = Number.POSITIVE_INFINITY): AuditRecord[] {
    const out: AuditRecord[] = [];
    for (let i = 0; i < this.seq.length; i += 1) {
      if (this.domain[i] === domain && this.applied[i] && this.seq[i]! <= maxSeq) {
        out.push(this.record(i));
      }
    }
    return out;
  }

  /** Keeps only the records `keep` says yes to; returns how many went. */
  retain(keep: (i: number) => boolean): number {
    const kept = new AuditColumns();
    for (let i = 0; i < this.seq.length; i += 1) {
      if (!keep(i)) continue;
      kept.seq.push(this.seq[i]!);
      kept.event.push(this.event[i]!);
      kept.domain.push(this.domain[i]!);
      kept.path.push(this.path[i]!);
      kept.op.push(this.op[i]!);
      kept.value.push(this.value[i]);
      kept.previous.push(this.previous[i]);
      kept.next.push(this.next[i]);
      kept.applied.push(this.applied[i]!);
      kept.reason.push(this.reason[i]);
      kept.version.push(this.version[i]!);
      kept.index.push(this.index[i]!);
    }
    const removed = this.seq.length - kept.seq.length;
    Object.assign(this, kept);
    return removed;
  }
}

/**
 * One unit of work of a {@link MemoryWorldStore}: everything staged until the work resolves. A
 * class, not an object of closures, so a unit costs one allocation and no function objects.
 */
class MemoryUnitOfWork implements WorldUnitOfWork {
  readonly claimed = new Map<string, number>();
  readonly saved = new Map<string, StoredDomain>();
  readonly audited: NewAuditRecord[] = [];
  readonly emitted: WorldEmission[] = [];
  /**
   * Loaded domains are handed out live (copying every domain on every event would make the store
   * as slow as its largest domain); what a failing unit of work changed is undone from this.
   */
  readonly touched = new Map<string, { version: number; updatedAt: number }>();

  constructor(
    readonly domains: ReadonlyMap<string, StoredDomain>,
    readonly eventIds: ReadonlyMap<string, number>,
  ) {}

  claim(ids: readonly string[], now: number): Promise<Set<string>> {
    const fresh = new Set<string>();
    for (const id of ids) {
      if (this.eventIds.has(id) || this.claimed.has(id)) continue;
      this.claimed.set(id, now);
      fresh.add(id);
    }
    return Promise.resolve(fresh);
  }

  load(
    names: readonly string[],
    init: (name: string) => StoredDomain,
  ): Promise<Map<string, LoadedDomain>> {
    const out = new Map<string, LoadedDomain>();
    for (const name of names) {
      const domain = this.saved.get(name) ?? this.domains.get(name);
      if (domain === undefined) {
        out.set(name, { domain: init(name), created: true });
        continue;
      }
      if (!this.touched.has(name) && this.domains.get(name) === domain) {
        this.touched.set(name, { version: domain.version, updatedAt: domain.updatedAt });
      }
      out.set(name, { domain, created: false });
    }
    return Promise.resolve(out);
  }

  save(domains: readonly StoredDomain[]): Promise<void> {
    for (const d of domains) this.saved.set(d.name, d);
    return Promise.resolve();
  }

  discard(names: readonly string[]): Promise<void> {
    for (const name of names) if (!this.domains.has(name)) this.saved.delete(name);
    return Promise.resolve();
  }

  audit(records: readonly NewAuditRecord[]): Promise<void> {
    for (const record of records) this.audited.push(record);
    return Promise.resolve();
  }

  emit(events: readonly WorldEmission[]): Promise<void> {
    for (const event of events) this.emitted.push(event);
    return Promise.resolve();
  }
}

/** A {@link WorldStore} kept in memory. */
export class MemoryWorldStore implements WorldStore {
  readonly durableEmit = false;
  readonly #domains = new Map<string, StoredDomain>();
  readonly #eventIds = new Map<string, number>();
  readonly #audit = new AuditColumns();
  #seq = 0;
  #queue: Promise<unknown> = Promise.resolve();

  unitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
  ): Promise<{ result: T; emitted: WorldEmission[] }> {
    const run = this.#queue.then(() => this.#run(work));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #run<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
  ): Promise<{ result: T; emitted: WorldEmission[] }> {
    const uow = new MemoryUnitOfWork(this.#domains, this.#eventIds);
    let result: T;
    try {
      result = await work(uow);
    } catch (error) {
      this.#rollback(uow.touched);
      throw error;
    }
    for (const [id, now] of uow.claimed) this.#eventIds.set(id, now);
    for (const [name, domain] of uow.saved) this.#domains.set(name, domain);
    // The store owns the records it is given (the materialiser builds them fresh for it): their
    // values are kept as they are, not copied again.
    let event: EventFields | undefined;
    for (const r of uow.audited) {
      event = eventFields(r, event);
      this.#audit.push(++this.#seq, event, r);
    }
    return { result, emitted: uow.emitted };
  }

  /** Restores loaded domains to their committed state: base plus the committed applied records. */
  #rollback(touched: ReadonlyMap<string, { version: number; updatedAt: number }>): void {
    for (const [name, before] of touched) {
      const domain = this.#domains.get(name);
      if (domain === undefined) continue;
      domain.state = replayRecords(cloneJsonObject(domain.base), this.#audit.appliedOf(name));
      domain.version = before.version;
      domain.updatedAt = before.updatedAt;
      // Counted again from the restored state on the next unit of work.
      delete domain.bytes;
    }
  }

  seed(name: string, state: JsonObject, now: number): Promise<boolean> {
    return this.unitOfWork(async (uow) => {
      const loaded = await uow.load([name], () => ({
        name,
        version: 0,
        state: cloneJsonObject(state),
        updatedAt: now,
        base: cloneJsonObject(state),
        baseVersion: 0,
      }));
      const entry = loaded.get(name)!;
      if (entry.created) await uow.save([entry.domain]);
      return entry.created;
    }).then((r) => r.result);
  }

  domain(name: string): Promise<StoredDomain | undefined> {
    const domain = this.#domains.get(name);
    return Promise.resolve(domain === undefined ? undefined : copyDomain(domain));
  }

  domains(): Promise<StoredDomain[]> {
    return Promise.resolve(
      [...this.#domains.values()].sort((a, b) => a.name.localeCompare(b.name)).map(copyDomain),
    );
  }

  history(domain: string, query: HistoryQuery = {}): Promise<AuditRecord[]> {
    return Promise.resolve(query).then((q) => this.#history(domain, normaliseHistoryQuery(q)));
  }

  #history(domain: string, q: NormalisedHistoryQuery): AuditRecord[] {
    const out: AuditRecord[] = [];
    const log = this.#audit;
    const step = q.order === 'asc' ? 1 : -1;
    for (
      let i = q.order === 'asc' ? 0 : log.length - 1;
      i >= 0 && i < log.length && out.length < q.limit;
      i += step
    ) {
      if (log.domain[i] !== domain) continue;
      const filter = {
        path: log.path[i]!,
        recordedAt: log.event[i]!.recordedAt,
        seq: log.seq[i]!,
        status: log.applied[i] ? ('applied' as const) : ('rejected' as const),
      };
      if (matchesHistory(filter, q)) out.push(log.record(i));
    }
    return out;
  }

  appliedSinceBase(domain: string): Promise<AuditRecord[]> {
    return Promise.resolve(this.#audit.appliedOf(domain));
  }

  async prune(options: {
    before: number;
    eventIdsBefore: number;
    fold: (base: JsonObject, applied: readonly AuditRecord[]) => JsonObject;
  }): Promise<PruneResult> {
    const { result } = await this.unitOfWork(() => {
      const log = this.#audit;
      const cut = new Map<string, number>();
      for (let i = 0; i < log.length; i += 1) {
        if (log.event[i]!.recordedAt < options.before) {
          const name = log.domain[i]!;
          cut.set(name, Math.max(cut.get(name) ?? 0, log.seq[i]!));
        }
      }
      for (const [name, maxSeq] of cut) {
        const folded = log.appliedOf(name, maxSeq);
        const domain = this.#domains.get(name);
        if (domain !== undefined && folded.length > 0) {
          domain.base = options.fold(cloneJsonObject(domain.base), folded);
          domain.baseVersion = folded[folded.length - 1]!.version ?? domain.baseVersion;
        }
      }
      const auditRecords = log.retain((i) => {
        const maxSeq = cut.get(log.domain[i]!);
        return maxSeq === undefined || log.seq[i]! > maxSeq;
      });
      let eventIds = 0;
      for (const [id, at] of this.#eventIds) {
        if (at < options.eventIdsBefore) {
          this.#eventIds.delete(id);
          eventIds += 1;
        }
      }
      return Promise.resolve({ auditRecords, eventIds });
    });
    return result;
  }
}

/** Creates an empty {@link MemoryWorldStore}. */
export function createMemoryWorldStore(): MemoryWorldStore {
  return new MemoryWorldStore();
}
