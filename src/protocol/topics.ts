/**
 * The typed topic map: every topic of ARCHITECTURE §4 with its payload, plus the type-level
 * pattern matcher that gives a subscription handler the union of the events its pattern can match.
 *
 * Payloads are typed where the architecture fixes them; the approval records keep an index
 * signature beside their known fields until the approvals inbox fixes the whole record.
 */
import type { RejectedDeltaEntry, WorldStateDeltaEntry } from './delta.js';
import type { BlastRadius } from './radius.js';

/** `world.state.delta`: the mutations one terminal task reported (one event per task). */
export interface WorldStateDeltaEvent {
  /** The agent that reported the deltas. */
  source: string;
  skill: string;
  deltas: WorldStateDeltaEntry[];
  taskId: string;
  correlationId: string;
  /** Terminal task state, when known (`completed`, `failed`, …). */
  state?: string;
}

/** `world.state.delta.rejected`: entries of one task that were not accepted. */
export interface WorldStateDeltaRejectedEvent {
  source: string;
  skill: string;
  taskId: string;
  rejected: RejectedDeltaEntry[];
}

/** `world.state.updated`: the materialiser applied deltas to a domain. */
export interface WorldStateUpdatedEvent {
  domain: string;
  version: number;
  paths: string[];
}

/** `fleet.card.refreshed` / `fleet.card.failed` / `fleet.agent.stale`. */
export interface FleetCardEvent {
  agent: string;
  /** Digest of the card that was fetched (refreshed) or last known good (failed, stale). */
  digest?: string;
  error?: { code: string; message: string };
  [key: string]: unknown;
}

/** `fleet.declaration.changed`: one extension declaration of one skill changed on a card. */
export interface DeclarationChangedEvent {
  agent: string;
  skill: string;
  extension: string;
  before: unknown;
  after: unknown;
  widened: boolean;
  narrowed: boolean;
}

/**
 * Where a dispatch stands (the HTTP API's `status`). `awaiting-input` is a task the agent
 * interrupted (`input-required`, `auth-required`) until the caller answers.
 */
export type DispatchStatus =
  | 'awaiting-approval'
  | 'awaiting-input'
  | 'running'
  | 'completed'
  | 'failed'
  | 'rejected'
  | 'canceled';

/** The summary of how a dispatch ended. */
export interface DispatchResult {
  /** The task's final state, when there was a task. */
  state?: string;
  /** The agent's text answer, cut to 2,000 characters. */
  text?: string;
  error?: { code: string; message: string };
}

/** `skill.dispatch.*`: the dispatch record as it stands when the event is published. */
export interface DispatchEvent {
  id: string;
  agent: string;
  skill: string;
  correlationId: string;
  status: DispatchStatus;
  taskId: string | null;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds. */
  updatedAt: number;
  result: DispatchResult | null;
  /** Why the dispatch moved (a gate decision, a rejection, an error), when there is one. */
  reason?: string;
  /** The task's state, on `awaiting-input` and `resumed`. */
  state?: string;
  /** The policy gate's structured decision, on `gated` and `rejected`. */
  decision?: unknown;
  /** The approval that holds the dispatch, on `gated`. */
  approvalId?: string;
  /** The W3C trace context the dispatch was asked with, sent on its A2A call. */
  traceparent?: string;
}

/**
 * `hitl.approval.requested` / `.decided` / `.expired`: an approval record with its reasons. The
 * approvals inbox owns the full record; these are the fields every consumer may rely on.
 */
export interface ApprovalEvent {
  /** The approval id. */
  id: string;
  agent: string;
  skill: string;
  /** Why the call needs (or got) a decision: radius, mode, policy rule. */
  reasons: string[];
  /** The dispatch the approval belongs to, when there is one. */
  dispatchId?: string;
  /** `approved` / `rejected` on `decided`; `expired` on `expired`. */
  decision?: 'approved' | 'rejected' | 'expired';
  /** Who decided (`decided` only). */
  decidedBy?: string;
  [key: string]: unknown;
}

/** `hitl.notification`: a call that ran under the `notification` mode, for humans to see. */
export interface HitlNotificationEvent {
  agent: string;
  skill: string;
  /** The approval id, when the call also went through the approvals inbox. */
  approvalId?: string;
  dispatchId?: string;
  reasons: string[];
  [key: string]: unknown;
}

/** Alert severities, lowest to highest. */
export type AlertSeverity = 'info' | 'warning' | 'error' | 'critical';

/** `ops.alert.<kind>`. */
export interface OpsAlertEvent {
  kind: string;
  severity: AlertSeverity;
  agent: string;
  skill: string;
  radius: BlastRadius | 'unknown';
  message: string;
  evidence: unknown;
}

/** `cost.sample`: one cost sample, measured by the agent or by wall clock (clearly marked). */
export interface CostSampleEvent {
  agent: string;
  skill: string;
  tokensIn?: number;
  tokensOut?: number;
  costUsd?: number;
  wallMs: number;
  success: boolean;
  measured: 'agent' | 'wall-clock';
}

/** `system.error`: a handler or hook failed; never swallowed silently. */
export interface SystemErrorEvent {
  /** What failed, e.g. `subscription:materialiser` or `extension:blast-v1`. */
  source: string;
  message: string;
  code?: string;
  /** Topic of the event whose handling failed. */
  topic?: string;
  /** Id of the event whose handling failed. */
  eventId?: string;
}

/** Topic → payload for every Fleetgate topic (ARCHITECTURE §4). */
export type FleetgateTopics = {
  'world.state.delta': WorldStateDeltaEvent;
  'world.state.delta.rejected': WorldStateDeltaRejectedEvent;
  'world.state.updated': WorldStateUpdatedEvent;
  'fleet.card.refreshed': FleetCardEvent;
  'fleet.card.failed': FleetCardEvent;
  'fleet.agent.stale': FleetCardEvent;
  'fleet.declaration.changed': DeclarationChangedEvent;
  'skill.dispatch.requested': DispatchEvent;
  'skill.dispatch.gated': DispatchEvent;
  'skill.dispatch.started': DispatchEvent;
  'skill.dispatch.completed': DispatchEvent;
  'skill.dispatch.failed': DispatchEvent;
  'skill.dispatch.rejected': DispatchEvent;
  'skill.dispatch.awaiting-input': DispatchEvent;
  'skill.dispatch.resumed': DispatchEvent;
  'hitl.approval.requested': ApprovalEvent;
  'hitl.approval.decided': ApprovalEvent;
  'hitl.approval.expired': ApprovalEvent;
  'hitl.notification': HitlNotificationEvent;
  'cost.sample': CostSampleEvent;
  'system.error': SystemErrorEvent;
} & { [K in `ops.alert.${string}`]: OpsAlertEvent };

/**
 * What every topic map must contain: the bus itself publishes `system.error`. Extend
 * {@link FleetgateTopics}; tests and tools that carry arbitrary topics use {@link OpenTopics}.
 */
export type TopicMap = { 'system.error': SystemErrorEvent };

/** {@link FleetgateTopics} plus any other topic with an `unknown` payload (tests, `tail`). */
export type OpenTopics = FleetgateTopics & Record<string, unknown>;

/** A topic of map `M` (string keys only). */
export type TopicOf<M> = Extract<keyof M, string>;

/**
 * The envelope every event travels in (CloudEvents attribute names: `id`, `time`, plus the topic
 * as `topic`). `correlationId` defaults to the event id for an event that starts a chain.
 */
export interface EventEnvelope<T extends string = string, P = unknown> {
  /** Unique per event; deterministic where a duplicate is possible ({@link deterministicEventId}). */
  readonly id: string;
  readonly topic: T;
  /** RFC 3339 time the event was first published (kept across outbox re-sends). */
  readonly time: string;
  readonly correlationId: string;
  readonly payload: P;
}

type Split<S extends string> = S extends `${infer Head}.${infer Rest}`
  ? [Head, ...Split<Rest>]
  : [S];

type MatchTokens<T extends string[], P extends string[]> = P extends ['>']
  ? T extends [string, ...string[]]
    ? true
    : false
  : P extends [infer PH extends string, ...infer PR extends string[]]
    ? T extends [infer TH extends string, ...infer TR extends string[]]
      ? PH extends '*'
        ? MatchTokens<TR, PR>
        : TH extends PH
          ? MatchTokens<TR, PR>
          : PH extends TH // a template token (`${string}`) may match a literal
            ? MatchTokens<TR, PR>
            : false
      : false
    : T extends []
      ? true
      : false;

/** The topics of `M` that pattern `P` can match (computed on the NATS token rules). */
export type TopicsMatching<M, P extends string> = {
  [K in TopicOf<M>]: MatchTokens<Split<K>, Split<P>> extends true ? K : never;
}[TopicOf<M>];

/**
 * The event a handler of pattern `P` receives: a union of envelopes discriminated on `topic`.
 * With an open map (string keys) or a non-literal pattern it is `EventEnvelope<string, unknown>`.
 */
export type EventFor<M, P extends string> = string extends P
  ? EventEnvelope<string, unknown>
  : string extends TopicOf<M>
    ? EventEnvelope<string, unknown>
    : { [K in TopicsMatching<M, P>]: EventEnvelope<K, M[K]> }[TopicsMatching<M, P>];
