import type { EventBus } from '../bus/index.js';
import { warnUnreportedError } from '../bus/index.js';
import { deterministicEventId, FleetgateError, isFleetgateError } from '../protocol/index.js';
import { parseCardJson, readDeclarations } from '../protocol/index.js';
import type { AgentEntry } from './agent-config.js';
import type { CardCache } from './card-cache.js';
import type { CardSource } from './card-source.js';
import type { DeclarationBook } from './declaration-book.js';
import type { AgentDirectory, DirectoryChange } from './directory.js';
import { unknownAgent } from './directory.js';
import type { AgentCardState, LoadedAgent, RefreshOutcome } from './card-state.js';
import {
  errorInfo,
  loadedAgent,
  newCardState,
  publicCardState,
  unavailableError,
  type CardState,
} from './card-state.js';
import { createSemaphore } from './semaphore.js';

/** Options of {@link createCardRefresher}. */
export interface CardRefresherOptions {
  directory: AgentDirectory;
  source: CardSource;
  /** Receives every card read (its only writer is the book). */
  book: Pick<DeclarationBook, 'apply' | 'restore' | 'setStale' | 'clear'>;
  bus?: Pick<EventBus, 'publish'>;
  /**
   * Where a failure that is not a card's fault goes (a publish or a cache write that threw).
   * Default: published on `system.error`, or a process warning when that fails too.
   */
  onError?: (error: unknown, context: { agent?: string; topic?: string; source: string }) => void;
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
  /** Keeps last good cards across restarts (the store's {@link createStoreCardCache}). */
  cache?: CardCache;
  now?: () => number;
  random?: () => number;
}

/** Keeps every agent's card fresh; see {@link createCardRefresher}. */
export interface CardRefresher {
  /** Loads cached cards, refreshes every agent once, then keeps them on schedule. */
  start(): Promise<RefreshOutcome[]>;
  /** Stops the schedule; refreshes in progress finish. */
  stop(): void;
  /** Refreshes every agent now, `onProgress` after each. */
  refreshAll(onProgress?: (outcome: RefreshOutcome) => void): Promise<RefreshOutcome[]>;
  /**
   * Refreshes one agent now (joins a refresh already in progress).
   *
   * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN`
   */
  refresh(name: string): Promise<RefreshOutcome>;
  /** Resolves when no refresh is in progress. */
  whenIdle(): Promise<void>;
  state(name: string): AgentCardState | undefined;
  /** Every agent's card state, in directory order. */
  states(): AgentCardState[];
  /** The fleet client's view of an agent; undefined until its card loaded. */
  get(name: string): LoadedAgent | undefined;
  /**
   * Why `get` answers nothing for a configured agent: `FLEETGATE_AGENT_UNAVAILABLE` with the
   * last fetch error. Undefined for an agent that is not configured (unknown) or is loaded.
   */
  unavailable(name: string): FleetgateError | undefined;
}

type Publication = { topic: string; payload: Record<string, unknown>; id?: string };

const DEFAULT_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Creates the card refresher: every agent's card is fetched on start and every
 * `refreshIntervalMs` (with jitter, bounded concurrency, and exponential backoff after failures),
 * parsed once, validated before it replaces the last good card, and handed to the declaration
 * book. Repeated failures mark an agent stale. The next refresh is always scheduled, whatever a
 * publish or a cache write did; their failures go to `onError`.
 */
export function createCardRefresher(options: CardRefresherOptions): CardRefresher {
  const o = {
    refreshIntervalMs: DEFAULT_INTERVAL_MS,
    jitter: 0.1,
    concurrency: 16,
    staleAfterFailures: 3,
    backoffBaseMs: 5000,
    now: Date.now,
    random: Math.random,
    ...options,
  };
  const { directory, source, book, bus, cache } = o;
  const onError =
    o.onError ??
    ((error: unknown, context: { agent?: string; topic?: string; source: string }): void => {
      const message = error instanceof Error ? error.message : String(error);
      if (bus === undefined) {
        warnUnreportedError(error, context);
        return;
      }
      // The reporter never throws: a bus that throws (even synchronously) while it is reporting a
      // failed publish must not turn into an unhandled rejection of a scheduled refresh.
      let report: Promise<unknown>;
      try {
        report = bus.publish('system.error', {
          source: `fleet:${context.source}`,
          message: context.agent === undefined ? message : `${context.agent}: ${message}`,
          ...(isFleetgateError(error) ? { code: error.code } : {}),
          ...(context.topic === undefined ? {} : { topic: context.topic }),
        });
      } catch (again) {
        warnUnreportedError(again, { ...context, error: message });
        return;
      }
      report.catch((again: unknown) => warnUnreportedError(again, { ...context, error: message }));
    });
  const states = new Map<string, CardState>();
  const inflight = new Map<string, Promise<RefreshOutcome>>();
  const timers = new Map<string, ReturnType<typeof setTimeout>>();
  const acquire = createSemaphore(o.concurrency);
  let running = false;
  let cacheLoaded: Promise<void> | undefined;
  let unsubscribe: (() => void) | undefined;

  function track(name: string): CardState {
    let state = states.get(name);
    if (state === undefined) {
      state = newCardState(name);
      states.set(name, state);
    }
    return state;
  }
  for (const agent of directory.list()) track(agent.name);

  async function loadCache(): Promise<void> {
    if (cache === undefined) return;
    let rows;
    try {
      rows = await cache.load();
    } catch (error) {
      onError(error, { source: 'card-cache' }); // start without the cache: every card is fetched
      return;
    }
    for (const cached of rows) {
      const agent = directory.get(cached.agent);
      const state = states.get(cached.agent);
      if (agent === undefined || state === undefined) continue;
      if (state.card !== undefined || agent.url !== cached.url) continue;
      let card: unknown;
      try {
        card = parseCardJson(cached.text, `cache:${cached.agent}`);
      } catch {
        continue; // a cache row that no longer parses is simply not used; the refresh replaces it
      }
      const d = readDeclarations(card);
      book.restore(cached.agent, d, { cardDigest: cached.digest, fetchedAt: cached.fetchedAt });
      Object.assign(state, {
        card,
        declarations: d,
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
    await loadFailures();
  }

  /** Restores the failure counts of the last runs, so `stale` carries across them. */
  async function loadFailures(): Promise<void> {
    if (cache?.loadFailures === undefined) return;
    let rows;
    try {
      rows = await cache.loadFailures();
    } catch (error) {
      onError(error, { source: 'card-cache' }); // counts start at 0, as without a cache
      return;
    }
    for (const row of rows) {
      const state = states.get(row.agent);
      if (state === undefined || state.failures > 0) continue;
      if (directory.get(row.agent)?.url !== row.url) continue;
      state.failures = row.failures;
      state.lastError = row.lastError;
      state.lastAttemptAt = row.lastAttemptAt;
      state.status = row.failures >= o.staleAfterFailures ? 'stale' : 'failed';
      if (state.status === 'stale') book.setStale(row.agent, true);
    }
  }

  /** Runs a side effect whose failure must not fail the refresh: reported, never swallowed. */
  async function guarded(
    agent: string,
    what: string,
    effect: () => Promise<unknown>,
  ): Promise<void> {
    try {
      await effect();
    } catch (error) {
      onError(error, { agent, source: what });
    }
  }

  async function publishAll(agent: string, publications: Publication[]): Promise<void> {
    if (bus === undefined) return;
    for (const p of publications) {
      await guarded(agent, `publish:${p.topic}`, () =>
        // The refresher's topics are all in the topic map; their payloads are built above.
        (bus.publish as (t: string, v: unknown, x?: { id: string }) => Promise<unknown>)(
          p.topic,
          p.payload,
          p.id === undefined ? undefined : { id: p.id },
        ),
      );
    }
  }

  /** Fetches and applies one card. Never throws: a failure is an outcome. */
  async function fetchAndApply(
    agent: AgentEntry,
    publications: Publication[],
  ): Promise<RefreshOutcome> {
    const state = track(agent.name);
    const now = o.now();
    state.lastAttemptAt = now;
    try {
      // The directory's entry is the fetch target (name, url, headers): no copy per refresh.
      const fetched = await source.fetch(agent, state.card === undefined ? {} : state.validators);
      if (directory.get(agent.name) === undefined || states.get(agent.name) !== state) {
        const error = { code: 'FLEETGATE_AGENT_UNKNOWN', message: 'removed during refresh' };
        return { agent: agent.name, result: 'failed', error };
      }
      let outcome: RefreshOutcome;
      if (fetched.status === 'not-modified' || fetched.digest === state.digest) {
        // Unchanged: keep the card and its declarations, no re-parse.
        if (fetched.status === 'fetched') state.validators = fetched.validators;
        outcome = { agent: agent.name, result: 'unchanged', digest: state.digest ?? '' };
        if (cache !== undefined)
          await guarded(agent.name, 'card-cache', () => cache.touch(agent.name, now));
      } else {
        const card = parseCardJson(fetched.text, fetched.url);
        const d = readDeclarations(card);
        const fatal = d.diagnostics.find((x) => x.path === '$');
        if (fatal !== undefined) {
          state.diagnostics = d.diagnostics;
          throw new FleetgateError('FLEETGATE_CARD_INVALID', `${fetched.url}: ${fatal.message}`);
        }
        const previousDigest = state.digest;
        const provenance = { cardDigest: fetched.digest, fetchedAt: now };
        const changes = await book.apply(agent.name, d, provenance);
        state.card = card;
        state.declarations = d;
        state.digest = fetched.digest;
        state.diagnostics = d.diagnostics;
        state.lastChangedAt = now;
        state.validators = fetched.validators;
        // Nothing is built for a bus that is not there (an event id is a hash).
        const announced = bus === undefined ? [] : changes;
        for (const change of announced) {
          publications.push({
            topic: 'fleet.declaration.changed',
            payload: { ...change },
            id: deterministicEventId(
              'fleet.declaration.changed',
              agent.name,
              change.skill,
              change.extension,
              fetched.digest,
            ),
          });
        }
        if (cache !== undefined) {
          await guarded(agent.name, 'card-cache', () =>
            cache.save({
              agent: agent.name,
              url: agent.url,
              text: fetched.text,
              digest: fetched.digest,
              etag: fetched.validators.etag ?? null,
              lastModified: fetched.validators.lastModified ?? null,
              fetchedAt: now,
              changedAt: now,
            }),
          );
        }
        outcome = { agent: agent.name, result: 'changed', digest: fetched.digest };
        if (previousDigest !== undefined) outcome.previousDigest = previousDigest;
      }
      if (state.status === 'stale') book.setStale(agent.name, false);
      if (state.failures > 0 && cache?.clearFailures !== undefined) {
        await guarded(agent.name, 'card-cache', () => cache.clearFailures!(agent.name));
      }
      state.status = 'fresh';
      state.failures = 0;
      state.lastError = undefined;
      state.lastFetchedAt = now;
      if (bus !== undefined) {
        publications.push({
          topic: 'fleet.card.refreshed',
          payload: {
            agent: agent.name,
            digest: state.digest,
            changed: outcome.result === 'changed',
          },
        });
      }
      return outcome;
    } catch (error) {
      const info = errorInfo(error);
      state.failures += 1;
      state.lastError = info;
      const payload = {
        agent: agent.name,
        digest: state.digest,
        error: info,
        failures: state.failures,
      };
      publications.push({ topic: 'fleet.card.failed', payload });
      if (state.failures >= o.staleAfterFailures && state.status !== 'stale') {
        // Marked before anything is published: a failing bus never keeps an agent fresh.
        book.setStale(agent.name, true);
        publications.push({ topic: 'fleet.agent.stale', payload });
      }
      state.status = state.failures >= o.staleAfterFailures ? 'stale' : 'failed';
      if (cache?.saveFailures !== undefined) {
        const record = {
          agent: agent.name,
          url: agent.url,
          failures: state.failures,
          lastError: info,
          lastAttemptAt: now,
        };
        await guarded(agent.name, 'card-cache', () => cache.saveFailures!(record));
      }
      return { agent: agent.name, result: 'failed', error: info };
    }
  }

  function schedule(name: string): void {
    clearTimeout(timers.get(name));
    timers.delete(name);
    const state = states.get(name);
    if (!running || state === undefined || directory.get(name) === undefined) return;
    const interval = o.refreshIntervalMs;
    const base =
      state.failures === 0
        ? interval
        : Math.min(interval, o.backoffBaseMs * 2 ** (state.failures - 1));
    const delay = Math.max(0, Math.round(base * (1 + o.jitter * (2 * o.random() - 1))));
    state.nextRefreshAt = o.now() + delay;
    const timer = setTimeout(() => {
      timers.delete(name);
      refresh(name).catch((error: unknown) => onError(error, { agent: name, source: 'refresh' }));
    }, delay);
    timer.unref?.();
    timers.set(name, timer);
  }

  async function refreshNow(agent: AgentEntry, loaded: Promise<void>): Promise<RefreshOutcome> {
    try {
      await loaded;
      const publications: Publication[] = [];
      const outcome = await acquire(() => fetchAndApply(agent, publications));
      // Published outside the fetch slot, so a slow bus never holds up other fetches.
      if (bus !== undefined && publications.length > 0) await publishAll(agent.name, publications);
      return outcome;
    } finally {
      inflight.delete(agent.name);
      // Always: whatever happened above, this agent's next refresh is on the schedule.
      schedule(agent.name);
    }
  }

  function refresh(name: string): Promise<RefreshOutcome> {
    const agent = directory.get(name);
    if (agent === undefined) return Promise.reject(unknownAgent(name));
    const current = inflight.get(name);
    if (current !== undefined) return current;
    cacheLoaded ??= loadCache();
    const promise = refreshNow(agent, cacheLoaded);
    inflight.set(name, promise);
    return promise;
  }

  function onDirectoryChange(change: DirectoryChange): void {
    const name = change.agent.name;
    switch (change.type) {
      case 'removed':
        if (cache !== undefined) void guarded(name, 'card-cache', () => cache.delete(name));
        clearTimeout(timers.get(name));
        timers.delete(name);
        states.delete(name);
        book.clear(name);
        return;
      case 'updated':
        // Another URL is another agent's card: forget validators so the next fetch is unconditional.
        if (change.previous.url !== change.agent.url) track(name).validators = {};
        break;
      case 'added':
        break;
      default: {
        const never: never = change;
        throw new Error(`unexpected directory change ${String(never)}`);
      }
    }
    track(name);
    refresh(name).catch((error: unknown) => onError(error, { agent: name, source: 'refresh' }));
  }

  function state(name: string): AgentCardState | undefined {
    const s = states.get(name);
    return s === undefined ? undefined : publicCardState(s);
  }

  return {
    async start() {
      if (running) return [];
      running = true;
      unsubscribe = directory.onChange(onDirectoryChange);
      return this.refreshAll();
    },
    stop() {
      running = false;
      unsubscribe?.();
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
    refreshAll(onProgress) {
      const agents = directory.list();
      if (onProgress === undefined) return Promise.all(agents.map((agent) => refresh(agent.name)));
      return Promise.all(
        agents.map(async (agent) => {
          const outcome = await refresh(agent.name);
          onProgress(outcome);
          return outcome;
        }),
      );
    },
    refresh,
    async whenIdle() {
      while (inflight.size > 0) await Promise.allSettled([...inflight.values()]);
    },
    state,
    states: () =>
      directory.list().flatMap((a) => {
        const s = state(a.name);
        return s === undefined ? [] : [s];
      }),
    get(name) {
      const agent = directory.get(name);
      const s = states.get(name);
      return agent === undefined || s === undefined ? undefined : loadedAgent(agent, s);
    },
    unavailable(name) {
      const s = states.get(name);
      if (directory.get(name) === undefined || s === undefined) return undefined;
      return unavailableError(s);
    },
  };
}
