/**
 * The in-memory {@link WorldStore}: one process, nothing survives a restart. Used by unit tests,
 * the `memory_deltas_per_s` benchmark and embedded setups that do not need durability. Units of
 * work run one at a time and stage every change, so a failing unit leaves nothing behind.
 */
import type { JsonObject } from './json.js';
import { cloneJsonObject } from './json.js';
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
  return value !== null && typeof value === 'object' ? structuredClone(value) : value;
}

/**
 * An audit record as this store keeps it: the event's fields are shared by its records. The log
 * is the bulk of the store's memory and every record survives, so its size is what the garbage
 * collector pays for on every event (the shared fields were a third of a record).
 */
class KeptRecord {
  constructor(
    readonly seq: number,
    readonly event: EventFields,
    readonly domain: string,
    readonly path: string,
    readonly op: string,
    readonly value: unknown,
    readonly previous: unknown,
    readonly next: unknown,
    readonly status: AuditRecord['status'],
    readonly reason: string | undefined,
    readonly version: number | undefined,
    readonly index: number,
  ) {}

  get recordedAt(): number {
    return this.event.recordedAt;
  }

  /** The record as readers see it (the SQL store's field order), its values copied. */
  toRecord(): AuditRecord {
    const e = this.event;
    const record: AuditRecord = {
      seq: this.seq,
      domain: this.domain,
      path: this.path,
      op: this.op,
      value: copyOut(this.value),
      previous: copyOut(this.previous),
      next: copyOut(this.next),
      status: this.status,
      agent: e.agent,
      skill: e.skill,
      taskId: e.taskId,
      eventId: e.eventId,
      index: this.index,
      time: e.time,
      recordedAt: e.recordedAt,
    };
    if (this.reason !== undefined) record.reason = this.reason;
    if (this.version !== undefined) record.version = this.version;
    return record;
  }
}

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

/** A {@link WorldStore} kept in memory. */
export class MemoryWorldStore implements WorldStore {
  readonly durableEmit = false;
  readonly #domains = new Map<string, StoredDomain>();
  readonly #eventIds = new Map<string, number>();
  readonly #audit: KeptRecord[] = [];
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
    const claimed = new Map<string, number>();
    const saved = new Map<string, StoredDomain>();
    const audited: NewAuditRecord[] = [];
    const emitted: WorldEmission[] = [];
    // Loaded domains are handed out live (copying every domain on every event would make the
    // store as slow as its largest domain); what a failing unit of work changed is undone below.
    const touched = new Map<string, { version: number; updatedAt: number }>();
    const uow: WorldUnitOfWork = {
      claim: (ids, now) => {
        const fresh = new Set<string>();
        for (const id of ids) {
          if (this.#eventIds.has(id) || claimed.has(id)) continue;
          claimed.set(id, now);
          fresh.add(id);
        }
        return Promise.resolve(fresh);
      },
      load: (names, init) => {
        const out = new Map<string, LoadedDomain>();
        for (const name of names) {
          const domain = saved.get(name) ?? this.#domains.get(name);
          if (domain === undefined) {
            out.set(name, { domain: init(name), created: true });
            continue;
          }
          if (!touched.has(name) && this.#domains.get(name) === domain) {
            touched.set(name, { version: domain.version, updatedAt: domain.updatedAt });
          }
          out.set(name, { domain, created: false });
        }
        return Promise.resolve(out);
      },
      save: (domains) => {
        for (const d of domains) saved.set(d.name, d);
        return Promise.resolve();
      },
      discard: (names) => {
        for (const name of names) if (!this.#domains.has(name)) saved.delete(name);
        return Promise.resolve();
      },
      audit: (records) => {
        for (const record of records) audited.push(record);
        return Promise.resolve();
      },
      emit: (events) => {
        for (const event of events) emitted.push(event);
        return Promise.resolve();
      },
    };
    let result: T;
    try {
      result = await work(uow);
    } catch (error) {
      this.#rollback(touched);
      throw error;
    }
    for (const [id, now] of claimed) this.#eventIds.set(id, now);
    for (const [name, domain] of saved) this.#domains.set(name, domain);
    // The store owns the records it is given (the materialiser builds them fresh for it): their
    // values are kept as they are, not copied again.
    let event: EventFields | undefined;
    for (const r of audited) {
      event = eventFields(r, event);
      this.#audit.push(
        new KeptRecord(
          ++this.#seq,
          event,
          r.domain,
          r.path,
          r.op,
          r.value,
          r.previous,
          r.next,
          r.status,
          r.reason,
          r.version,
          r.index,
        ),
      );
    }
    return { result, emitted };
  }

  /** Restores loaded domains to their committed state: base plus the committed applied records. */
  #rollback(touched: ReadonlyMap<string, { version: number; updatedAt: number }>): void {
    for (const [name, before] of touched) {
      const domain = this.#domains.get(name);
      if (domain === undefined) continue;
      const applied = this.#audit.filter((r) => r.domain === name && r.status === 'applied');
      domain.state = replayRecords(cloneJsonObject(domain.base), applied);
      domain.version = before.version;
      domain.updatedAt = before.updatedAt;
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
    const step = q.order === 'asc' ? 1 : -1;
    for (
      let i = q.order === 'asc' ? 0 : this.#audit.length - 1;
      i >= 0 && i < this.#audit.length && out.length < q.limit;
      i += step
    ) {
      const record = this.#audit[i]!;
      if (record.domain === domain && matchesHistory(record, q)) out.push(record.toRecord());
    }
    return out;
  }

  appliedSinceBase(domain: string): Promise<AuditRecord[]> {
    return Promise.resolve(
      this.#audit
        .filter((r) => r.domain === domain && r.status === 'applied')
        .map((r) => r.toRecord()),
    );
  }

  async prune(options: {
    before: number;
    eventIdsBefore: number;
    fold: (base: JsonObject, applied: readonly AuditRecord[]) => JsonObject;
  }): Promise<PruneResult> {
    const { result } = await this.unitOfWork(() => {
      const cut = new Map<string, number>();
      for (const r of this.#audit) {
        if (r.recordedAt < options.before)
          cut.set(r.domain, Math.max(cut.get(r.domain) ?? 0, r.seq));
      }
      let auditRecords = 0;
      for (const [name, maxSeq] of cut) {
        const folded = this.#audit.filter(
          (r) => r.domain === name && r.seq <= maxSeq && r.status === 'applied',
        );
        const domain = this.#domains.get(name);
        if (domain !== undefined && folded.length > 0) {
          domain.base = options.fold(
            cloneJsonObject(domain.base),
            folded.map((r) => r.toRecord()),
          );
          domain.baseVersion = folded[folded.length - 1]!.version ?? domain.baseVersion;
        }
      }
      for (let i = this.#audit.length - 1; i >= 0; i--) {
        const r = this.#audit[i]!;
        const maxSeq = cut.get(r.domain);
        if (maxSeq !== undefined && r.seq <= maxSeq) {
          this.#audit.splice(i, 1);
          auditRecords += 1;
        }
      }
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
