/**
 * The in-memory {@link WorldStore}: one process, nothing survives a restart. Used by unit tests,
 * the `memory_deltas_per_s` benchmark and embedded setups that do not need durability. Units of
 * work run one at a time and stage every change, so a failing unit leaves nothing behind.
 */
import type { JsonObject } from './json.js';
import { cloneJsonObject } from './json.js';
import { MemoryAuditLog } from './memory-audit-log.js';
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
import { normaliseHistoryQuery } from './history-query.js';

function copyDomain(domain: StoredDomain): StoredDomain {
  return { ...domain, state: cloneJsonObject(domain.state), base: cloneJsonObject(domain.base) };
}

/** A domain a unit of work loaded, with its version and time then (to undo a failed unit). */
interface Touched {
  domain: StoredDomain;
  version: number;
  updatedAt: number;
}

/**
 * One unit of work of a {@link MemoryWorldStore}: everything staged until the work resolves. A
 * class, not an object of closures, whose collections are made only when first needed: a unit of
 * work runs for every event, and each Map, Set or array it made up front was a cost of every
 * event whether it was used or not.
 */
class MemoryUnitOfWork implements WorldUnitOfWork {
  /**
   * The ids this unit of work claimed. They go into the store's applied ids at once (one lookup
   * for the check and the record), and out again if the unit fails.
   */
  claimed: string[] | undefined;
  /** Saved domains by name. */
  saved: Map<string, StoredDomain> | undefined;
  /** The record lists given to audit, in order (the store takes ownership). */
  audited: (readonly NewAuditRecord[])[] | undefined;
  emitted: WorldEmission[] | undefined;
  /**
   * Loaded domains are handed out live (copying every domain on every event would make the store
   * as slow as its largest domain); what a failing unit of work changed is undone from these.
   */
  touched: Touched[] | undefined;

  constructor(
    readonly domains: ReadonlyMap<string, StoredDomain>,
    readonly eventIds: Map<string, number>,
  ) {}

  claim(ids: readonly string[], now: number): Promise<Set<string>> {
    const fresh = new Set<string>();
    for (const id of ids) {
      // Units of work run one at a time, so nobody else sees an id before this one commits.
      if (this.eventIds.has(id)) continue;
      this.eventIds.set(id, now);
      fresh.add(id);
      (this.claimed ??= []).push(id);
    }
    return Promise.resolve(fresh);
  }

  #isTouched(domain: StoredDomain): boolean {
    if (this.touched === undefined) return false;
    for (const t of this.touched) if (t.domain === domain) return true;
    return false;
  }

  load(
    names: readonly string[],
    init: (name: string) => StoredDomain,
  ): Promise<Map<string, LoadedDomain>> {
    const out = new Map<string, LoadedDomain>();
    for (const name of names) {
      const committed = this.domains.get(name);
      const domain = this.saved?.get(name) ?? committed;
      if (domain === undefined) {
        out.set(name, { domain: init(name), created: true });
        continue;
      }
      if (domain === committed && !this.#isTouched(domain)) {
        (this.touched ??= []).push({
          domain,
          version: domain.version,
          updatedAt: domain.updatedAt,
        });
      }
      out.set(name, { domain, created: false });
    }
    return Promise.resolve(out);
  }

  save(domains: readonly StoredDomain[]): Promise<void> {
    for (const d of domains) (this.saved ??= new Map()).set(d.name, d);
    return Promise.resolve();
  }

  discard(names: readonly string[]): Promise<void> {
    for (const name of names) if (!this.domains.has(name)) this.saved?.delete(name);
    return Promise.resolve();
  }

  audit(records: readonly NewAuditRecord[]): Promise<void> {
    if (records.length > 0) (this.audited ??= []).push(records);
    return Promise.resolve();
  }

  emit(events: readonly WorldEmission[]): Promise<void> {
    if (events.length > 0) {
      // The first list is kept as it is (copied only when a second one comes).
      if (this.emitted === undefined) this.emitted = events as WorldEmission[];
      else this.emitted = [...this.emitted, ...events];
    }
    return Promise.resolve();
  }
}

/** A {@link WorldStore} kept in memory. */
export class MemoryWorldStore implements WorldStore {
  readonly durableEmit = false;
  readonly #domains = new Map<string, StoredDomain>();
  readonly #eventIds = new Map<string, number>();
  readonly #audit = new MemoryAuditLog();
  #seq = 0;
  /** True while a unit of work runs; the next ones wait in {@link #waiting}, in call order. */
  #running = false;
  readonly #waiting: (() => void)[] = [];

  async unitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
  ): Promise<{ result: T; emitted: WorldEmission[] }> {
    // One at a time, in call order: a unit waits only while another runs (no promise chain per
    // unit of work when the store is idle, the usual case).
    if (this.#running) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#running = true;
    try {
      return await this.#run(work);
    } finally {
      // The turn passes straight to the next waiting unit, so no later caller can overtake it.
      const next = this.#waiting.shift();
      if (next === undefined) this.#running = false;
      else next();
    }
  }

  async #run<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
  ): Promise<{ result: T; emitted: WorldEmission[] }> {
    const uow = new MemoryUnitOfWork(this.#domains, this.#eventIds);
    let result: T;
    try {
      result = await work(uow);
    } catch (error) {
      if (uow.touched !== undefined) this.#rollback(uow.touched);
      if (uow.claimed !== undefined) for (const id of uow.claimed) this.#eventIds.delete(id);
      throw error;
    }
    if (uow.saved !== undefined) {
      for (const [name, domain] of uow.saved) this.#domains.set(name, domain);
    }
    // The store owns the records it is given (the materialiser builds them fresh for it): their
    // values are kept as they are, not copied again.
    if (uow.audited !== undefined) {
      for (const records of uow.audited) this.#seq = this.#audit.append(records, this.#seq);
    }
    return { result, emitted: uow.emitted ?? [] };
  }

  /** Restores loaded domains to their committed state: base plus the committed applied records. */
  #rollback(touched: readonly Touched[]): void {
    for (const { domain, version, updatedAt } of touched) {
      if (this.#domains.get(domain.name) !== domain) continue;
      domain.state = replayRecords(
        cloneJsonObject(domain.base),
        this.#audit.appliedOf(domain.name),
      );
      domain.version = version;
      domain.updatedAt = updatedAt;
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
    return Promise.resolve(query).then((q) =>
      this.#audit.history(domain, normaliseHistoryQuery(q)),
    );
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
      const cut = log.cuts(options.before);
      for (const [name, maxSeq] of cut) {
        const folded = log.appliedOf(name, maxSeq);
        const domain = this.#domains.get(name);
        if (domain !== undefined && folded.length > 0) {
          domain.base = options.fold(cloneJsonObject(domain.base), folded);
          domain.baseVersion = folded[folded.length - 1]!.version ?? domain.baseVersion;
        }
      }
      const auditRecords = log.removeUpTo(cut);
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
