/**
 * The card refresher's start from its cache (`card-refresher.ts`): the last good cards and the
 * failure counts of the last runs, put back before the first refresh.
 */
import { parseCardJson, readDeclarations } from '../protocol/index.js';
import type { CardRefreshContext } from './card-refresh-context.js';
import { storedValidators } from './card-source.js';

/** Loads the cached cards (then the failure counts) into the states and the book. */
export async function loadCache(ctx: CardRefreshContext): Promise<void> {
  const { cache, directory, states, book, onError } = ctx;
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
      validators: storedValidators(cached.etag, cached.lastModified),
    });
  }
  await loadFailures(ctx);
}

/** Restores the failure counts of the last runs, so `stale` carries across them. */
async function loadFailures(ctx: CardRefreshContext): Promise<void> {
  const { cache, directory, states, book, onError } = ctx;
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
    state.status = row.failures >= ctx.staleAfterFailures ? 'stale' : 'failed';
    if (state.status === 'stale') book.setStale(row.agent, true);
  }
}
