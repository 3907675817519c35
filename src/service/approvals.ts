/**
 * The gateway's approvals door: the HITL gate's inbox joined to the dispatcher, so a decision
 * moves its dispatch on (sent once, or refused), and a sweeper that does the same for decisions
 * taken elsewhere (the CLI, another replica), expired requests and ended veto windows.
 */
import { periodicSweep } from './periodic-sweep.js';
import type { DispatchRecord, Dispatcher, LetGo } from '../dispatch/index.js';
import type {
  ApprovalKind,
  ApprovalListOptions,
  ApprovalRecord,
  Explanation,
  HeldInput,
  HitlGate,
  PolicyAuditEntry,
  StandingRecord,
} from '../policy/index.js';

/** What a decision led to: the approval, and the dispatch once it moved on. */
export interface ApprovalOutcome {
  approval: ApprovalRecord;
  /** The dispatch after the decision (sent and finished, handed over, or refused). */
  dispatch: DispatchRecord | undefined;
}

/** `gateway.approvals`: the approvals inbox, standing approvals and `policy explain`. */
export interface GatewayApprovals {
  /**
   * Approvals by status (default `pending`, snoozed ones left out unless asked for), of one
   * dispatch when asked.
   */
  list(options?: ApprovalListOptions): Promise<ApprovalRecord[]>;
  get(id: string): Promise<ApprovalRecord | undefined>;
  /**
   * One approver says yes. Once enough distinct approvers did, the call is re-checked and sent
   * (exactly once); resolves when it ended or was handed to the tracker.
   *
   * @throws FleetgateError `FLEETGATE_APPROVAL_ALREADY_DECIDED`, `…_SELF`, `…_EXPIRED`,
   *   `…_NOT_FOUND`
   */
  approve(id: string, by: string, reason?: string): Promise<ApprovalOutcome>;
  /**
   * Answers a task's question (an `input-required` checkpoint): the answer is sent to the agent on
   * the same task; resolves when the task ended or asked again.
   */
  answer(id: string, by: string, text: string, reason?: string): Promise<ApprovalOutcome>;
  /**
   * Rejects (a veto inside its window, a gated call, a checkpoint); the dispatch ends `rejected`.
   * A rejected follow-up is not sent, and its task goes on.
   */
  reject(id: string, by: string, reason?: string): Promise<ApprovalOutcome>;
  /** Hides a pending request for `forMs` (not a rejection: it still expires on time). */
  snooze(id: string, by: string, forMs: number, reason?: string): Promise<ApprovalRecord>;
  /** Grants a standing approval: calls to agent/skill at radius ≤ `maxRadius` for a time or N uses. */
  grant: HitlGate['grant'];
  revoke(id: string, by: string, reason?: string): Promise<StandingRecord>;
  standing(options?: { agent?: string; skill?: string; live?: boolean }): Promise<StandingRecord[]>;
  /** Who did what to an approval or grant (every approval, rejection, grant, use, revocation). */
  audit(subject?: string): Promise<PolicyAuditEntry[]>;
  /** The decision for an agent/skill now, with every reason. */
  explain(agent: string, skill: string, input?: HeldInput): Promise<Explanation>;
  /** Moves on every dispatch whose approval was decided, expired or whose veto window ended. */
  sweep(): Promise<void>;
}

/** Options of {@link createGatewayApprovals}. */
export interface GatewayApprovalsOptions {
  gate: HitlGate;
  dispatcher: Pick<Dispatcher, 'release' | 'resume' | 'continueFollowUp'>;
  sweepIntervalMs: number;
  onError: (error: unknown, where: string) => void;
}

/** The dispatcher's steps that move a held dispatch on. */
type Mover = GatewayApprovalsOptions['dispatcher'];

/**
 * How a decided request of each kind moves its dispatch on (`step`, told what let it go when the
 * request did), and whether, after that step, the dispatch still waits on the request (`waiting`:
 * it stays unsettled).
 */
interface KindMove {
  step(
    dispatcher: Mover,
    approval: ApprovalRecord,
    letGo: LetGo | undefined,
  ): Promise<DispatchRecord | undefined>;
  waiting(dispatch: DispatchRecord | undefined, latest: ApprovalRecord): boolean;
}

/** A held call (gated, or in a veto window): released, it leaves `awaiting-approval`. */
const RELEASE: KindMove = {
  step: (dispatcher, approval, letGo) => dispatcher.release(approval.dispatchId, letGo),
  waiting: (dispatch) => dispatch?.status === 'awaiting-approval',
};

/** Per kind, one row: adding a kind of approval is adding its row. */
const KIND_MOVES: Record<ApprovalKind, KindMove> = {
  dispatch: RELEASE,
  veto: RELEASE,
  checkpoint: {
    step: (dispatcher, approval, letGo) => dispatcher.resume(approval.dispatchId, letGo),
    waiting: (dispatch, latest) => dispatch?.status === 'running' && latest.status !== 'approved',
  },
  'follow-up': {
    step: (dispatcher, approval, letGo) => dispatcher.continueFollowUp(approval, letGo),
    // A veto window still open, on a task still running.
    waiting: (dispatch, latest) => dispatch?.status === 'running' && latest.status === 'pending',
  },
};

/**
 * When a request let its dispatch go: given (approved, or its question answered) at its decision,
 * or a veto window that ended unvetoed (the sweep hands on a pending request only then); undefined
 * for a request that refused it.
 */
function letGoAt(approval: ApprovalRecord): number | undefined {
  switch (approval.status) {
    case 'approved':
      return approval.decidedAt ?? approval.createdAt;
    case 'pending':
      return approval.expiresAt;
    case 'rejected':
    case 'expired':
    case 'void':
    case 'consumed':
      return undefined;
  }
}

/** Builds `gateway.approvals` and its sweeper. */
export function createGatewayApprovals(options: GatewayApprovalsOptions): {
  api: GatewayApprovals;
  start(): void;
  stop(): Promise<void>;
} {
  const { gate, dispatcher } = options;
  const inbox = gate.inbox;

  /** Moves the dispatch behind a decided request on, then settles the request (publishes once). */
  const moveOn = async (approval: ApprovalRecord): Promise<ApprovalOutcome> => {
    const move = KIND_MOVES[approval.kind];
    const at = letGoAt(approval);
    let left = false;
    const letGo = at === undefined ? undefined : { at, left: () => void (left = true) };
    const dispatch = await move.step(dispatcher, approval, letGo);
    let latest = (await inbox.get(approval.id)) ?? approval;
    // Left to a replica that knows the call's agent: the request stays as it is, for its sweep.
    if (left) return { approval: latest, dispatch };
    if (!move.waiting(dispatch, latest)) {
      if (latest.status === 'approved' || latest.status === 'pending') {
        // The dispatch ended another way (canceled, or refused on re-check): the approval can
        // never be used, so it must not stay approved.
        latest =
          (await inbox.voidApproval(latest.id, `dispatch is ${dispatch?.status ?? 'gone'}`)) ??
          latest;
      }
      await gate.settle(latest.id);
      latest = (await inbox.get(approval.id)) ?? latest;
    }
    return { approval: latest, dispatch };
  };

  const sweeper = periodicSweep(
    async () => {
      for (const approval of await gate.sweep()) await moveOn(approval);
    },
    options.sweepIntervalMs,
    (error) => options.onError(error, 'approvals.sweep'),
  );
  const api: GatewayApprovals = {
    list: (o) => inbox.list(o),
    get: (id) => inbox.get(id),
    async approve(id, by, reason) {
      const approval = await gate.approve(id, by, reason);
      if (approval.status !== 'approved') return { approval, dispatch: undefined };
      return moveOn(approval);
    },
    async answer(id, by, text, reason) {
      return moveOn(await gate.answer(id, by, text, reason));
    },
    async reject(id, by, reason) {
      return moveOn(await gate.reject(id, by, reason));
    },
    snooze: (id, by, forMs, reason) => gate.snooze(id, by, forMs, reason),
    grant: (grant) => gate.grant(grant),
    revoke: (id, by, reason) => gate.revoke(id, by, reason),
    standing: (o) => inbox.listStanding(o),
    audit: (subject) => inbox.audit(subject),
    explain: (agent, skill, input) => gate.explain(agent, skill, input),
    sweep: sweeper.sweep,
  };
  return { api, start: sweeper.start, stop: sweeper.stop };
}
