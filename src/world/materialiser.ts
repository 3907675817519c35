/**
 * The world-state materialiser: a durable bus subscriber that applies each `world.state.delta`
 * event to its domains, records every applied and rejected entry in the audit log, and emits
 * `world.state.updated` per changed domain and `world.state.delta.rejected` for entries that could
 * not apply — all in one unit of work of the {@link WorldStore}, deduplicated by event id inside
 * it, so a redelivered event is applied exactly once even across replicas.
 */
import type {
  WorldBus,
  WorldDelivery,
  WorldPublishedTopic,
  WorldSubscription,
} from './bus-port.js';
import { deterministicEventId } from '../protocol/index.js';
import { FleetgateError, assertNever, isStoreUnavailable } from '../protocol/index.js';
import type { FleetgateTopics, RejectedDeltaEntry } from '../protocol/index.js';
import { FORBIDDEN_PATH_SEGMENTS, LIMITS } from '../protocol/index.js';
import { applyDeltaAt, growthOf } from './apply.js';
import { jsonLength } from './json-length.js';
import type { PathNeed } from './value-rows.js';
import { DomainsFull, domainFullRejection, rejectionEmissions } from './emissions.js';
import { PathCache } from './path-cache.js';
import type { ParsedEvent, RecordBase, WorldStateDeltaEnvelope } from './parse-event.js';
import { appliedRecord, parseEvent, rejectedRecord, safeSnapshot } from './parse-event.js';
import { replayRecords } from './replay.js';
import type { JsonObject } from './json.js';
import { cloneJsonObject, copyJsonValue, isPlainObject, toJsonValue } from './json.js';
import type {
  AuditRecord,
  DomainSnapshot,
  HistoryQuery,
  LoadedDomain,
  NewAuditRecord,
  PruneResult,
  StoredDomain,
  WorldEmission,
  WorldStore,
  WorldUnitOfWork,
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

/** What one unit of work collects while it applies its events. */
interface UnitOutput {
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

/** The empty domain: `{ data: {} }`. */
export function emptyDomainState(): JsonObject {
  return { data: {} };
}

function checkSeed(name: string, seed: unknown): JsonObject {
  const copy = toJsonValue(seed);
  if (!copy.ok || !isPlainObject(copy.value)) {
    throw new FleetgateError(
      'FLEETGATE_WORLD_SEED_INVALID',
      `Seed of world domain ${JSON.stringify(name)}: ${copy.ok ? 'must be a JSON object' : copy.reason}`,
      { details: { domain: name } },
    );
  }
  if (FORBIDDEN_PATH_SEGMENTS.has(name) || !/^[^\s.]+$/u.test(name)) {
    throw new FleetgateError(
      'FLEETGATE_WORLD_SEED_INVALID',
      `World domain name ${JSON.stringify(name)} is not allowed`,
      { details: { domain: name } },
    );
  }
  return copy.value;
}

/** Resolves after `ms`, or as soon as one of the signals aborts. */
function pause(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<void> {
  return new Promise<void>((resolve) => {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    const done = (): void => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of live) s.addEventListener('abort', done, { once: true });
  });
}

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
 *   store: createSqlWorldStore({ db: store.db, kind: store.kind, onCommitted: relay.notify }),
 *   bus,
 *   seeds: { ci: { data: { blockedPRs: 0 } } },
 *   retention: { auditMaxAgeMs: 30 * 86_400_000, intervalMs: 3_600_000 },
 * });
 * await world.start();
 * (await world.getDomain('ci'))?.state; // { data: { blockedPRs: 0 } }
 * ```
 */
export function createWorldMaterialiser(options: WorldMaterialiserOptions): WorldMaterialiser {
  const { store, bus } = options;
  const now = options.now ?? Date.now;
  const auditMax = options.auditValueMaxBytes ?? DEFAULT_AUDIT_VALUE_MAX_BYTES;
  const maxEventBytes = options.maxEventBytes ?? LIMITS.eventBytes;
  const maxDomainBytes = options.maxDomainBytes ?? DEFAULT_MAX_DOMAIN_BYTES;
  const seeds = new Map<string, JsonObject>();
  for (const [name, seed] of Object.entries(options.seeds ?? {}))
    seeds.set(name, checkSeed(name, seed));

  const paths = new PathCache();
  let subscription: WorldSubscription | undefined;
  let timer: NodeJS.Timeout | undefined;
  const retry = options.retry ?? {};
  const initialDelay = retry.initialDelayMs ?? 100;
  const maxDelay = retry.maxDelayMs ?? 5_000;
  /** Aborted by stop(): a wait for the store ends at once. */
  let stopping = new AbortController();

  /**
   * Applies a delivered event — with the events queued behind it when the bus lets the handler
   * take them (the in-memory bus), in one unit of work — waiting out a store outage (see
   * {@link WorldRetry}). A malformed event is reported on its own; a batch whose unit of work fails
   * is applied again one event at a time, so one bad event never takes the others down.
   */
  async function applyDelivered(
    event: WorldStateDeltaEnvelope,
    delivery: WorldDelivery | undefined,
  ): Promise<void> {
    const more = delivery?.takeQueued?.(MAX_BATCH - 1) as WorldStateDeltaEnvelope[] | undefined;
    if (more === undefined || more.length === 0) return applyWithRetry([event]);
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
      if (valid.length > 0) await applyWithRetry(valid);
    } catch (error) {
      if (valid.length === 1 || isGivenUp()) throw error;
      for (const e of valid) {
        try {
          await applyWithRetry([e]);
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
  function isGivenUp(): boolean {
    return stopping.signal.aborted || retry.signal?.aborted === true;
  }

  /** Applies events in one unit of work, waiting out a store outage (see {@link WorldRetry}). */
  async function applyWithRetry(events: readonly WorldStateDeltaEnvelope[]): Promise<void> {
    let delay = initialDelay;
    for (let attempt = 1; ; attempt += 1) {
      try {
        await applyEvents(events);
        return;
      } catch (error) {
        if (!isStoreUnavailable(error) || isGivenUp()) throw error;
        retry.onRetry?.(error, attempt, delay);
        await pause(delay, [stopping.signal, retry.signal]);
        delay = Math.min(maxDelay, delay * 2);
      }
    }
  }

  function initDomain(at: number): (name: string) => StoredDomain {
    return (name) => {
      const seed = seeds.get(name);
      const state = seed === undefined ? emptyDomainState() : cloneJsonObject(seed);
      return {
        name,
        version: 0,
        state,
        updatedAt: at,
        base: cloneJsonObject(state),
        baseVersion: 0,
      };
    };
  }

  async function applyEvents(events: readonly WorldStateDeltaEnvelope[]): Promise<ApplyReport[]> {
    const parsed = events.map(parseEvent);
    const at = now();
    const { result, emitted } = await store.unitOfWork((uow) => applyInUnit(uow, parsed, at));
    for (const emission of emitted) {
      const published = publishEmission(emission);
      if (published !== undefined) await published;
    }
    return result;
  }

  /** The unit of work of {@link applyEvents}: claims the events, applies the fresh ones, writes. */
  async function applyInUnit(
    uow: WorldUnitOfWork,
    parsed: readonly ParsedEvent[],
    at: number,
  ): Promise<ApplyReport[]> {
    const fresh = await uow.claim(
      parsed.map((e) => e.envelope.id),
      at,
    );
    const { names, needs } = domainsOf(parsed, fresh);
    const loaded = await uow.load(names, initDomain(at), needs);
    const out: UnitOutput = { changed: new Set(), audit: [], emissions: [] };
    const reports: ApplyReport[] = [];
    // An id twice in one batch applies once (the claim returned it once); one event needs no check.
    const seen = parsed.length > 1 ? new Set<string>() : undefined;
    for (const e of parsed) reports.push(applyEvent(e, fresh, seen, loaded, at, out));
    const saved: StoredDomain[] = [];
    for (const name of out.changed) saved.push(loaded.get(name)!.domain);
    await uow.save(saved);
    const unused: string[] = [];
    loaded.forEach((l, name) => {
      if (l.created && !out.changed.has(name)) unused.push(name);
    });
    // Each call is a promise to await: none when there is nothing to remove, record or emit.
    if (unused.length > 0) await uow.discard(unused);
    // Audit rows in the order the entries were reported within each event.
    if (out.audit.length > 0) await uow.audit(out.audit);
    if (out.emissions.length > 0) await uow.emit(out.emissions);
    return reports;
  }

  /**
   * The domains the fresh events' entries touch, and — for a store that loads by path — the paths
   * and ops of each domain's entries (such a store loads those paths, not whole domains).
   */
  function domainsOf(
    parsed: readonly ParsedEvent[],
    fresh: ReadonlySet<string>,
  ): { names: string[]; needs: Map<string, PathNeed[]> | undefined } {
    const needs = store.loadsByPath === true ? new Map<string, PathNeed[]>() : undefined;
    const names = new Set<string>();
    for (const e of parsed) {
      if (!fresh.has(e.envelope.id)) continue;
      for (const x of e.entries) {
        names.add(x.domain);
        if (needs === undefined) continue;
        let list = needs.get(x.domain);
        if (list === undefined) needs.set(x.domain, (list = []));
        const segments = paths.segments(x.path);
        if (segments !== undefined) list.push({ segments, op: x.op });
      }
    }
    return { names: [...names], needs };
  }

  /**
   * Applies one parsed event to the loaded domains; appends its audit records (in entry order),
   * its emissions and the domains it changed to `out`.
   */
  function applyEvent(
    e: ParsedEvent,
    fresh: ReadonlySet<string>,
    seen: Set<string> | undefined,
    loaded: ReadonlyMap<string, LoadedDomain>,
    at: number,
    out: UnitOutput,
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
    const domainsFull = applyEntries(e, base, loaded, touched, report, out);
    if (e.rejected.length > 0) {
      recordUnparsed(e, base, report, out.audit);
      // Entries that did not parse interleave with the others: back in reported order. (Without
      // them the records already are in that order.)
      const mine = out.audit.splice(first).sort((a, b) => a.index - b.index);
      for (const record of mine) out.audit.push(record);
    }
    emitFor(e, touched, domainsFull, report, out.emissions);
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
  ): DomainsFull | undefined {
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
        rejectEntry(entry, outcome.reason, base, report, out.audit);
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
  ): void {
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

  /**
   * Publishes one emission: through `publishNow` when the bus has it (nothing to await, undefined
   * comes back), else through `publish` (its promise comes back).
   */
  function publishEmission(emission: WorldEmission): Promise<unknown> | undefined {
    const options = { id: emission.id, correlationId: emission.correlationId };
    switch (emission.topic) {
      case 'world.state.updated':
        return send(emission.topic, emission.payload, options);
      case 'world.state.delta.rejected':
        return send(emission.topic, emission.payload, options);
      case 'ops.alert.world_domain_full':
        return send(emission.topic, emission.payload, options);
      default:
        return assertNever(emission, 'world emission');
    }
  }

  function send<T extends WorldPublishedTopic>(
    topic: T,
    payload: FleetgateTopics[T],
    options: { id: string; correlationId: string },
  ): Promise<unknown> | undefined {
    if (bus.publishNow === undefined) return bus.publish(topic, payload, options);
    bus.publishNow(topic, payload, options);
    return undefined;
  }

  async function prune(): Promise<PruneResult> {
    const at = now();
    const retention = options.retention ?? {};
    return store.prune({
      before:
        retention.auditMaxAgeMs === undefined
          ? Number.NEGATIVE_INFINITY
          : at - retention.auditMaxAgeMs,
      eventIdsBefore: at - (retention.eventIdMaxAgeMs ?? DEFAULT_EVENT_ID_MAX_AGE_MS),
      fold: (base, applied) => replayRecords(base, applied),
    });
  }

  return {
    async start() {
      if (subscription !== undefined) return;
      const at = now();
      for (const [name, seed] of seeds) await store.seed(name, seed, at);
      stopping = new AbortController();
      subscription = await bus.subscribe(
        'world.state.delta',
        (event, delivery) => applyDelivered(event, delivery),
        // `all`: a new durable consumer starts with every event the bus still retains (applying
        // an event twice is impossible, so nothing is lost by starting early); an existing one
        // resumes where it left off.
        {
          name: options.subscriptionName ?? WORLD_MATERIALISER_SUBSCRIPTION,
          durable: true,
          from: 'all',
        },
      );
      const interval = options.retention?.intervalMs;
      if (interval !== undefined && interval > 0) {
        timer = setInterval(() => {
          prune().catch((error: unknown) => {
            bus
              .publish('system.error', {
                source: 'world-materialiser:retention',
                message: error instanceof Error ? error.message : String(error),
              })
              .catch(() => undefined);
          });
        }, interval);
        timer.unref();
      }
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      stopping.abort();
      const sub = subscription;
      subscription = undefined;
      await sub?.unsubscribe();
    },
    async apply(event) {
      const [report] = await applyEvents([event]);
      return report!;
    },
    applyBatch: applyEvents,
    async getWorld() {
      const domains = await store.domains();
      return Object.fromEntries(domains.map((d) => [d.name, toSnapshot(d)]));
    },
    async getDomain(name) {
      const domain = await store.domain(name);
      return domain === undefined ? undefined : toSnapshot(domain);
    },
    history: (domain, query) => store.history(domain, query),
    async replay(name) {
      const domain = await store.domain(name);
      if (domain === undefined) return undefined;
      const records = await store.appliedSinceBase(name);
      const state = replayRecords(cloneJsonObject(domain.base), records);
      const last = records[records.length - 1];
      return {
        name,
        version: last?.version ?? domain.baseVersion,
        state,
        updatedAt: last?.recordedAt ?? domain.updatedAt,
      };
    },
    prune,
  };
}
