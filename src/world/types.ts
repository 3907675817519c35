/** The world-state model and the `WorldStore` port the materialiser persists through. */
import type {
  OpsAlertEvent,
  WorldStateDeltaRejectedEvent,
  WorldStateUpdatedEvent,
} from '../protocol/index.js';
import type { JsonObject } from './json.js';
import type { PathNeed } from './value-rows.js';

/** A domain as readers see it. */
export interface DomainSnapshot {
  name: string;
  /** Number of events that changed this domain since it was created (gap-free, from 1). */
  version: number;
  /** The domain object, `{ data: { … } }`. */
  state: JsonObject;
  /** Epoch milliseconds of the last change (or of the seeding). */
  updatedAt: number;
}

/** A domain as the store keeps it: the live state plus the base that replay starts from. */
export interface StoredDomain extends DomainSnapshot {
  /**
   * The state replay starts from: the seed, or — after retention removed old audit rows — the
   * state those rows had produced.
   */
  base: JsonObject;
  /** The version `base` corresponds to. */
  baseVersion: number;
  /**
   * About the domain's size as JSON, in bytes, when the store knows it (the SQL store counts its
   * rows; the materialiser keeps it up to date as it applies entries and checks it against its
   * `maxDomainBytes`). Undefined: not counted yet.
   */
  bytes?: number;
}

/** A domain returned by {@link WorldUnitOfWork.load}. */
export interface LoadedDomain {
  domain: StoredDomain;
  /** True when this unit of work created it. */
  created: boolean;
}

/** Whether an audit record's entry changed the state. */
export type AuditStatus = 'applied' | 'rejected';

/** One applied or rejected delta entry, as the audit log keeps it. */
export interface AuditRecord {
  /** Position in the log; increases with every record (per store, across domains). */
  seq: number;
  domain: string;
  path: string;
  /**
   * The entry's op (`set`, `inc` or `push`); a rejected entry with an unknown op keeps it as text
   * (empty when it was not a string).
   */
  op: string;
  /** The entry's value (the operand). */
  value: unknown;
  /** The value at the path before (applied entries; undefined when absent). */
  previous: unknown;
  /** The value at the path after (applied entries). */
  next: unknown;
  status: AuditStatus;
  /** Why a rejected entry was not applied. */
  reason?: string;
  /** The domain version this entry's event produced (applied entries). */
  version?: number;
  /** The agent that reported the entry (`source` of the event). */
  agent: string;
  skill: string;
  taskId: string;
  /** Id of the `world.state.delta` event. */
  eventId: string;
  /** Position of the entry in its event's `deltas`. */
  index: number;
  /** RFC 3339 time of the event. */
  time: string;
  /** Epoch milliseconds when the materialiser recorded it. */
  recordedAt: number;
}

/** An audit record before the store numbered it. */
export type NewAuditRecord = Omit<AuditRecord, 'seq'>;

/** A query of {@link WorldStore.history}. */
export interface HistoryQuery {
  /** Only records at this path or below it (`data.items` matches `data.items.0`). */
  path?: string;
  /** Only records recorded at or after this time (epoch ms or RFC 3339). */
  since?: number | string;
  /** Only records with a larger `seq` (paging). */
  afterSeq?: number;
  /** Most records returned (default 100, at most 10,000). */
  limit?: number;
  /** `desc` (default): newest first. `asc`: oldest first. */
  order?: 'asc' | 'desc';
  /** Only applied or only rejected records. */
  status?: AuditStatus;
}

/** An event the materialiser emits as part of a unit of work. */
export type WorldEmission = (
  | { topic: 'world.state.updated'; payload: WorldStateUpdatedEvent }
  | { topic: 'world.state.delta.rejected'; payload: WorldStateDeltaRejectedEvent }
  | { topic: 'ops.alert.world_domain_full'; payload: OpsAlertEvent }
) & { id: string; correlationId: string };

/** What {@link WorldStore.prune} removed. */
export interface PruneResult {
  auditRecords: number;
  eventIds: number;
}

/** The operations of one atomic unit of work; see {@link WorldStore.unitOfWork}. */
export interface WorldUnitOfWork {
  /**
   * Records the event ids as applied and returns those that were not recorded before. Two units
   * of work claiming the same id (two replicas) never both get it back.
   */
  claim(eventIds: readonly string[], now: number): Promise<Set<string>>;
  /**
   * Loads the named domains and locks them until the unit of work ends (replicas applying events
   * to the same domain take turns). A missing domain is created from `init` and comes back with
   * `created: true`. With `needs` (the paths and ops of the entries about to apply, by domain) a
   * store may load only that much of a domain's `state` — the values on those paths and what a
   * `set` replaces — and the entries must touch nothing else; without it the whole state loads.
   */
  load(
    names: readonly string[],
    init: (name: string) => StoredDomain,
    needs?: ReadonlyMap<string, readonly PathNeed[]>,
  ): Promise<Map<string, LoadedDomain>>;
  /**
   * Writes the state, version and time of the given loaded domains: what changed in the state
   * since it was loaded, not the whole domain.
   */
  save(domains: readonly StoredDomain[]): Promise<void>;
  /** Removes domains this unit of work created with `load` but left unused. */
  discard(names: readonly string[]): Promise<void>;
  /** Appends audit records in the given order; the store takes ownership of the objects. */
  audit(records: readonly NewAuditRecord[]): Promise<void>;
  /** Emits events that become visible only if the unit of work commits. */
  emit(events: readonly WorldEmission[]): Promise<void>;
}

/**
 * Where the world state lives: domain state and versions, applied event ids and the audit log.
 * Implementations: {@link createMemoryWorldStore} (one process, nothing survives a restart) and
 * {@link createSqlWorldStore} (SQLite on its direct access, or PostgreSQL through kysely; its
 * emissions go to the transactional outbox).
 */
export interface WorldStore {
  /**
   * True when {@link WorldUnitOfWork.emit} writes to a durable outbox that a relay publishes;
   * false when the caller must publish the emissions returned by {@link unitOfWork} itself.
   */
  readonly durableEmit: boolean;
  /**
   * True when {@link WorldUnitOfWork.load} reads only what its `needs` name; the materialiser
   * works out the needs of a unit of work only for such a store.
   */
  readonly loadsByPath?: boolean;
  /**
   * Runs `work` atomically: everything it claimed, saved, audited and emitted commits together or
   * not at all. Resolves with `work`'s result and the emissions to publish when
   * {@link durableEmit} is false.
   */
  unitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
  ): Promise<{ result: T; emitted: WorldEmission[] }>;
  /** Creates the domain with this state when it does not exist; true when it was created. */
  seed(name: string, state: JsonObject, now: number): Promise<boolean>;
  domain(name: string): Promise<StoredDomain | undefined>;
  domains(): Promise<StoredDomain[]>;
  history(domain: string, query?: HistoryQuery): Promise<AuditRecord[]>;
  /** Every applied record of the domain after the base, oldest first (for replay). */
  appliedSinceBase(domain: string): Promise<AuditRecord[]>;
  /**
   * Retention: removes audit records recorded before `before` and applied event ids claimed
   * before `eventIdsBefore`. Before removing a domain's applied records it folds them into the
   * domain's base with `fold`, so replay still gives the live state.
   */
  prune(options: {
    before: number;
    eventIdsBefore: number;
    fold: (base: JsonObject, applied: readonly AuditRecord[]) => JsonObject;
  }): Promise<PruneResult>;
}
