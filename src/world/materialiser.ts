/**
 * The world-state materialiser: a durable bus subscriber that applies each `world.state.delta`
 * event to its domains, records every applied and rejected entry in the audit log, and emits
 * `world.state.updated` per changed domain and `world.state.delta.rejected` for entries that could
 * not apply — all in one unit of work of the {@link WorldStore}, deduplicated by event id inside
 * it, so a redelivered event is applied exactly once even across replicas.
 */
import type { WorldBus, WorldDelivery, WorldSubscription } from './bus-port.js';
import { FleetgateError, LIMITS, isStoreUnavailable } from '../protocol/index.js';
import type { ApplyReport } from './apply-event.js';
import type { UnitSettings } from './apply-unit.js';
import { applyInUnit } from './apply-unit.js';
import { PathCache } from './path-cache.js';
import { pause } from './pause.js';
import type { WorldStateDeltaEnvelope } from './parse-event.js';
import { parseEvent } from './parse-event.js';
import { publishEmission } from './publish-emission.js';
import { replayRecords } from './replay.js';
import { checkSeed } from './seeds.js';
import type { JsonObject } from './json.js';
import { cloneJsonObject } from './json.js';
import type {
  AuditRecord,
  DomainSnapshot,
  HistoryQuery,
  PruneResult,
  StoredDomain,
  WorldStore,
} from './types.js';

/** Default subscription (and JetStream durable consumer) name of the materialiser. */
export const WORLD_MATERIALISER_SUBSCRIPTION = 'world-materialiser';

/** Retention of the audit log and of the applied-event ids. */
export interface WorldRetention {
  /** Audit records older than this are folded into the domain's base and removed (default: kept). */
  auditMaxAgeMs?: number;
  /**
   * Applied event ids older than this are forgotten (default: 7 days). A redelivery older than
   * this would apply again, so keep it longer than the bus can redeliver.
   */
  eventIdMaxAgeMs?: number;
  /** Prune every this many ms while started (default: only when {@link WorldMaterialiser.prune} is called). */
  intervalMs?: number;
}

/** Options of {@link createWorldMaterialiser}. */
export interface WorldMaterialiserOptions {
  store: WorldStore;
  /** The bus it subscribes to; also publishes emissions when the store has no outbox. */
  bus: WorldBus;
  /** Initial state of domains, from configuration; each must be a JSON object. */
  seeds?: Readonly<Record<string, unknown>>;
  retention?: WorldRetention;
  /** Largest value of a rejected entry kept whole in its audit record, as JSON bytes (default 8 KiB). */
  auditValueMaxBytes?: number;
  /**
   * Largest payload of one emitted event, as JSON bytes (default `LIMITS.eventBytes`): the
   * rejections of an event that need more go out in parts.
   */
  maxEventBytes?: number;
  /**
   * Largest size of one domain, about its JSON bytes (default 16 MiB): an entry that would grow a
   * domain past it is rejected (reason naming the limit, code `FLEETGATE_WORLD_DOMAIN_FULL`) and
   * an `ops.alert.world_domain_full` is emitted; entries that shrink or keep its size still apply.
   */
  maxDomainBytes?: number;
  /** Subscription name (default {@link WORLD_MATERIALISER_SUBSCRIPTION}). */
  subscriptionName?: string;
  /** Clock in epoch milliseconds (tests pass a fake). */
  now?: () => number;
  /** How the subscription waits out a store that is down; see {@link WorldRetry}. */
  retry?: WorldRetry;
}

/**
 * While the store is unreachable or times out (`FLEETGATE_STORE_UNAVAILABLE`,
 * `FLEETGATE_STORE_TIMEOUT`), the subscription keeps the event and tries again with a growing
 * delay until the store is back: an outage delays world-state updates, it never drops or
 * dead-letters them. Other failures go to the bus as before (reported; retried and dead-lettered
 * by a durable JetStream consumer).
 */
export interface WorldRetry {
  /** First delay, in ms (default 100); doubles after each failure. */
  initialDelayMs?: number;
  /** Longest delay, in ms (default 5,000). */
  maxDelayMs?: number;
  /**
   * Stops the waiting (the gateway aborts it when it closes): the event in hand is left
   * unapplied — redelivered by JetStream, re-sent by the outbox on the next start.
   */
  signal?: AbortSignal;
  /** Told of each failed try while waiting (the gateway publishes the first on `system.error`). */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
}

export type { ApplyReport };

export type { WorldStateDeltaEnvelope };

/** Reads and maintains the materialised world state. */
export interface WorldMaterialiser {
  /** Seeds configured domains (once) and subscribes to `world.state.delta` (durable). */
  start(): Promise<void>;
  /** Unsubscribes and stops the retention timer. */
  stop(): Promise<void>;
  /** Applies one event now (the subscription calls this; tests and tools may too). */
  apply(event: WorldStateDeltaEnvelope): Promise<ApplyReport>;
  /** Applies several events, in order, in one unit of work (replays and bulk loads). */
  applyBatch(events: readonly WorldStateDeltaEnvelope[]): Promise<ApplyReport[]>;
  /** Every domain, by name. */
  getWorld(): Promise<Record<string, DomainSnapshot>>;
  getDomain(name: string): Promise<DomainSnapshot | undefined>;
  /** Audit records of a domain, newest first unless `order: 'asc'`. */
  history(domain: string, query?: HistoryQuery): Promise<AuditRecord[]>;
  /** Rebuilds a domain from its base and the audit log (equals the live domain). */
  replay(domain: string): Promise<DomainSnapshot | undefined>;
  /** Applies the retention now; see {@link WorldRetention}. */
  prune(): Promise<PruneResult>;
}

const DEFAULT_EVENT_ID_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;
/** Most delivered events applied in one unit of work. */
const MAX_BATCH = 64;

function describeError(error: unknown): string {
  if (error instanceof FleetgateError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
/** Default {@link WorldMaterialiserOptions.maxDomainBytes}: 16 MiB. */
export const DEFAULT_MAX_DOMAIN_BYTES = 16 * 1024 * 1024;
const DEFAULT_AUDIT_VALUE_MAX_BYTES = 8 * 1024;

export { emptyDomainState } from './seeds.js';

function toSnapshot(domain: StoredDomain): DomainSnapshot {
  return {
    name: domain.name,
    version: domain.version,
    state: domain.state,
    updatedAt: domain.updatedAt,
  };
}

/**
 * Creates the materialiser. Call {@link WorldMaterialiser.start} to seed and subscribe.
 *
 * @example
 * ```ts
 * const world = createWorldMaterialiser({
 *   store: createSqlWorldStore({
 *     db: store.db,
 *     kind: store.kind,
 *     outbox: OUTBOX_WRITERS, // from the bus
 *     onCommitted: relay.notify,
 *   }),
 *   bus,
 *   seeds: { ci: { data: { blockedPRs: 0 } } },
 *   retention: { auditMaxAgeMs: 30 * 86_400_000, intervalMs: 3_600_000 },
 * });
 * await world.start();
 * (await world.getDomain('ci'))?.state; // { data: { blockedPRs: 0 } }
 * ```
 */
export function createWorldMaterialiser(options: WorldMaterialiserOptions): WorldMaterialiser {
  return new DurableWorldMaterialiser(options);
}

/**
 * The materialiser {@link createWorldMaterialiser} builds: the subscription, the retention timer
 * and the wait for a store that is down are the state its methods share; applying the events is
 * {@link applyInUnit}'s, inside one unit of work of the store. Its {@link WorldMaterialiser}
 * functions are arrow fields, own and bound: a caller may hand `world.apply` on without `this`.
 */
class DurableWorldMaterialiser implements WorldMaterialiser {
  readonly #options: WorldMaterialiserOptions;
  readonly #store: WorldStore;
  readonly #bus: WorldBus;
  readonly #now: () => number;
  /** The path cache, the limits and the seeds every unit of work applies with. */
  readonly #unit: UnitSettings;
  readonly #retry: WorldRetry;
  readonly #initialDelay: number;
  readonly #maxDelay: number;
  #subscription: WorldSubscription | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Aborted by stop(): a wait for the store ends at once. */
  #stopping = new AbortController();

  constructor(options: WorldMaterialiserOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#bus = options.bus;
    this.#now = options.now ?? Date.now;
    const seeds = new Map<string, JsonObject>();
    for (const [name, seed] of Object.entries(options.seeds ?? {}))
      seeds.set(name, checkSeed(name, seed));
    this.#unit = {
      paths: new PathCache(),
      auditMax: options.auditValueMaxBytes ?? DEFAULT_AUDIT_VALUE_MAX_BYTES,
      maxEventBytes: options.maxEventBytes ?? LIMITS.eventBytes,
      maxDomainBytes: options.maxDomainBytes ?? DEFAULT_MAX_DOMAIN_BYTES,
      seeds,
      loadsByPath: options.store.loadsByPath === true,
    };
    this.#retry = options.retry ?? {};
    this.#initialDelay = this.#retry.initialDelayMs ?? 100;
    this.#maxDelay = this.#retry.maxDelayMs ?? 5_000;
  }

  readonly start = async (): Promise<void> => {
    if (this.#subscription !== undefined) return;
    const at = this.#now();
    for (const [name, seed] of this.#unit.seeds) await this.#store.seed(name, seed, at);
    this.#stopping = new AbortController();
    this.#subscription = await this.#bus.subscribe(
      'world.state.delta',
      (event, delivery) => this.#applyDelivered(event, delivery),
      // `all`: a new durable consumer starts with every event the bus still retains (applying
      // an event twice is impossible, so nothing is lost by starting early); an existing one
      // resumes where it left off.
      {
        name: this.#options.subscriptionName ?? WORLD_MATERIALISER_SUBSCRIPTION,
        durable: true,
        from: 'all',
      },
    );
    const interval = this.#options.retention?.intervalMs;
    if (interval !== undefined && interval > 0) {
      this.#timer = setInterval(() => {
        this.prune().catch((error: unknown) => {
          this.#bus
            .publish('system.error', {
              source: 'world-materialiser:retention',
              message: error instanceof Error ? error.message : String(error),
            })
            .catch(() => undefined);
        });
      }, interval);
      this.#timer.unref();
    }
  };

  readonly stop = async (): Promise<void> => {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stopping.abort();
    const sub = this.#subscription;
    this.#subscription = undefined;
    await sub?.unsubscribe();
  };

  readonly apply = async (event: WorldStateDeltaEnvelope): Promise<ApplyReport> => {
    const [report] = await this.#applyEvents([event]);
    return report!;
  };

  readonly applyBatch = (events: readonly WorldStateDeltaEnvelope[]): Promise<ApplyReport[]> => {
    return this.#applyEvents(events);
  };

  readonly getWorld = async (): Promise<Record<string, DomainSnapshot>> => {
    const domains = await this.#store.domains();
    return Object.fromEntries(domains.map((d) => [d.name, toSnapshot(d)]));
  };

  readonly getDomain = async (name: string): Promise<DomainSnapshot | undefined> => {
    const domain = await this.#store.domain(name);
    return domain === undefined ? undefined : toSnapshot(domain);
  };

  readonly history = (domain: string, query?: HistoryQuery): Promise<AuditRecord[]> => {
    return this.#store.history(domain, query);
  };

  readonly replay = async (name: string): Promise<DomainSnapshot | undefined> => {
    const domain = await this.#store.domain(name);
    if (domain === undefined) return undefined;
    const records = await this.#store.appliedSinceBase(name);
    const state = replayRecords(cloneJsonObject(domain.base), records);
    const last = records[records.length - 1];
    return {
      name,
      version: last?.version ?? domain.baseVersion,
      state,
      updatedAt: last?.recordedAt ?? domain.updatedAt,
    };
  };

  readonly prune = async (): Promise<PruneResult> => {
    const at = this.#now();
    const retention = this.#options.retention ?? {};
    return this.#store.prune({
      before:
        retention.auditMaxAgeMs === undefined
          ? Number.NEGATIVE_INFINITY
          : at - retention.auditMaxAgeMs,
      eventIdsBefore: at - (retention.eventIdMaxAgeMs ?? DEFAULT_EVENT_ID_MAX_AGE_MS),
      fold: (base, applied) => replayRecords(base, applied),
    });
  };

  /**
   * Applies a delivered event — with the events queued behind it when the bus lets the handler
   * take them (the in-memory bus), in one unit of work — waiting out a store outage (see
   * {@link WorldRetry}). A malformed event is reported on its own; a batch whose unit of work fails
   * is applied again one event at a time, so one bad event never takes the others down.
   */
  async #applyDelivered(
    event: WorldStateDeltaEnvelope,
    delivery: WorldDelivery | undefined,
  ): Promise<void> {
    const more = delivery?.takeQueued?.(MAX_BATCH - 1) as WorldStateDeltaEnvelope[] | undefined;
    if (more === undefined || more.length === 0) return this.#applyWithRetry([event]);
    const failures: unknown[] = [];
    const valid: WorldStateDeltaEnvelope[] = [];
    for (const e of [event, ...more]) {
      try {
        parseEvent(e);
        valid.push(e);
      } catch (error) {
        failures.push(error);
      }
    }
    try {
      if (valid.length > 0) await this.#applyWithRetry(valid);
    } catch (error) {
      if (valid.length === 1 || this.#isGivenUp()) throw error;
      for (const e of valid) {
        try {
          await this.#applyWithRetry([e]);
        } catch (single) {
          failures.push(single);
        }
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) {
      throw new AggregateError(
        failures,
        `${failures.length} world.state.delta events failed: ${failures.map(describeError).join('; ')}`,
      );
    }
  }

  /** Whether the store outage wait was given up (stopping, or the caller's signal aborted). */
  #isGivenUp(): boolean {
    return this.#stopping.signal.aborted || this.#retry.signal?.aborted === true;
  }

  /** Applies events in one unit of work, waiting out a store outage (see {@link WorldRetry}). */
  async #applyWithRetry(events: readonly WorldStateDeltaEnvelope[]): Promise<void> {
    let delay = this.#initialDelay;
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.#applyEvents(events);
        return;
      } catch (error) {
        if (!isStoreUnavailable(error) || this.#isGivenUp()) throw error;
        this.#retry.onRetry?.(error, attempt, delay);
        await pause(delay, [this.#stopping.signal, this.#retry.signal]);
        delay = Math.min(this.#maxDelay, delay * 2);
      }
    }
  }

  /**
   * Applies events, in order, in one unit of work ({@link applyInUnit}); once it committed,
   * publishes what it emitted.
   */
  async #applyEvents(events: readonly WorldStateDeltaEnvelope[]): Promise<ApplyReport[]> {
    const parsed = events.map(parseEvent);
    const at = this.#now();
    const { result, emitted } = await this.#store.unitOfWork((uow) =>
      applyInUnit(uow, parsed, at, this.#unit),
    );
    for (const emission of emitted) {
      const published = publishEmission(this.#bus, emission);
      if (published !== undefined) await published;
    }
    return result;
  }
}
