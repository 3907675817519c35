/**
 * Letting a held call (or follow-up) go: re-checked first against the declarations and rules as
 * they are now, the approval consumed in the same transaction that moves the dispatch on; and the
 * sweep and settling that move decided requests on.
 */
import { HITL_ORDER } from '../protocol/index.js';
import { decide } from './decide.js';
import type { GateContext } from './gate-context.js';
import { HOLD_KINDS, approvalEvent, facts, fingerprintOf } from './gate-context.js';
import type { FollowUpVerdict, GateCall, ReleaseVerdict } from './gate-types.js';
import type { ApprovalRecord } from './inbox.js';
import { hasVetoWindow } from './inbox.js';

/** Expires overdue requests and returns those whose dispatch must move on (`HitlGate.sweep`). */
export async function sweepInbox(ctx: GateContext): Promise<ApprovalRecord[]> {
  await ctx.inbox.expireDue();
  return ctx.inbox.unsettled();
}

/**
 * Whether a held call (or follow-up) may go now: approved, or a veto window that ended unvetoed,
 * and the same call under the policy as it is now (else the approval is void).
 */
async function releaseVerdict(ctx: GateContext, approval: ApprovalRecord): Promise<ReleaseVerdict> {
  const { inbox, publish, now, rules, version } = ctx;
  switch (approval.status) {
    case 'rejected':
      return {
        action: 'deny',
        reason: `rejected by ${approval.decidedBy ?? '?'}: ${approval.reason ?? 'rejected'}`,
        code: 'FLEETGATE_APPROVAL_REJECTED',
      };
    case 'expired':
      return {
        action: 'deny',
        reason: 'the approval expired',
        code: 'FLEETGATE_APPROVAL_EXPIRED',
      };
    case 'void':
    case 'consumed':
      return {
        action: 'deny',
        reason: `the approval is ${approval.status}${approval.reason === null ? '' : `: ${approval.reason}`}`,
        code: 'FLEETGATE_APPROVAL_VOID',
      };
    case 'pending':
      if (approval.expiresAt > now()) {
        return {
          action: 'wait',
          reason: `waiting for ${hasVetoWindow(approval) ? 'the veto window' : 'approval'}`,
        };
      }
      if (!hasVetoWindow(approval)) {
        await sweepInbox(ctx);
        return {
          action: 'deny',
          reason: 'the approval expired',
          code: 'FLEETGATE_APPROVAL_EXPIRED',
        };
      }
      break;
    case 'approved':
      break;
  }
  // Re-check just before the call goes out: a changed radius or policy voids the approval.
  const decision = decide(facts(ctx, approval.agent, approval.skill), rules);
  const fingerprint = fingerprintOf(ctx, approval, decision, approval.input);
  // A mode that tightened since (a veto skill now declared gated) needs the stricter decision.
  const stricter = HITL_ORDER[decision.mode] > HITL_ORDER[approval.mode];
  if (decision.deny !== undefined || fingerprint !== approval.fingerprint || stricter) {
    const why =
      decision.deny?.reason ??
      (stricter
        ? `the call now needs ${decision.mode}, it was held as ${approval.mode}`
        : `the call changed since it was approved (radius now ${decision.effectiveRadius ?? 'unknown'}, policy ${version})`);
    await inbox.voidApproval(approval.id, why);
    return { action: 'deny', reason: why, code: 'FLEETGATE_APPROVAL_VOID' };
  }
  return {
    action: 'go',
    input: approval.input,
    claim: async (move) => {
      const ok = await inbox.consume(approval.id, approval.fingerprint, move);
      if (ok) {
        const decided = await inbox.get(approval.id);
        if (decided !== undefined) {
          await publish('hitl.approval.decided', {
            ...approvalEvent(decided),
            outcome:
              hasVetoWindow(approval) && approval.status === 'pending' ? 'not-vetoed' : 'approved',
          });
        }
      }
      return ok;
    },
  };
}

/** Re-checks the call held for a dispatch (`HitlGate.release`); `go` when it may be sent now. */
export async function releaseHeld(
  ctx: GateContext,
  call: GateCall & { dispatchId: string },
): Promise<ReleaseVerdict> {
  const approval = await ctx.inbox.byDispatch(call.dispatchId, HOLD_KINDS);
  if (approval === undefined) {
    return {
      action: 'deny',
      reason: 'no approval holds this dispatch',
      code: 'FLEETGATE_APPROVAL_VOID',
    };
  }
  return releaseVerdict(ctx, approval);
}

/** A held follow-up, once decided (`HitlGate.continueFollowUp`), with the task it goes to. */
export async function continueHeldFollowUp(
  ctx: GateContext,
  call: { approvalId: string },
): Promise<FollowUpVerdict> {
  const approval = await ctx.inbox.get(call.approvalId);
  if (approval?.kind !== 'follow-up' || approval.taskId === null) {
    return {
      action: 'deny',
      reason: `no follow-up approval ${call.approvalId}`,
      code: 'FLEETGATE_APPROVAL_VOID',
    };
  }
  const verdict = await releaseVerdict(ctx, approval);
  if (verdict.action !== 'go') return verdict;
  return {
    ...verdict,
    dispatchId: approval.dispatchId,
    taskId: approval.taskId,
    ...(approval.contextId === null ? {} : { contextId: approval.contextId }),
  };
}

/**
 * Marks a request settled once its dispatch moved on (`HitlGate.settle`) and publishes its
 * outcome, once: the replica whose settle wins publishes.
 */
export async function settleDecided(ctx: GateContext, id: string): Promise<void> {
  const { inbox, publish } = ctx;
  const before = await inbox.get(id);
  if (before === undefined || !(await inbox.settle(id))) return;
  switch (before.status) {
    case 'expired':
      await publish('hitl.approval.expired', approvalEvent(before));
      return;
    case 'rejected':
    case 'void':
      await publish('hitl.approval.decided', {
        ...approvalEvent(before),
        outcome: before.status,
      });
      return;
    case 'pending':
    case 'approved':
    case 'consumed':
      return;
  }
}
