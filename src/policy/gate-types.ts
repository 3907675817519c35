/**
 * The HITL gate's interface: what the dispatcher asks it (a call at dispatch, a held call to
 * release, a task's question and its answer) and what it answers.
 */
import type { Transaction } from 'kysely';
import type { ErrorCode } from '../protocol/index.js';
import type { ApprovalInbox, ApprovalRecord, HeldInput, StandingRecord } from './inbox.js';
import type { Decision, EffectiveDeclarations, PolicyPublish, PolicyRules } from './types.js';

/** One call as the gate sees it (what the dispatcher passes). */
export interface GateCall {
  dispatchId?: string;
  agent: string;
  skill: string;
  correlationId: string;
  input?: HeldInput;
  /** Who asked for the call: they can never approve it themselves. */
  requestedBy?: string;
}

/** What the gate says at dispatch. */
export type GateVerdict =
  | { action: 'allow'; decision?: Decision }
  | { action: 'deny'; reason: string; code?: ErrorCode; decision?: Decision }
  | {
      action: 'hold';
      reason: string;
      approvalId?: string;
      /** For a veto: when the call goes unless rejected (epoch ms). */
      goAt?: number;
      decision?: Decision;
    };

/** What the gate says when a held call is to be released. */
export type ReleaseVerdict =
  | {
      action: 'go';
      input: HeldInput;
      /**
       * Consumes the approval in one transaction with `move` (which moves the dispatch to
       * `running`); false when the approval or the dispatch was not in a state to go.
       */
      claim(move: (trx: Transaction<unknown>) => Promise<boolean>): Promise<boolean>;
    }
  | { action: 'deny'; reason: string; code: ErrorCode }
  | { action: 'wait'; reason: string };

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

/** What the gate says when a checkpoint's dispatch is to move on. */
export type ResumeVerdict =
  | {
      action: 'answer';
      taskId: string;
      contextId?: string;
      text: string;
      /** Consumes the checkpoint in one transaction with `move`; false when already used. */
      claim(move: (trx: Transaction<unknown>) => Promise<boolean>): Promise<boolean>;
    }
  | { action: 'deny'; reason: string; code: ErrorCode }
  | { action: 'wait'; reason: string };

/** A decision with what binds an approval to the call. */
export interface Explanation {
  agent: string;
  skill: string;
  decision: Decision;
  policyVersion: string;
  /** Present when an input was given. */
  fingerprint?: string;
}

/** Options of `createHitlGate`. */
export interface HitlGateOptions {
  declarations: EffectiveDeclarations;
  inbox: ApprovalInbox;
  /** The rules; missing keys take {@link DEFAULT_POLICY_RULES}. */
  rules?: Partial<PolicyRules>;
  publish: PolicyPublish;
  now?: () => number;
}

/** The HITL gate and the approvals it manages. */
export interface HitlGate {
  readonly rules: PolicyRules;
  readonly policyVersion: string;
  readonly inbox: ApprovalInbox;
  /** The dispatcher's seam: decides a call, holding it in the inbox when a human must decide. */
  decide(call: GateCall): Promise<GateVerdict>;
  /** The dispatcher's seam: re-checks a held call; `go` when it may be sent now. */
  release(call: GateCall & { dispatchId: string }): Promise<ReleaseVerdict>;
  /**
   * A task asks for input: the question lands in the inbox (once per dispatch and task while it
   * is open). For a `compound` skill it is a checkpoint an approver answers.
   */
  checkpoint(call: CheckpointCall): Promise<ApprovalRecord>;
  /** The dispatcher's seam: the answer to a checkpoint, once it was given. */
  resume(call: { dispatchId: string }): Promise<ResumeVerdict>;
  /** Answers a checkpoint. */
  answer(id: string, by: string, text: string, reason?: string): Promise<ApprovalRecord>;
  /** The decision for an agent/skill now, with every reason (for `policy explain`). */
  explain(agent: string, skill: string, input?: HeldInput): Promise<Explanation>;
  /** Approves; resolves with the record (still `pending` until enough approvers said yes). */
  approve(id: string, by: string, reason?: string): Promise<ApprovalRecord>;
  reject(id: string, by: string, reason?: string): Promise<ApprovalRecord>;
  snooze(id: string, by: string, forMs: number, reason?: string): Promise<ApprovalRecord>;
  /**
   * Expires overdue requests and returns every request whose dispatch must move on now (decided
   * but not settled, or a veto whose window ended); the caller releases each dispatch and then
   * calls {@link settle}.
   */
  sweep(): Promise<ApprovalRecord[]>;
  /** Marks a request settled once its dispatch moved on; publishes its outcome once. */
  settle(id: string): Promise<void>;
  grant(grant: {
    agent: string;
    skill: string;
    maxRadius: NonNullable<Decision['effectiveRadius']>;
    by: string;
    forMs: number;
    uses?: number;
    reason?: string;
  }): Promise<StandingRecord>;
  revoke(id: string, by: string, reason?: string): Promise<StandingRecord>;
}
