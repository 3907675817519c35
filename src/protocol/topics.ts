/**
 * The typed topic map: every topic of ARCHITECTURE §4 with its payload, plus the type-level
 * pattern matcher that gives a subscription handler the union of the events its pattern can match.
 *
 * Payloads are typed where the architecture fixes them; the approval records keep an index
 * signature beside their known fields until the approvals inbox fixes the whole record.
 */
import type { RejectedDeltaEntry, WorldStateDeltaEntry } from './delta.js';
import type { EventPart } from './event-parts.js';
import type { BlastRadius } from './radius.js';
import type { HitlMode } from './hitl.js';

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
  /**
   * Set when the task's deltas were too many bytes for one event (`limits.eventBytes`): the
   * deltas come in `count` events, this one part `index` (ids: the task's id, then `<id>.part1`…).
   */
  part?: EventPart;
}

/** `world.state.delta.rejected`: entries of one task that were not accepted. */
export interface WorldStateDeltaRejectedEvent {
  source: string;
  skill: string;
  taskId: string;
  rejected: RejectedDeltaEntry[];
  /** Set when the rejections were split over several events, as for `world.state.delta`. */
  part?: EventPart;
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

/** Every {@link DispatchStatus}, in the order of a call's life (the API's and the CLI's filters). */
export const DISPATCH_STATUSES = [
  'awaiting-approval',
  'running',
  'awaiting-input',
  'completed',
  'failed',
  'rejected',
  'canceled',
] as const satisfies readonly DispatchStatus[];

/**
 * The door a call came through: the gateway's HTTP API (the CLI, the dashboard, any HTTP client),
 * its A2A proxy, or a program that embeds the gateway (`gw.dispatch()`).
 */
export type CallDoor = (typeof CALL_DOORS)[number];

/** Every {@link CallDoor} (the API's schema, the CLI's story). */
export const CALL_DOORS = ['api', 'a2a-proxy', 'library'] as const;

/**
 * How a person reads the door a call came through (the CLI's story of a call, the dashboard's call
 * page); a door a newer gateway names and this one does not know reads "through" its name.
 */
export function callDoorText(door: string): string {
  switch (door) {
    case 'api':
      return 'through the HTTP API';
    case 'a2a-proxy':
      return 'through the A2A proxy';
    case 'library':
      return 'from a program that embeds the gateway';
    default:
      return `through ${door}`;
  }
}

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
  /** Who asked to cancel the call, on `cancel-requested` (`reason` says why). */
  canceledBy?: string;
  /** The W3C trace context the dispatch was asked with, sent on its A2A call. */
  traceparent?: string;
  /**
   * Who asked for the call (the API token's name, the A2A proxy's caller, what a library caller
   * gave); absent when nobody was named, as for every call recorded before the store kept it.
   */
  requestedBy?: string;
  /** The door the call came through; absent on calls recorded before the store kept it. */
  door?: CallDoor;
}

/** The kinds of fact a policy decision names (`Reason.kind`). */
export const REASON_KINDS = [
  'declared-radius',
  'radius-unknown',
  'card-stale',
  'unknown-rule',
  'floor',
  'narrowing-pending',
  'declared-mode',
  'mode-undeclared',
  'threshold',
  'override-allow',
  'override-deny',
  'override-min-mode',
  'reviewer-operator',
  'standing-approval',
  'approvers',
  'rejected-before',
] as const;

/** The kind of a {@link Reason}. */
export type ReasonKind = (typeof REASON_KINDS)[number];

/** One structured fact behind a policy decision; `detail` is the sentence the CLI prints. */
export interface Reason {
  kind: ReasonKind;
  detail: string;
}

/** Where an approval stands. `consumed`: its call went out; `void`: the call changed under it. */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'consumed' | 'void';

/**
 * `dispatch`: a gated call waits for approval; `veto`: a call goes when its window ends;
 * `checkpoint`: a running task asks for input, and the answer is sent back on the same task;
 * `follow-up`: a message to a running task (A2A proxy) is a call of the task's skill the policy
 * holds — approved (or, for a `veto` skill, not vetoed within its window), it is sent on the task.
 */
export type ApprovalKind = 'dispatch' | 'veto' | 'checkpoint' | 'follow-up';

/** One approver's yes. */
export interface ApprovalVote {
  by: string;
  reason?: string;
  at: number;
}

/**
 * `hitl.approval.requested` / `.decided` / `.expired`: one approval request as the inbox, the CLI
 * and every consumer see it (the held input is not carried on the bus).
 */
export interface ApprovalEvent {
  id: string;
  kind: ApprovalKind;
  dispatchId: string;
  agent: string;
  skill: string;
  correlationId: string;
  /** SHA-256 of the exact call (agent, skill, input, radius, policy version). */
  fingerprint: string;
  policyVersion: string;
  mode: HitlMode;
  radius: BlastRadius | null;
  requestedBy: string | null;
  requiredApprovals: number;
  approvals: ApprovalVote[];
  status: ApprovalStatus;
  decidedBy: string | null;
  decidedAt: number | null;
  reason: string | null;
  /** The effect domains the skill declared: what the call may change. */
  domains: string[] | null;
  reasons: Reason[];
  createdAt: number;
  expiresAt: number;
  snoozedUntil: number | null;
  consumedAt: number | null;
  /** When the request's outcome was published (each outcome is published once). */
  settledAt: number | null;
  /** Checkpoints and follow-ups: the agent's task and its conversation. */
  taskId: string | null;
  contextId: string | null;
  /** Checkpoints: what the agent asked. */
  question: string | null;
  /** Checkpoints: the answer sent back to the agent. */
  answer: string | null;
  /**
   * On `decided`: how the request ended — approved (its call went out), not vetoed (a veto window
   * ended), answered (a checkpoint), rejected, or void (the call changed under it).
   */
  outcome?: 'approved' | 'not-vetoed' | 'answered' | 'rejected' | 'void';
}

/**
 * `hitl.approval.voted`: one approver's vote the inbox accepted, written in the vote's own
 * transaction (a vote it refuses — a second yes, the requester's own yes, a vote on a decided
 * request — publishes nothing). Open views follow a request needing several approvers with it.
 * It names the approver, never a credential; the envelope's `correlationId` is the call's.
 */
export interface ApprovalVotedEvent {
  /** The request voted on (`ApprovalEvent.id`). */
  approvalId: string;
  /** Who voted: the approver's principal name (the token's `name`). */
  by: string;
  /** A `reject` decides the request at once; an `approve` counts towards `needed`. */
  vote: 'approve' | 'reject';
  /** Distinct approvers the request needs (`requiredApprovals`). */
  needed: number;
  /** Distinct approvers who said yes so far (an `approve` counts itself; a `reject` adds none). */
  have: number;
}

/** `hitl.notification`: a call that ran under the `notification` mode, for humans to see. */
export interface HitlNotificationEvent {
  agent: string;
  skill: string;
  dispatchId?: string;
  correlationId?: string;
  radius: BlastRadius | null;
  reasons: Reason[];
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
  /** What went wrong, as a sentence (the code is not repeated in it). */
  message: string;
  /** The coded error (`docs/errors.md`), e.g. `FLEETGATE_BUS_HANDLER_FAILED`. */
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
  'skill.dispatch.cancel-requested': DispatchEvent;
  'hitl.approval.requested': ApprovalEvent;
  'hitl.approval.decided': ApprovalEvent;
  'hitl.approval.expired': ApprovalEvent;
  'hitl.approval.voted': ApprovalVotedEvent;
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
