/**
 * The HITL gate: `decide` applied at dispatch, with the approvals inbox behind it.
 *
 * - autonomous → go; notification → go and publish `hitl.notification`;
 * - veto → hold until the window ends, then go unless an approver rejected it;
 * - gated / compound → hold until approved by the required approvers, then go once;
 * - an identical call rejected within the cooldown is refused at once with the earlier reason;
 * - a standing approval covering the call lets it go without asking (one use taken, audited);
 * - a follow-up to a running task (`call.followUp`) is decided the same way; held, it waits as a
 *   `follow-up` approval (a `veto` skill's with its window) and is sent on the task once let go.
 *
 * Releasing a held call re-checks it first: the fingerprint is computed again from the current
 * declarations and rules, and the approval is consumed in the same transaction that moves the
 * dispatch on, so a changed call, a second release or a second replica never sends it twice.
 */
import { HITL_ORDER } from '../protocol/index.js';
import type { ApprovalEvent } from '../protocol/index.js';
import { decide } from './decide.js';
import { callFingerprint, normaliseInput, policyVersion, sha256Hex } from './fingerprint.js';
import type {
  GateCall,
  GateVerdict,
  HitlGate,
  HitlGateOptions,
  ReleaseVerdict,
} from './gate-types.js';
import type { ApprovalRecord, HeldInput, StandingRecord } from './inbox.js';
import { hasVetoWindow } from './inbox.js';

export type {
  CheckpointCall,
  Explanation,
  FollowUpVerdict,
  GateCall,
  GateVerdict,
  HitlGate,
  HitlGateOptions,
  ReleaseVerdict,
  ResumeVerdict,
} from './gate-types.js';
import type { Decision, DecisionInput, PolicyRules } from './types.js';
import { DEFAULT_POLICY_RULES } from './types.js';

const HOLD_KINDS = ['dispatch', 'veto'] as const;
const CHECKPOINT_KINDS = ['checkpoint'] as const;

function approvalEvent(record: ApprovalRecord): ApprovalEvent {
  const { input: _input, ...rest } = record;
  return rest;
}

/**
 * Builds the HITL gate.
 *
 * @example
 * ```ts
 * const gate = createHitlGate({ declarations, inbox: createApprovalInbox({ db }), publish });
 * const dispatcher = new Dispatcher({ ..., gate });
 * ```
 */
export function createHitlGate(options: HitlGateOptions): HitlGate {
  const rules: PolicyRules = { ...DEFAULT_POLICY_RULES, ...options.rules };
  const version = policyVersion(rules);
  const { declarations, inbox, publish } = options;
  const now = options.now ?? Date.now;

  const facts = (agent: string, skill: string): DecisionInput => ({
    agent,
    skill,
    radius: declarations.effectiveRadius(agent, skill),
    hitl: declarations.effectiveHitlMode(agent, skill),
  });
  const liveGrants = async (agent: string, skill: string): Promise<StandingRecord[]> =>
    inbox.listStanding({ agent, skill, live: true });
  const fingerprintOf = (
    call: { agent: string; skill: string },
    decision: Decision,
    input: HeldInput,
  ): string =>
    callFingerprint({
      agent: call.agent,
      skill: call.skill,
      input: normaliseInput(input),
      radius: decision.effectiveRadius,
      policyVersion: version,
    });
  const summary = (decision: Decision): string => decision.reasons.map((r) => r.detail).join('; ');

  const hold = async (
    call: GateCall,
    decision: Decision,
    fingerprint: string,
    input: HeldInput,
  ): Promise<GateVerdict> => {
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
            ...(followUp.contextId === undefined ? {} : { contextId: followUp.contextId }),
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
  };

  /**
   * Whether a held call (or follow-up) may go now: approved, or a veto window that ended unvetoed,
   * and the same call under the policy as it is now (else the approval is void).
   */
  const releaseVerdict = async (approval: ApprovalRecord): Promise<ReleaseVerdict> => {
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
          await gate.sweep();
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
    const decision = decide(facts(approval.agent, approval.skill), rules);
    const fingerprint = fingerprintOf(approval, decision, approval.input);
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
                hasVetoWindow(approval) && approval.status === 'pending'
                  ? 'not-vetoed'
                  : 'approved',
            });
          }
        }
        return ok;
      },
    };
  };

  const gate: HitlGate = {
    rules,
    policyVersion: version,
    inbox,

    async decide(call) {
      const input = facts(call.agent, call.skill);
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
            ...(call.dispatchId === undefined ? {} : { dispatchId: call.dispatchId }),
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
      const fingerprint = fingerprintOf(call, decision, held);
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
      const grants = await liveGrants(call.agent, call.skill);
      if (grants.length > 0) {
        decision = decide({ ...input, standing: grants, now: now() }, rules);
        if (
          decision.standing !== undefined &&
          (await inbox.useStanding(decision.standing, call.dispatchId ?? call.correlationId))
        ) {
          return { action: 'allow', decision };
        }
      }
      return hold(call, decision, fingerprint, held);
    },

    async release(call) {
      const approval = await inbox.byDispatch(call.dispatchId, HOLD_KINDS);
      if (approval === undefined) {
        return {
          action: 'deny',
          reason: 'no approval holds this dispatch',
          code: 'FLEETGATE_APPROVAL_VOID',
        };
      }
      return releaseVerdict(approval);
    },

    async continueFollowUp(call) {
      const approval = await inbox.get(call.approvalId);
      if (approval?.kind !== 'follow-up' || approval.taskId === null) {
        return {
          action: 'deny',
          reason: `no follow-up approval ${call.approvalId}`,
          code: 'FLEETGATE_APPROVAL_VOID',
        };
      }
      const verdict = await releaseVerdict(approval);
      if (verdict.action !== 'go') return verdict;
      return {
        ...verdict,
        dispatchId: approval.dispatchId,
        taskId: approval.taskId,
        ...(approval.contextId === null ? {} : { contextId: approval.contextId }),
      };
    },

    async checkpoint(call) {
      const open = await inbox.byDispatch(call.dispatchId, CHECKPOINT_KINDS);
      if (open?.status === 'pending' && open.taskId === call.taskId) return open;
      const decision = decide(facts(call.agent, call.skill), rules);
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
        ...(call.contextId === undefined ? {} : { contextId: call.contextId }),
        question: call.question,
      });
      await publish('hitl.approval.requested', approvalEvent(record));
      return record;
    },

    async resume(call) {
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
    },

    answer: (id, by, text, reason) => inbox.answer(id, by, text, reason),

    async explain(agent, skill, input) {
      const base = facts(agent, skill);
      const grants = await liveGrants(agent, skill);
      const decision = decide({ ...base, standing: grants, now: now() }, rules);
      return {
        agent,
        skill,
        decision,
        policyVersion: version,
        ...(input === undefined
          ? {}
          : { fingerprint: fingerprintOf({ agent, skill }, decision, input) }),
      };
    },

    approve: (id, by, reason) => inbox.approve(id, by, reason),
    reject: (id, by, reason) => inbox.reject(id, by, reason),
    snooze: (id, by, forMs, reason) => inbox.snooze(id, by, now() + forMs, reason),

    async sweep() {
      await inbox.expireDue();
      return inbox.unsettled();
    },

    async settle(id) {
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
    },

    grant: (grant) => inbox.grantStanding(grant),
    revoke: (id, by, reason) => inbox.revokeStanding(id, by, reason),
  };
  return gate;
}
