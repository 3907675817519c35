import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import type { Declarations, Diagnostic } from '../protocol/index.js';
import type { AgentEntry } from './agent-config.js';
import type { CardValidators } from './card-source.js';

/** Card status of an agent. */
export type CardStatus = 'pending' | 'fresh' | 'failed' | 'stale';

/** What the refresher knows about one agent's card. */
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
  | {
      agent: string;
      result: 'changed' | 'unchanged';
      digest: string;
      /** A changed card's digest before: absent when the agent's card is new (first seen). */
      previousDigest?: string;
    }
  | { agent: string; result: 'failed'; error: { code: string; message: string } };

/**
 * An agent as the fleet client needs it: the configured URL, the last good card, and the
 * declarations read from that very card (read once, here).
 */
export interface LoadedAgent {
  url: string;
  card: unknown;
  declarations: Declarations;
  headers: Readonly<Record<string, string>>;
  transport?: 'JSONRPC' | 'HTTP+JSON';
  /** `false`: calls the gateway waits for are never streamed. */
  preferStreaming?: false;
}

/** What the refresher keeps per agent beyond what it shows. */
export interface CardState extends AgentCardState {
  validators: CardValidators;
  declarations: Declarations | undefined;
}

/** A fresh state: nothing fetched yet. */
export function newCardState(name: string): CardState {
  return {
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
    declarations: undefined,
  };
}

/** The state as shown to callers (a copy, without validators and declarations). */
export function publicCardState(s: CardState): AgentCardState {
  const { validators: _v, declarations: _d, ...rest } = s;
  return { ...rest, diagnostics: [...rest.diagnostics] };
}

/** The fleet client's view of a configured agent; undefined until its card loaded. */
export function loadedAgent(agent: AgentEntry, s: CardState): LoadedAgent | undefined {
  if (s.card === undefined || s.declarations === undefined) return undefined;
  const loaded: LoadedAgent = {
    url: agent.url,
    card: s.card,
    declarations: s.declarations,
    headers: agent.headers,
  };
  if (agent.transport !== undefined) loaded.transport = agent.transport;
  if (agent.preferStreaming === false) loaded.preferStreaming = false;
  return loaded;
}

/** `FLEETGATE_AGENT_UNAVAILABLE` for a configured agent whose card never loaded, else undefined. */
export function unavailableError(s: CardState): FleetgateError | undefined {
  if (s.card !== undefined) return undefined;
  const why =
    s.lastError === undefined
      ? 'has not loaded yet'
      : `could not be loaded: ${s.lastError.message}`;
  return new FleetgateError(
    'FLEETGATE_AGENT_UNAVAILABLE',
    `Agent ${s.name} is configured but its card ${why}.`,
    {
      details: {
        agent: s.name,
        status: s.status,
        failures: s.failures,
        lastError: s.lastError ?? null,
      },
    },
  );
}

/** The `{ code, message }` of a failed refresh. */
export function errorInfo(error: unknown): { code: string; message: string } {
  if (isFleetgateError(error)) return { code: error.code, message: error.message };
  return {
    code: 'FLEETGATE_CARD_FETCH_FAILED',
    message: error instanceof Error ? error.message : String(error),
  };
}
