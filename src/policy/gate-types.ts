/**
 * The HITL gate's interface: what the dispatcher asks it (a call at dispatch, a held call to
 * release, a task's question and its answer) and what it answers.
 */
import type {
  CheckpointCall,
  FollowUpVerdict,
  GateCall,
  GateVerdict as ProtocolGateVerdict,
  HeldInput,
  ReleaseVerdict,
  ResumeVerdict,
} from '../protocol/index.js';
import type { ApprovalInbox, ApprovalRecord, StandingRecord } from './inbox.js';

export type {
  CheckpointCall,
  FollowUpVerdict,
  GateCall,
  ReleaseVerdict,
  ResumeVerdict,
} from '../protocol/index.js';
import type {
  Decision,
  EffectiveDeclarations,
  PolicyPublish,
  PolicyRules,
  StandingGrantRequest,
} from './types.js';

/** What the HITL gate says at dispatch: the protocol's verdict with the policy's decision. */
export type GateVerdict = ProtocolGateVerdict<Decision>;

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
  /**
   * The dispatcher's seam: the verdict of a call the policy lets go autonomously, given without
   * a write; undefined for every other call (ask `decide`).
   */
  decideAtOnce(call: GateCall): GateVerdict | undefined;
  /** The dispatcher's seam: re-checks a held call; `go` when it may be sent now. */
  release(call: GateCall & { dispatchId: string }): Promise<ReleaseVerdict>;
  /**
   * A task asks for input: the question lands in the inbox (once per dispatch and task while it
   * is open). For a `compound` skill it is a checkpoint an approver answers.
   */
  checkpoint(call: CheckpointCall): Promise<ApprovalRecord>;
  /** The dispatcher's seam: the answer to a checkpoint, once it was given. */
  resume(call: { dispatchId: string }): Promise<ResumeVerdict>;
  /** The dispatcher's seam: a held follow-up, once decided (`go` when it may be sent now). */
  continueFollowUp(call: { approvalId: string }): Promise<FollowUpVerdict>;
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
  grant(grant: StandingGrantRequest): Promise<StandingRecord>;
  revoke(id: string, by: string, reason?: string): Promise<StandingRecord>;
}
