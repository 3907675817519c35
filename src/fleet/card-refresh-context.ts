/**
 * The card refresher's state (`card-refresher.ts`), in one object its parts share: the cache
 * restore (`card-cache-restore.ts`), the fetch (`card-fetch-apply.ts`) and the schedule
 * (`card-refresh-schedule.ts`).
 */
import type { EventBus } from '../bus/index.js';
import type { CardCache } from './card-cache.js';
import type { CardSource } from './card-source.js';
import type { CardState, RefreshOutcome } from './card-state.js';
import { newCardState } from './card-state.js';
import type { RefreshErrorHandler } from './card-refresh-errors.js';
import type { DeclarationBook } from './declaration-book.js';
import type { AgentDirectory } from './directory.js';

/** An event a refresh publishes once its fetch slot is free. */
export type Publication = { topic: string; payload: Record<string, unknown>; id?: string };

/** What the refresher is made of: its options with their defaults, and what it keeps per agent. */
export interface CardRefreshContext {
  readonly directory: AgentDirectory;
  readonly source: CardSource;
  /** Receives every card read (its only writer is the book). */
  readonly book: Pick<DeclarationBook, 'apply' | 'restore' | 'setStale' | 'clear'>;
  readonly bus: Pick<EventBus, 'publish'> | undefined;
  readonly cache: CardCache | undefined;
  readonly onError: RefreshErrorHandler;
  readonly refreshIntervalMs: number;
  readonly jitter: number;
  readonly staleAfterFailures: number;
  readonly backoffBaseMs: number;
  readonly now: () => number;
  readonly random: () => number;
  /** Runs a fetch in one of the `concurrency` slots. */
  readonly acquire: <T>(task: () => Promise<T>) => Promise<T>;
  readonly states: Map<string, CardState>;
  readonly inflight: Map<string, Promise<RefreshOutcome>>;
  readonly timers: Map<string, ReturnType<typeof setTimeout>>;
  /** True between `start` and `stop`: only then is a next refresh scheduled. */
  running: boolean;
  /** The cache, loaded once before the first refresh. */
  cacheLoaded: Promise<void> | undefined;
}

/** The state of an agent's card, made the first time the agent is seen. */
export function trackCardState(ctx: CardRefreshContext, name: string): CardState {
  let state = ctx.states.get(name);
  if (state === undefined) {
    state = newCardState(name);
    ctx.states.set(name, state);
  }
  return state;
}
