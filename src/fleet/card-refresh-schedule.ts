/**
 * When the card refresher (`card-refresher.ts`) refreshes an agent: now when asked (joining a
 * refresh in progress), then again after the interval — sooner after a failure, with backoff — and
 * whenever the directory adds or changes the agent.
 */
import type { AgentEntry } from './agent-config.js';
import type { RefreshOutcome } from './card-state.js';
import { loadCache } from './card-cache-restore.js';
import { fetchAndApply, publishAll } from './card-fetch-apply.js';
import type { CardRefreshContext, Publication } from './card-refresh-context.js';
import { trackCardState } from './card-refresh-context.js';
import { guarded } from './card-refresh-errors.js';
import type { DirectoryChange } from './directory.js';
import { unknownAgent } from './directory.js';

/** Puts an agent's next refresh on the schedule (while the refresher runs). */
function schedule(ctx: CardRefreshContext, name: string): void {
  const { timers, onError } = ctx;
  clearTimeout(timers.get(name));
  timers.delete(name);
  const state = ctx.states.get(name);
  if (!ctx.running || state === undefined || ctx.directory.get(name) === undefined) return;
  const interval = ctx.refreshIntervalMs;
  const base =
    state.failures === 0
      ? interval
      : Math.min(interval, ctx.backoffBaseMs * 2 ** (state.failures - 1));
  const delay = Math.max(0, Math.round(base * (1 + ctx.jitter * (2 * ctx.random() - 1))));
  state.nextRefreshAt = ctx.now() + delay;
  const timer = setTimeout(() => {
    timers.delete(name);
    refresh(ctx, name).catch((error: unknown) =>
      onError(error, { agent: name, source: 'refresh' }),
    );
  }, delay);
  timer.unref?.();
  timers.set(name, timer);
}

async function refreshNow(
  ctx: CardRefreshContext,
  agent: AgentEntry,
  loaded: Promise<void>,
): Promise<RefreshOutcome> {
  try {
    await loaded;
    const publications: Publication[] = [];
    const outcome = await ctx.acquire(() => fetchAndApply(ctx, agent, publications));
    // Published outside the fetch slot, so a slow bus never holds up other fetches.
    if (ctx.bus !== undefined && publications.length > 0)
      await publishAll(ctx, agent.name, publications);
    return outcome;
  } finally {
    ctx.inflight.delete(agent.name);
    // Always: whatever happened above, this agent's next refresh is on the schedule.
    schedule(ctx, agent.name);
  }
}

/**
 * Refreshes one agent now, joining a refresh already in progress; the cache is loaded first.
 *
 * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN` (as a rejection)
 */
export function refresh(ctx: CardRefreshContext, name: string): Promise<RefreshOutcome> {
  const agent = ctx.directory.get(name);
  if (agent === undefined) return Promise.reject(unknownAgent(name));
  const current = ctx.inflight.get(name);
  if (current !== undefined) return current;
  ctx.cacheLoaded ??= loadCache(ctx);
  const promise = refreshNow(ctx, agent, ctx.cacheLoaded);
  ctx.inflight.set(name, promise);
  return promise;
}

/** Follows the directory: a removed agent is forgotten, an added or changed one refreshed. */
export function onDirectoryChange(ctx: CardRefreshContext, change: DirectoryChange): void {
  const { cache, timers, onError } = ctx;
  const name = change.agent.name;
  switch (change.type) {
    case 'removed':
      if (cache !== undefined) void guarded(onError, name, 'card-cache', () => cache.delete(name));
      clearTimeout(timers.get(name));
      timers.delete(name);
      ctx.states.delete(name);
      ctx.book.clear(name);
      return;
    case 'updated':
      // Another URL is another agent's card: forget validators so the next fetch is unconditional.
      if (change.previous.url !== change.agent.url) trackCardState(ctx, name).validators = {};
      break;
    case 'added':
      break;
    default: {
      const never: never = change;
      throw new Error(`unexpected directory change ${String(never)}`);
    }
  }
  trackCardState(ctx, name);
  refresh(ctx, name).catch((error: unknown) => onError(error, { agent: name, source: 'refresh' }));
}
