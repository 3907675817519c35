/**
 * The seam between the dispatcher and a policy gate: what the gate is asked at dispatch, what it
 * answers, and how a held dispatch (an approval, a veto window, a task's question) moves on. The
 * HITL gate (`policy/`) implements it; `decision` is the gate's own structured decision.
 */
import type { Transaction } from 'kysely';
import type { ErrorCode } from './errors.js';

/** The input of a held call, kept so any replica can send it once approved. */
export interface HeldInput {
  text?: string;
  data?: unknown;
  /**
   * A whole A2A message as a client sent it (v1.0 wire JSON: `parts`, `metadata`, `contextId`,
   * `referenceTaskIds`, `extensions`, `messageId`), forwarded as given (the A2A proxy).
   */
  message?: Record<string, unknown>;
  /** The client's own `SendMessageRequest.metadata`; the stamps win over its keys. */
  metadata?: Record<string, unknown>;
  /** Extension URIs the client asked for (`A2A-Extensions`), merged with the activated ones. */
  extensions?: string[];
}

/** One call as the gate sees it. */
export interface GateCall {
  /** Absent when a call is only explained, not dispatched. */
  dispatchId?: string;
  agent: string;
  skill: string;
  correlationId: string;
  /** What the call will send (an approval is bound to it). */
  input?: HeldInput;
  /** Who asked for the call: they can never approve it themselves. */
  requestedBy?: string;
  /**
   * A follow-up message to the dispatch's running task (the agent's task id and context): held,
   * it waits as a `follow-up` approval and is sent on that task once approved.
   */
  followUp?: { taskId: string; contextId?: string };
}

/** What the gate says at dispatch. */
export type GateVerdict<D = unknown> =
  | { action: 'allow'; decision?: D }
  | { action: 'deny'; reason: string; code?: ErrorCode; decision?: D }
  /**
   * A human must decide first (the approvals inbox holds the dispatch); with `goAt`, a veto
   * window: the call goes then (epoch ms) unless rejected.
   */
  | { action: 'hold'; reason: string; approvalId?: string; goAt?: number; decision?: D };

/** Moves the dispatch on inside the gate's transaction; false when it was not in a state to. */
export type DispatchMove = (trx: Transaction<unknown>) => Promise<boolean>;

/**
 * What the gate says when a held dispatch may move on: `Go` (its own action and what it sends,
 * with the claim that lets it go once), a refusal, or not yet. Release, resume and follow-up each
 * answer with one.
 */
export type ContinuationVerdict<Go extends { action: string }> =
  | (Go & {
      /**
       * Consumes what let the dispatch go (the approval, or the answer) in one transaction with
       * `move`; false when either could not (already used, or the dispatch moved on).
       */
      claim(move: DispatchMove): Promise<boolean>;
    })
  | { action: 'deny'; reason: string; code: ErrorCode }
  | { action: 'wait'; reason: string };

/** What the gate says when a held call is to be released. */
export type ReleaseVerdict = ContinuationVerdict<{
  action: 'go';
  /** The input the approval was given for: exactly what is sent. */
  input: HeldInput;
}>;

/** A task of a dispatch waits on input (`input-required`). */
export interface CheckpointCall {
  dispatchId: string;
  agent: string;
  skill: string;
  correlationId: string;
  taskId: string;
  contextId?: string;
  /** What the agent asked (its status message). */
  question: string;
  requestedBy?: string;
}

/** What the gate says when a task's question may have been answered. */
export type ResumeVerdict = ContinuationVerdict<{
  action: 'answer';
  taskId: string;
  contextId?: string;
  text: string;
}>;

/** What the gate says when a held follow-up may be sent on its task. */
export type FollowUpVerdict = ContinuationVerdict<{
  action: 'go';
  /** The dispatch whose task the message continues. */
  dispatchId: string;
  taskId: string;
  contextId?: string;
  /** The message the approval was given for: exactly what is sent. */
  input: HeldInput;
}>;

/**
 * Decides whether a call may go out. A gate that holds calls implements `release`; one that turns
 * a task's questions into inbox entries implements `checkpoint` and `resume`.
 */
export interface PolicyGate<D = unknown> {
  decide(call: GateCall): Promise<GateVerdict<D>>;
  /**
   * The verdict when the gate gives it without writing or publishing anything (a call that goes
   * at once, autonomously); undefined when only `decide` can tell (it may hold the call in the
   * inbox, which needs the dispatch recorded first). A dispatcher then records the call and what
   * it sends in one unit instead of two.
   */
  decideAtOnce?(call: GateCall): GateVerdict<D> | undefined;
  release?(call: GateCall): Promise<ReleaseVerdict>;
  checkpoint?(call: CheckpointCall): Promise<unknown>;
  resume?(call: { dispatchId: string }): Promise<ResumeVerdict>;
  /** A held follow-up (`follow-up` approval `approvalId`) once decided: `go` when it may be sent. */
  continueFollowUp?(call: { approvalId: string }): Promise<FollowUpVerdict>;
}
