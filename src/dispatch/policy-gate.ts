/**
 * The seam between the dispatcher and the policy gate: what the gate is asked, what it answers at
 * dispatch, and how a held dispatch (an approval, a veto window, a task's question) moves on.
 */
import type { Transaction } from 'kysely';
import type { ErrorCode } from '../protocol/index.js';

/** What the policy gate says about one call. */
export type GateDecision =
  | { action: 'allow'; decision?: unknown }
  | { action: 'deny'; reason: string; code?: ErrorCode; decision?: unknown }
  /**
   * A human must approve first (the approvals inbox holds the dispatch); with `goAt`, a veto
   * window: the call goes then unless rejected. `decision` is the policy's structured decision.
   */
  | { action: 'hold'; reason: string; approvalId?: string; goAt?: number; decision?: unknown };

/** One call as the gate sees it. */
export interface GateRequest {
  dispatchId: string;
  agent: string;
  skill: string;
  correlationId: string;
  /** What the call will send (the gate binds an approval to it). */
  input: { text?: string; data?: unknown };
  requestedBy?: string;
}

/** What the gate says when a held dispatch is to be released (see `Dispatcher.release`). */
export type GateRelease =
  | {
      action: 'go';
      /** The input the approval was given for: exactly what is sent. */
      input: { text?: string; data?: unknown };
      /** Consumes the approval in one transaction with `move`; false when either could not. */
      claim(move: (trx: Transaction<unknown>) => Promise<boolean>): Promise<boolean>;
    }
  | { action: 'deny'; reason: string; code: ErrorCode }
  | { action: 'wait'; reason: string };

/**
 * Decides whether a call may go out. The HITL policy (blast-v1 composed with hitl-mode-v1) is one;
 * {@link ALLOW_ALL} lets everything through. A gate that holds calls implements `release`.
 */
export interface PolicyGate {
  decide(request: GateRequest): Promise<GateDecision>;
  release?(request: GateRequest): Promise<GateRelease>;
  /** A dispatched task asks for input: the gate puts the question in the inbox. */
  checkpoint?(request: GateCheckpoint): Promise<unknown>;
  /** The answer to a task's question, once given (see `Dispatcher.resume`). */
  resume?(request: { dispatchId: string }): Promise<GateResume>;
}

/** A dispatched task waiting on input. */
export interface GateCheckpoint {
  dispatchId: string;
  agent: string;
  skill: string;
  correlationId: string;
  taskId: string;
  contextId?: string;
  question: string;
  requestedBy?: string;
}

/** What the gate says when a task's question may have been answered. */
export type GateResume =
  | {
      action: 'answer';
      taskId: string;
      contextId?: string;
      text: string;
      /** Consumes the answer in one transaction with `move`; false when already used. */
      claim(move: (trx: Transaction<unknown>) => Promise<boolean>): Promise<boolean>;
    }
  | { action: 'deny'; reason: string; code: ErrorCode }
  | { action: 'wait'; reason: string };

/** A gate that allows every call. */
export const ALLOW_ALL: PolicyGate = { decide: () => Promise.resolve({ action: 'allow' }) };
