/**
 * The HITL gate at dispatch: `decide` applied to a call (or a follow-up), which goes at once, is
 * refused, or is held in the inbox until a human decides.
 */
import { defined } from '../protocol/fields/index.js';
import { decide } from './decide.js';
import type { GateContext } from './gate-context.js';
import { approvalEvent, facts, fingerprintOf, liveGrants, summary } from './gate-context.js';
import type { GateCall, GateVerdict } from './gate-types.js';
import type { HeldInput } from './inbox.js';
import type { Decision } from './types.js';

/**
 * Holds a call in the inbox: a `veto` (or a veto skill's follow-up) until its window ends, any
 * other until approved; publishes `hitl.approval.requested`.
 */
async function hold(
  ctx: GateContext,
  call: GateCall,
  decision: Decision,
  fingerprint: string,
  input: HeldInput,
): Promise<GateVerdict> {
  const { declarations, inbox, publish, now, rules, version } = ctx;
  const veto = decision.mode === 'veto';
  const at = now();
  const followUp = call.followUp;
  const record = await inbox.request({
    kind: followUp !== undefined ? 'follow-up' : veto ? 'veto' : 'dispatch',
    dispatchId: call.dispatchId ?? call.correlationId,
    agent: call.agent,
    skill: call.skill,
    correlationId: call.correlationId,
    fingerprint,
    policyVersion: version,
    mode: decision.mode,
    radius: decision.effectiveRadius,
    requestedBy: call.requestedBy ?? null,
    requiredApprovals: decision.approvers,
    input,
    domains: (() => {
      const d = declarations.domains(call.agent, call.skill);
      return d === undefined ? null : [...d];
    })(),
    reasons: decision.reasons,
    expiresAt: at + (veto ? (decision.vetoTtlMs ?? rules.vetoWindowMs) : rules.approvalTtlMs),
    ...(followUp === undefined
      ? {}
      : {
          taskId: followUp.taskId,
          ...defined({ contextId: followUp.contextId }),
        }),
  });
  await publish('hitl.approval.requested', approvalEvent(record));
  return veto
    ? {
        action: 'hold',
        reason: `veto window until ${new Date(record.expiresAt).toISOString()}: ${summary(decision)}`,
        approvalId: record.id,
        goAt: record.expiresAt,
        decision,
      }
    : {
        action: 'hold',
        reason: `approval required (${decision.approvers}): ${summary(decision)}`,
        approvalId: record.id,
        decision,
      };
}

/**
 * The verdict of a call that goes at once (`HitlGate.decideAtOnce`): allowed when the policy makes
 * it autonomous, undefined for every other call (notification publishes, the rest may write).
 */
export function decideAtOnce(ctx: GateContext, call: GateCall): GateVerdict | undefined {
  const decision = decide(facts(ctx, call.agent, call.skill), ctx.rules);
  return decision.deny === undefined && decision.mode === 'autonomous'
    ? { action: 'allow', decision }
    : undefined;
}

/**
 * Decides a call at dispatch (`HitlGate.decide`): autonomous and notification go (the latter
 * published), an identical call rejected within the cooldown is refused, a standing approval
 * covering the call lets it go (one use taken), anything else is held.
 */
export async function decideAtDispatch(ctx: GateContext, call: GateCall): Promise<GateVerdict> {
  const { inbox, publish, now, rules } = ctx;
  const input = facts(ctx, call.agent, call.skill);
  let decision = decide(input, rules);
  if (decision.deny !== undefined) {
    return { action: 'deny', reason: decision.deny.reason, decision };
  }
  switch (decision.mode) {
    case 'autonomous':
      return { action: 'allow', decision };
    case 'notification':
      await publish('hitl.notification', {
        agent: call.agent,
        skill: call.skill,
        ...defined({ dispatchId: call.dispatchId }),
        correlationId: call.correlationId,
        radius: decision.effectiveRadius,
        reasons: decision.reasons,
      });
      return { action: 'allow', decision };
    case 'veto':
    case 'gated':
    case 'compound':
      break;
  }
  const held = call.input ?? {};
  const fingerprint = fingerprintOf(ctx, call, decision, held);
  const rejected = await inbox.recentRejection(fingerprint, now() - rules.rejectCooldownMs);
  if (rejected !== undefined) {
    decision.reasons.push({
      kind: 'rejected-before',
      detail: `identical call rejected by ${rejected.decidedBy ?? '?'} at ${new Date(rejected.decidedAt ?? 0).toISOString()}: ${rejected.reason ?? ''}`,
    });
    return {
      action: 'deny',
      reason: `rejected before by ${rejected.decidedBy ?? '?'}: ${rejected.reason ?? 'rejected'}`,
      code: 'FLEETGATE_APPROVAL_REJECTED_RECENTLY',
      decision,
    };
  }
  const grants = await liveGrants(ctx, call.agent, call.skill);
  if (grants.length > 0) {
    decision = decide({ ...input, standing: grants, now: now() }, rules);
    if (
      decision.standing !== undefined &&
      (await inbox.useStanding(decision.standing, call.dispatchId ?? call.correlationId))
    ) {
      return { action: 'allow', decision };
    }
  }
  return hold(ctx, call, decision, fingerprint, held);
}
