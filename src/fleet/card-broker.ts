import { scaleSeverity } from '../alerts/index.js';
import type { EventBus } from '../bus/index.js';
import { deterministicEventId } from '../protocol/index.js';
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import type { BlastRadius, Declarations, Diagnostic, HitlMode } from '../protocol/index.js';
import {
  BLAST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  maxHitlMode,
  maxRadius,
  parseCardJson,
  readDeclarations,
} from '../protocol/index.js';
import type { AgentEntry } from './agent-config.js';
import type { BlastRegistry, EffectDomainRegistry, HitlModeRegistry } from './blast-registry.js';
import type { CardCache } from './card-cache.js';
import type { CardSource, CardValidators } from './card-source.js';
import type { AgentDirectory, DirectoryChange } from './directory.js';
import { unknownAgent } from './directory.js';
import type { DeclarationRatchet, RatchetChange } from './ratchet.js';
import { createSemaphore } from './semaphore.js';

/** Card status of an agent. */
export type CardStatus = 'pending' | 'fresh' | 'failed' | 'stale';

/** What the broker knows about one agent's card. */
export interface AgentCardState {
  name: string;
  status: CardStatus;
  /** The last good card (parsed JSON); a new object each time the card changes. */
  card: unknown;
  digest: string | undefined;
  lastFetchedAt: number | undefined;
  lastChangedAt: number | undefined;
  lastAttemptAt: number | undefined;
  nextRefreshAt: number | undefined;
  /** Consecutive failed refreshes. */
  failures: number;
  /** Diagnostics of the last card that was parsed. */
  diagnostics: Diagnostic[];
  /** The error of the last failed refresh. */
  lastError: { code: string; message: string } | undefined;
}

/** The outcome of one refresh. */
export type RefreshOutcome =
  | { agent: string; result: 'changed' | 'unchanged'; digest: string }
  | { agent: string; result: 'failed'; error: { code: string; message: string } };

/** The effective radius of a skill and what it is made of. */
export interface EffectiveRadius {
  /**
   * max(declared, accepted, floor); `undefined` when the skill declares no radius (unknown: the
   * policy applies its unknown rule, then the floor).
   */
  radius: BlastRadius | undefined;
  declared: BlastRadius | undefined;
  /** The level the ratchet holds (a narrowing waits for acknowledgement). */
  accepted: BlastRadius | undefined;
  /** A narrower declared radius waiting for acknowledgement. */
  pending: BlastRadius | undefined;
  floor: BlastRadius | undefined;
  /** True while the card is stale: the policy falls back to its unknown rule. */
  stale: boolean;
}

/** The effective hitl mode of a skill (same ratchet as radii). */
export interface EffectiveHitlMode {
  mode: HitlMode | undefined;
  declared: HitlMode | undefined;
  accepted: HitlMode | undefined;
  pending: HitlMode | undefined;
  vetoTtlMs: number | undefined;
  stale: boolean;
}

/** Learned floors (raised by reconciliation), read alongside the configured ones. */
export interface FloorSource {
  floor(agent: string, skill: string): BlastRadius | undefined;
  /** Increases whenever a floor changes, so the broker's lookup cache knows to recompute. */
  readonly version: number;
}

/** The declaration registries the broker fills. */
export interface FleetRegistries {
  blast: BlastRegistry;
  hitlMode: HitlModeRegistry;
  effectDomain: EffectDomainRegistry;
}

/** Options of {@link CardBroker}. */
export interface CardBrokerOptions {
  directory: AgentDirectory;
  source: CardSource;
  registries: FleetRegistries;
  ratchet: DeclarationRatchet;
  bus?: Pick<EventBus, 'publish'>;
  /** Milliseconds between refreshes of one agent (default 10 minutes). */
  refreshIntervalMs?: number;
  /** ± fraction of the interval added at random so refreshes spread out (default 0.1). */
  jitter?: number;
  /** Most fetches at once (default 16). */
  concurrency?: number;
  /** Consecutive failures after which an agent is stale (default 3). */
  staleAfterFailures?: number;
  /** First retry delay after a failure, doubled per failure, capped at the interval (default 5 s). */
  backoffBaseMs?: number;
  floors?: FloorSource;
  /** Keeps last good cards across restarts (the store's {@link createStoreCardCache}). */
  cache?: CardCache;
  now?: () => number;
  random?: () => number;
}

const DEFAULT_INTERVAL_MS = 10 * 60 * 1000;

function errorInfo(error: unknown): { code: string; message: string } {
  if (isFleetgateError(error)) return { code: error.code, message: error.message };
  return {
    code: 'FLEETGATE_CARD_FETCH_FAILED',
    message: error instanceof Error ? error.message : String(error),
  };
}

/**
 * Keeps every agent's card fresh: fetched on start and every `refreshIntervalMs` (with jitter,
 * bounded concurrency, and exponential backoff after failures), validated before it replaces the
 * last good card, and read into the declaration registries — as a whole, so removed skills
 * disappear. Repeated failures mark an agent stale. A wider radius takes effect at once (and
 * alerts); a narrower one waits for {@link acknowledge}. Implements the fleet client's agent source:
 * a changed card is a new object, which makes the fleet client rebuild that agent's SDK client.
 */
export class CardBroker {
  readonly #o: Required<Omit<CardBrokerOptions, 'bus' | 'floors' | 'cache'>> &
    Pick<CardBrokerOptions, 'bus' | 'floors' | 'cache'>;
  readonly #states = new Map<string, AgentCardState & { validators: CardValidators }>();
  readonly #inflight = new Map<string, Promise<RefreshOutcome>>();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #acquire: ReturnType<typeof createSemaphore>;
  #running = false;
  #cacheLoaded: Promise<void> | undefined;
  /** Effective radii by agent and skill, valid while the versions they were derived from hold. */
  readonly #effective = new Map<string, Map<string, EffectiveRadius>>();
  readonly #effectiveVersions = [-1, -1, -1, -1];
  #unsubscribe: (() => void) | undefined;

  constructor(options: CardBrokerOptions) {
    this.#o = {
      refreshIntervalMs: DEFAULT_INTERVAL_MS,
      jitter: 0.1,
      concurrency: 16,
      staleAfterFailures: 3,
      backoffBaseMs: 5000,
      now: Date.now,
      random: Math.random,
      ...options,
    };
    this.#acquire = createSemaphore(this.#o.concurrency);
    for (const agent of this.#o.directory.list()) this.#track(agent.name);
  }

  /**
   * Loads the cached cards (their declarations apply at once), refreshes every agent once
   * (resolves when all are done), then keeps them on schedule.
   */
  async start(): Promise<RefreshOutcome[]> {
    if (this.#running) return [];
    this.#running = true;
    this.#unsubscribe = this.#o.directory.onChange((change) => this.#onDirectoryChange(change));
    return this.refreshAll();
  }

  /** Stops the schedule; refreshes in progress finish. */
  stop(): void {
    this.#running = false;
    this.#unsubscribe?.();
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  /** Refreshes every agent now, `onProgress` after each. */
  async refreshAll(onProgress?: (outcome: RefreshOutcome) => void): Promise<RefreshOutcome[]> {
    return Promise.all(
      this.#o.directory.list().map(async (agent) => {
        const outcome = await this.refresh(agent.name);
        onProgress?.(outcome);
        return outcome;
      }),
    );
  }

  /**
   * Refreshes one agent now (joins a refresh already in progress).
   *
   * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN`
   */
  refresh(name: string): Promise<RefreshOutcome> {
    const agent = this.#o.directory.get(name);
    if (agent === undefined) return Promise.reject(unknownAgent(name));
    const running = this.#inflight.get(name);
    if (running !== undefined) return running;
    this.#cacheLoaded ??= this.#loadCache();
    const promise = this.#cacheLoaded
      .then(() => this.#acquire(() => this.#refreshNow(agent)))
      .finally(() => {
        this.#inflight.delete(name);
      });
    this.#inflight.set(name, promise);
    return promise;
  }

  /** Resolves when no refresh is in progress. */
  async whenIdle(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight.values()]);
  }

  /** The card state of one agent. */
  state(name: string): AgentCardState | undefined {
    const s = this.#states.get(name);
    if (s === undefined) return undefined;
    const { validators: _validators, ...state } = s;
    return { ...state, diagnostics: [...state.diagnostics] };
  }

  /** The card states of every agent, in directory order. */
  states(): AgentCardState[] {
    return this.#o.directory.list().flatMap((a) => {
      const s = this.state(a.name);
      return s === undefined ? [] : [s];
    });
  }

  /** The fleet client's view of an agent: its configured URL, last good card and auth headers. */
  get(name: string):
    | {
        url: string;
        card: unknown;
        headers: Readonly<Record<string, string>>;
        transport?: 'JSONRPC' | 'HTTP+JSON';
      }
    | undefined {
    const agent = this.#o.directory.get(name);
    const card = this.#states.get(name)?.card;
    if (agent === undefined || card === undefined) return undefined;
    return agent.transport === undefined
      ? { url: agent.url, card, headers: agent.headers }
      : { url: agent.url, card, headers: agent.headers, transport: agent.transport };
  }

  /** The configured floor of a skill, raised by a learned floor when there is one. */
  floor(agent: string, skill: string): BlastRadius | undefined {
    return maxRadius(
      this.#o.directory.get(agent)?.floors[skill],
      this.#o.floors?.floor(agent, skill),
    );
  }

  /**
   * The effective radius of a skill: max(declared, accepted, floor), with staleness. Answers from
   * a cache that any change of the registry, ratchet, directory or floors invalidates (the policy
   * asks on every call, dashboards for every skill).
   */
  effectiveRadius(agent: string, skill: string): EffectiveRadius {
    const o = this.#o;
    const v = this.#effectiveVersions;
    const blast = o.registries.blast.version;
    const ratchet = o.ratchet.version;
    const directory = o.directory.version;
    const floors = o.floors?.version ?? 0;
    if (v[0] !== blast || v[1] !== ratchet || v[2] !== directory || v[3] !== floors) {
      this.#effective.clear();
      v[0] = blast;
      v[1] = ratchet;
      v[2] = directory;
      v[3] = floors;
    }
    let skills = this.#effective.get(agent);
    let found = skills?.get(skill);
    if (found === undefined) {
      found = Object.freeze(this.#computeEffectiveRadius(agent, skill));
      if (skills === undefined) {
        skills = new Map<string, EffectiveRadius>();
        this.#effective.set(agent, skills);
      }
      skills.set(skill, found);
    }
    return found;
  }

  #computeEffectiveRadius(agent: string, skill: string): EffectiveRadius {
    const { declaration, stale } = this.#o.registries.blast.lookup(agent, skill);
    const declared = declaration?.radius;
    const accepted = this.#o.ratchet.accepted('blast', agent, skill);
    const floor = this.floor(agent, skill);
    return {
      radius: declared === undefined ? undefined : maxRadius(declared, accepted, floor),
      declared,
      accepted,
      pending: this.#o.ratchet.pending('blast', agent, skill),
      floor,
      stale,
    };
  }

  /** The domains a skill declared in effect-domain-v1 params; undefined when it declared none. */
  declaredDomains(agent: string, skill: string): readonly string[] | undefined {
    return this.#o.registries.effectDomain.get(agent, skill)?.domains;
  }

  /** The effective hitl mode of a skill: max(declared, accepted), with staleness. */
  effectiveHitlMode(agent: string, skill: string): EffectiveHitlMode {
    const { declaration, stale } = this.#o.registries.hitlMode.lookup(agent, skill);
    const declared = declaration?.mode;
    const accepted = this.#o.ratchet.accepted('hitl', agent, skill);
    return {
      mode: declared === undefined ? undefined : maxHitlMode(declared, accepted),
      declared,
      accepted,
      pending: this.#o.ratchet.pending('hitl', agent, skill),
      vetoTtlMs: declaration?.vetoTtlMs,
      stale,
    };
  }

  /**
   * An operator accepts the narrower radius and/or mode a skill now declares. Returns what took
   * effect; throws when nothing was pending.
   *
   * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN`, `FLEETGATE_NOTHING_TO_ACKNOWLEDGE`
   */
  async acknowledge(
    agent: string,
    skill: string,
    by = 'operator',
  ): Promise<{ radius?: BlastRadius; mode?: HitlMode }> {
    if (this.#o.directory.get(agent) === undefined) throw unknownAgent(agent);
    const radius = await this.#o.ratchet.acknowledge('blast', agent, skill, by);
    const mode = await this.#o.ratchet.acknowledge('hitl', agent, skill, by);
    if (radius === undefined && mode === undefined) {
      throw new FleetgateError(
        'FLEETGATE_NOTHING_TO_ACKNOWLEDGE',
        `${agent}/${skill} has no narrower radius or mode waiting for acknowledgement.`,
        { details: { agent, skill } },
      );
    }
    return { ...(radius === undefined ? {} : { radius }), ...(mode === undefined ? {} : { mode }) };
  }

  /** Skills whose narrower declaration waits for acknowledgement. */
  pendingAcknowledgements(): {
    agent: string;
    skill: string;
    kind: 'blast' | 'hitl';
    accepted: string;
    pending: string;
  }[] {
    return this.#o.ratchet
      .pendingRows()
      .filter((r) => this.#o.directory.get(r.agent) !== undefined)
      .map((r) => ({
        agent: r.agent,
        skill: r.skill,
        kind: r.kind,
        accepted: r.accepted,
        pending: r.pending ?? '',
      }));
  }

  #track(name: string): AgentCardState & { validators: CardValidators } {
    let state = this.#states.get(name);
    if (state === undefined) {
      state = {
        name,
        status: 'pending',
        card: undefined,
        digest: undefined,
        lastFetchedAt: undefined,
        lastChangedAt: undefined,
        lastAttemptAt: undefined,
        nextRefreshAt: undefined,
        failures: 0,
        diagnostics: [],
        lastError: undefined,
        validators: {},
      };
      this.#states.set(name, state);
    }
    return state;
  }

  async #loadCache(): Promise<void> {
    if (this.#o.cache === undefined) return;
    for (const cached of await this.#o.cache.load()) {
      const agent = this.#o.directory.get(cached.agent);
      const state = this.#states.get(cached.agent);
      if (
        agent === undefined ||
        state === undefined ||
        state.card !== undefined ||
        agent.url !== cached.url
      )
        continue;
      let card: unknown;
      try {
        card = parseCardJson(cached.text, `cache:${cached.agent}`);
      } catch {
        continue; // a cache row that no longer parses is simply not used; the refresh replaces it
      }
      const d = readDeclarations(card);
      const provenance = { cardDigest: cached.digest, fetchedAt: cached.fetchedAt };
      this.#o.registries.blast.replaceAgent(cached.agent, d.blast, provenance);
      this.#o.registries.hitlMode.replaceAgent(cached.agent, d.hitlMode, provenance);
      this.#o.registries.effectDomain.replaceAgent(cached.agent, d.effectDomain, provenance);
      Object.assign(state, {
        card,
        digest: cached.digest,
        diagnostics: d.diagnostics,
        lastFetchedAt: cached.fetchedAt,
        lastChangedAt: cached.changedAt,
        validators: {
          ...(cached.etag === null ? {} : { etag: cached.etag }),
          ...(cached.lastModified === null ? {} : { lastModified: cached.lastModified }),
        },
      });
    }
  }

  #onDirectoryChange(change: DirectoryChange): void {
    const name = change.agent.name;
    if (change.type === 'removed') {
      this.#o.cache?.delete(name).catch(() => undefined);
      clearTimeout(this.#timers.get(name));
      this.#timers.delete(name);
      this.#states.delete(name);
      this.#o.registries.blast.clearAgent(name);
      this.#o.registries.hitlMode.clearAgent(name);
      this.#o.registries.effectDomain.clearAgent(name);
      return;
    }
    if (change.type === 'updated' && change.previous.url !== change.agent.url) {
      // Another URL is another agent's card: forget validators so the next fetch is unconditional.
      this.#track(name).validators = {};
    }
    this.#track(name);
    this.refresh(name).catch(() => undefined);
  }

  async #refreshNow(agent: AgentEntry): Promise<RefreshOutcome> {
    const state = this.#track(agent.name);
    const now = this.#o.now();
    state.lastAttemptAt = now;
    let outcome: RefreshOutcome;
    try {
      const fetched = await this.#o.source.fetch(
        { name: agent.name, url: agent.url, headers: agent.headers },
        state.card === undefined ? {} : state.validators,
      );
      if (!this.#isCurrent(agent, state))
        return {
          agent: agent.name,
          result: 'failed',
          error: { code: 'FLEETGATE_AGENT_UNKNOWN', message: 'removed during refresh' },
        };
      if (fetched.status === 'not-modified' || fetched.digest === state.digest) {
        // Unchanged: keep the card and its declarations, no re-parse.
        if (fetched.status === 'fetched') state.validators = fetched.validators;
        outcome = { agent: agent.name, result: 'unchanged', digest: state.digest ?? '' };
        await this.#o.cache?.touch(agent.name, now);
      } else {
        const card = parseCardJson(fetched.text, fetched.url);
        const declarations = readDeclarations(card);
        const fatal = declarations.diagnostics.find((d) => d.path === '$');
        if (fatal !== undefined) {
          state.diagnostics = declarations.diagnostics;
          throw new FleetgateError('FLEETGATE_CARD_INVALID', `${fetched.url}: ${fatal.message}`);
        }
        await this.#apply(agent.name, state, card, declarations, fetched.digest, now);
        state.validators = fetched.validators;
        await this.#o.cache?.save({
          agent: agent.name,
          url: agent.url,
          text: fetched.text,
          digest: fetched.digest,
          etag: fetched.validators.etag ?? null,
          lastModified: fetched.validators.lastModified ?? null,
          fetchedAt: now,
          changedAt: now,
        });
        outcome = { agent: agent.name, result: 'changed', digest: fetched.digest };
      }
      const wasStale = state.status === 'stale';
      state.status = 'fresh';
      state.failures = 0;
      state.lastError = undefined;
      state.lastFetchedAt = now;
      if (wasStale) this.#setStale(agent.name, false);
      await this.#publish('fleet.card.refreshed', {
        agent: agent.name,
        digest: state.digest,
        changed: outcome.result === 'changed',
      });
    } catch (error) {
      const info = errorInfo(error);
      state.failures += 1;
      state.lastError = info;
      const becameStale = state.failures >= this.#o.staleAfterFailures && state.status !== 'stale';
      state.status = state.failures >= this.#o.staleAfterFailures ? 'stale' : 'failed';
      outcome = { agent: agent.name, result: 'failed', error: info };
      await this.#publish('fleet.card.failed', {
        agent: agent.name,
        digest: state.digest,
        error: info,
        failures: state.failures,
      });
      if (becameStale) {
        this.#setStale(agent.name, true);
        await this.#publish('fleet.agent.stale', {
          agent: agent.name,
          digest: state.digest,
          error: info,
          failures: state.failures,
        });
      }
    }
    this.#schedule(agent.name, state);
    return outcome;
  }

  #isCurrent(agent: AgentEntry, state: AgentCardState): boolean {
    return (
      this.#o.directory.get(agent.name) !== undefined && this.#states.get(agent.name) === state
    );
  }

  #setStale(name: string, stale: boolean): void {
    this.#o.registries.blast.setStale(name, stale);
    this.#o.registries.hitlMode.setStale(name, stale);
    this.#o.registries.effectDomain.setStale(name, stale);
  }

  #schedule(name: string, state: AgentCardState): void {
    clearTimeout(this.#timers.get(name));
    this.#timers.delete(name);
    if (!this.#running || this.#o.directory.get(name) === undefined) return;
    const interval = this.#o.refreshIntervalMs;
    const base =
      state.failures === 0
        ? interval
        : Math.min(interval, this.#o.backoffBaseMs * 2 ** (state.failures - 1));
    const delay = Math.max(0, Math.round(base * (1 + this.#o.jitter * (2 * this.#o.random() - 1))));
    state.nextRefreshAt = this.#o.now() + delay;
    const timer = setTimeout(() => {
      this.#timers.delete(name);
      this.refresh(name).catch(() => undefined);
    }, delay);
    timer.unref?.();
    this.#timers.set(name, timer);
  }

  async #apply(
    name: string,
    state: AgentCardState,
    card: unknown,
    d: Declarations,
    digest: string,
    now: number,
  ): Promise<void> {
    const provenance = { cardDigest: digest, fetchedAt: now };
    const { blast, hitlMode, effectDomain } = this.#o.registries;
    const oldBlast = blast.forAgent(name);
    const oldHitl = hitlMode.forAgent(name);
    const oldDomains = effectDomain.forAgent(name);
    const firstCard = state.card === undefined;
    blast.replaceAgent(name, d.blast, provenance);
    hitlMode.replaceAgent(name, d.hitlMode, provenance);
    effectDomain.replaceAgent(name, d.effectDomain, provenance);
    state.card = card;
    state.digest = digest;
    state.diagnostics = d.diagnostics;
    state.lastChangedAt = now;

    const changes: RatchetChange[] = [];
    for (const [skill, decl] of Object.entries(d.blast)) {
      const change = await this.#o.ratchet.observe(
        'blast',
        name,
        skill,
        decl.radius,
        oldBlast.get(skill)?.radius,
      );
      if (change) changes.push(change);
    }
    for (const [skill, decl] of Object.entries(d.hitlMode)) {
      const change = await this.#o.ratchet.observe(
        'hitl',
        name,
        skill,
        decl.mode,
        oldHitl.get(skill)?.mode,
      );
      if (change) changes.push(change);
    }
    for (const change of changes) {
      const extension = change.kind === 'blast' ? BLAST_V1_URI : HITL_MODE_V1_URI;
      await this.#declarationChanged(
        name,
        change.skill,
        extension,
        change.before,
        change.after,
        change.widened,
        change.narrowed,
        digest,
      );
      if (change.kind === 'blast' && change.widened) {
        const radius = change.after as BlastRadius;
        await this.#publish(
          'ops.alert.radius_widened',
          {
            kind: 'radius_widened',
            severity: scaleSeverity('warning', radius),
            agent: name,
            skill: change.skill,
            radius,
            message: `${name}/${change.skill} widened its blast radius from ${String(change.before)} to ${radius}; in effect now`,
            evidence: { before: change.before, after: radius, cardDigest: digest },
          },
          deterministicEventId('ops.alert.radius_widened', name, change.skill, digest),
        );
      }
    }
    if (firstCard) return;
    // Skills whose declaration disappeared are unknown again: say so.
    for (const [skill, decl] of oldBlast) {
      if (d.blast[skill] === undefined)
        await this.#declarationChanged(
          name,
          skill,
          BLAST_V1_URI,
          decl.radius,
          undefined,
          false,
          false,
          digest,
        );
    }
    for (const [skill, decl] of oldHitl) {
      if (d.hitlMode[skill] === undefined)
        await this.#declarationChanged(
          name,
          skill,
          HITL_MODE_V1_URI,
          decl.mode,
          undefined,
          false,
          false,
          digest,
        );
    }
    const skills = new Set([...oldDomains.keys(), ...Object.keys(d.effectDomain)]);
    for (const skill of skills) {
      const before = oldDomains.get(skill)?.domains;
      const after = d.effectDomain[skill]?.domains;
      const b = new Set(before ?? []);
      const a = new Set(after ?? []);
      const widened = [...a].some((x) => !b.has(x));
      const narrowed = [...b].some((x) => !a.has(x));
      if (widened || narrowed)
        await this.#declarationChanged(
          name,
          skill,
          EFFECT_DOMAIN_V1_URI,
          before,
          after,
          widened,
          narrowed,
          digest,
        );
    }
  }

  async #declarationChanged(
    agent: string,
    skill: string,
    extension: string,
    before: unknown,
    after: unknown,
    widened: boolean,
    narrowed: boolean,
    digest: string,
  ): Promise<void> {
    await this.#publish(
      'fleet.declaration.changed',
      { agent, skill, extension, before: before ?? null, after: after ?? null, widened, narrowed },
      deterministicEventId('fleet.declaration.changed', agent, skill, extension, digest),
    );
  }

  async #publish(topic: string, payload: Record<string, unknown>, id?: string): Promise<void> {
    if (this.#o.bus === undefined) return;
    // Topics are checked at the call sites above; the broker's events are all in the topic map.
    await (this.#o.bus.publish as (t: string, p: unknown, o?: { id: string }) => Promise<unknown>)(
      topic,
      payload,
      id === undefined ? undefined : { id },
    );
  }
}
