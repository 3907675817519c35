/**
 * The card refresher: its options, its interface and the factory that wires its parts — the cache
 * restore (`card-cache-restore.ts`), one refresh (`card-fetch-apply.ts`) and the schedule
 * (`card-refresh-schedule.ts`), sharing one state (`card-refresh-context.ts`).
 */
import type { EventBus } from '../bus/index.js';
import type { FleetgateError } from '../protocol/index.js';
import type { CardCache } from './card-cache.js';
import type { CardSource } from './card-source.js';
import type { CardRefreshContext } from './card-refresh-context.js';
import { trackCardState } from './card-refresh-context.js';
import { refreshErrorReporter } from './card-refresh-errors.js';
import { onDirectoryChange, refresh } from './card-refresh-schedule.js';
import type { DeclarationBook } from './declaration-book.js';
import type { AgentDirectory } from './directory.js';
import type { AgentCardState, LoadedAgent, RefreshOutcome } from './card-state.js';
import { loadedAgent, publicCardState, unavailableError } from './card-state.js';
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
  const { directory, bus } = o;
  const ctx: CardRefreshContext = {
    directory,
    source: o.source,
    book: o.book,
    bus,
    cache: o.cache,
    onError: o.onError ?? refreshErrorReporter(bus),
    refreshIntervalMs: o.refreshIntervalMs,
    jitter: o.jitter,
    staleAfterFailures: o.staleAfterFailures,
    backoffBaseMs: o.backoffBaseMs,
    now: o.now,
    random: o.random,
    acquire: createSemaphore(o.concurrency),
    states: new Map(),
    inflight: new Map(),
    timers: new Map(),
    running: false,
    cacheLoaded: undefined,
  };
  const { states, inflight, timers } = ctx;
  let unsubscribe: (() => void) | undefined;
  for (const agent of directory.list()) trackCardState(ctx, agent.name);

  function state(name: string): AgentCardState | undefined {
    const s = states.get(name);
    return s === undefined ? undefined : publicCardState(s);
  }

  return {
    async start() {
      if (ctx.running) return [];
      ctx.running = true;
      unsubscribe = directory.onChange((change) => onDirectoryChange(ctx, change));
      return this.refreshAll();
    },
    stop() {
      ctx.running = false;
      unsubscribe?.();
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
    refreshAll(onProgress) {
      const agents = directory.list();
      if (onProgress === undefined)
        return Promise.all(agents.map((agent) => refresh(ctx, agent.name)));
      return Promise.all(
        agents.map(async (agent) => {
          const outcome = await refresh(ctx, agent.name);
          onProgress(outcome);
          return outcome;
        }),
      );
    },
    refresh: (name) => refresh(ctx, name),
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
