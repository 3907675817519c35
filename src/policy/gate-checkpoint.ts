/**
 * A task's question (`input-required`) as a checkpoint in the inbox, and its answer sent back to
 * the agent on the same task, once.
 */
import { decide } from './decide.js';
import { sha256Hex } from './fingerprint.js';
import type { GateContext } from './gate-context.js';
import { CHECKPOINT_KINDS, HOLD_KINDS, approvalEvent, facts } from './gate-context.js';
import type { CheckpointCall, ResumeVerdict } from './gate-types.js';
import type { ApprovalRecord } from './inbox.js';
import { defined } from '../protocol/fields/index.js';

/**
 * Puts a task's question in the inbox (`HitlGate.checkpoint`), once per dispatch and task while it
 * is open; for a `compound` skill it is a checkpoint an approver answers.
 */
export async function askCheckpoint(
  ctx: GateContext,
  call: CheckpointCall,
): Promise<ApprovalRecord> {
  const { declarations, inbox, publish, now, rules, version } = ctx;
  const open = await inbox.byDispatch(call.dispatchId, CHECKPOINT_KINDS);
  if (open?.status === 'pending' && open.taskId === call.taskId) return open;
  const decision = decide(facts(ctx, call.agent, call.skill), rules);
  const compound = decision.mode === 'compound';
  const record = await inbox.request({
    kind: 'checkpoint',
    dispatchId: call.dispatchId,
    agent: call.agent,
    skill: call.skill,
    correlationId: call.correlationId,
    fingerprint: sha256Hex(`${call.dispatchId}\n${call.taskId}\n${call.question}`),
    policyVersion: version,
    mode: compound ? 'compound' : decision.mode,
    radius: decision.effectiveRadius,
    requestedBy:
      call.requestedBy ??
      (await inbox.byDispatch(call.dispatchId, HOLD_KINDS))?.requestedBy ??
      null,
    requiredApprovals: 1,
    input: {},
    domains: (() => {
      const d = declarations.domains(call.agent, call.skill);
      return d === undefined ? null : [...d];
    })(),
    reasons: decision.reasons,
    expiresAt: now() + rules.approvalTtlMs,
    taskId: call.taskId,
    ...defined({ contextId: call.contextId }),
    question: call.question,
  });
  await publish('hitl.approval.requested', approvalEvent(record));
  return record;
}

/** The answer to a dispatch's checkpoint, once it was given (`HitlGate.resume`). */
export async function resumeCheckpoint(
  ctx: GateContext,
  call: { dispatchId: string },
): Promise<ResumeVerdict> {
  const { inbox, publish } = ctx;
  const checkpoint = await inbox.byDispatch(call.dispatchId, CHECKPOINT_KINDS);
  if (checkpoint === undefined || checkpoint.taskId === null) {
    return { action: 'wait', reason: 'no checkpoint' };
  }
  switch (checkpoint.status) {
    case 'approved':
      break;
    case 'rejected':
      return {
        action: 'deny',
        reason: `checkpoint rejected by ${checkpoint.decidedBy ?? '?'}: ${checkpoint.reason ?? 'rejected'}`,
        code: 'FLEETGATE_APPROVAL_REJECTED',
      };
    case 'expired':
      return {
        action: 'deny',
        reason: 'the checkpoint was not answered in time',
        code: 'FLEETGATE_APPROVAL_EXPIRED',
      };
    case 'pending':
    case 'consumed':
    case 'void':
      return { action: 'wait', reason: `checkpoint ${checkpoint.status}` };
  }
  const { taskId, contextId, answer } = checkpoint;
  return {
    action: 'answer',
    taskId,
    ...(contextId === null ? {} : { contextId }),
    text: answer ?? '',
    claim: async (move) => {
      const ok = await inbox.consume(checkpoint.id, checkpoint.fingerprint, move);
      if (ok) {
        await publish('hitl.approval.decided', {
          ...approvalEvent((await inbox.get(checkpoint.id)) ?? checkpoint),
          outcome: 'answered',
        });
      }
      return ok;
    },
  };
}
