/**
 * One refresh of one agent's card (`card-refresher.ts`): fetched, parsed once, validated before it
 * replaces the last good card, handed to the declaration book; a failure counts towards `stale`.
 * What to announce is collected in `publications`, published once the fetch slot is free.
 */
import { deterministicEventId, FleetgateError } from '../protocol/index.js';
import { parseCardJson, readDeclarations } from '../protocol/index.js';
import type { AgentEntry } from './agent-config.js';
import type { CardFetchResult } from './card-source.js';
import type { CardState, RefreshOutcome } from './card-state.js';
import { errorInfo } from './card-state.js';
import type { CardRefreshContext, Publication } from './card-refresh-context.js';
import { trackCardState } from './card-refresh-context.js';
import { guarded } from './card-refresh-errors.js';

/** Publishes what a refresh collected, in order; a failed publish goes to `onError`. */
export async function publishAll(
  ctx: CardRefreshContext,
  agent: string,
  publications: Publication[],
): Promise<void> {
  const { bus, onError } = ctx;
  if (bus === undefined) return;
  for (const p of publications) {
    await guarded(onError, agent, `publish:${p.topic}`, () =>
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
export async function fetchAndApply(
  ctx: CardRefreshContext,
  agent: AgentEntry,
  publications: Publication[],
): Promise<RefreshOutcome> {
  const { directory, source, book, bus, cache, onError } = ctx;
  const state = trackCardState(ctx, agent.name);
  const now = ctx.now();
  state.lastAttemptAt = now;
  try {
    // The directory's entry is the fetch target (name, url, headers): no copy per refresh.
    const fetched = await source.fetch(agent, state.card === undefined ? {} : state.validators);
    if (directory.get(agent.name) === undefined || ctx.states.get(agent.name) !== state) {
      const error = { code: 'FLEETGATE_AGENT_UNKNOWN', message: 'removed during refresh' };
      return { agent: agent.name, result: 'failed', error };
    }
    let outcome: RefreshOutcome;
    if (fetched.status === 'not-modified' || fetched.digest === state.digest) {
      // Unchanged: keep the card and its declarations, no re-parse.
      if (fetched.status === 'fetched') state.validators = fetched.validators;
      outcome = { agent: agent.name, result: 'unchanged', digest: state.digest ?? '' };
      if (cache !== undefined)
        await guarded(onError, agent.name, 'card-cache', () => cache.touch(agent.name, now));
    } else {
      outcome = await applyCard(ctx, agent, state, fetched, now, publications);
    }
    if (state.status === 'stale') book.setStale(agent.name, false);
    if (state.failures > 0 && cache?.clearFailures !== undefined) {
      await guarded(onError, agent.name, 'card-cache', () => cache.clearFailures!(agent.name));
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
    return recordFailure(ctx, agent, state, now, error, publications);
  }
}

/**
 * A changed card: parsed, validated (a card invalid as a whole throws `FLEETGATE_CARD_INVALID`),
 * applied to the book, and saved to the cache.
 */
async function applyCard(
  ctx: CardRefreshContext,
  agent: AgentEntry,
  state: CardState,
  fetched: Extract<CardFetchResult, { status: 'fetched' }>,
  now: number,
  publications: Publication[],
): Promise<RefreshOutcome> {
  const { book, bus, cache, onError } = ctx;
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
    await guarded(onError, agent.name, 'card-cache', () =>
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
  const outcome: RefreshOutcome = { agent: agent.name, result: 'changed', digest: fetched.digest };
  if (previousDigest !== undefined) outcome.previousDigest = previousDigest;
  return outcome;
}

/** A failed refresh: counted, announced, and the agent marked stale after enough of them. */
async function recordFailure(
  ctx: CardRefreshContext,
  agent: AgentEntry,
  state: CardState,
  now: number,
  error: unknown,
  publications: Publication[],
): Promise<RefreshOutcome> {
  const { book, cache, onError } = ctx;
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
  if (state.failures >= ctx.staleAfterFailures && state.status !== 'stale') {
    // Marked before anything is published: a failing bus never keeps an agent fresh.
    book.setStale(agent.name, true);
    publications.push({ topic: 'fleet.agent.stale', payload });
  }
  state.status = state.failures >= ctx.staleAfterFailures ? 'stale' : 'failed';
  if (cache?.saveFailures !== undefined) {
    const record = {
      agent: agent.name,
      url: agent.url,
      failures: state.failures,
      lastError: info,
      lastAttemptAt: now,
    };
    await guarded(onError, agent.name, 'card-cache', () => cache.saveFailures!(record));
  }
  return { agent: agent.name, result: 'failed', error: info };
}
