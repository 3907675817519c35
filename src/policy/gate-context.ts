/**
 * What every part of the HITL gate shares: its options resolved once by `createHitlGate`, and the
 * facts, grants and fingerprints it decides from.
 */
import type { ApprovalEvent } from '../protocol/index.js';
import { callFingerprint, normaliseInput } from './fingerprint.js';
import type { ApprovalInbox, ApprovalRecord, HeldInput, StandingRecord } from './inbox.js';
import type {
  Decision,
  DecisionInput,
  EffectiveDeclarations,
  PolicyPublish,
  PolicyRules,
} from './types.js';

/** The kinds of approval that hold a dispatch until it may go. */
export const HOLD_KINDS = ['dispatch', 'veto'] as const;
/** The kind of approval that carries a task's question. */
export const CHECKPOINT_KINDS = ['checkpoint'] as const;

/** The gate's options with the rules filled in and the policy version they give. */
export interface GateContext {
  readonly rules: PolicyRules;
  readonly version: string;
  readonly declarations: EffectiveDeclarations;
  readonly inbox: ApprovalInbox;
  readonly publish: PolicyPublish;
  readonly now: () => number;
}

/** The `hitl.approval.*` event of a record: the record without the held input. */
export function approvalEvent(record: ApprovalRecord): ApprovalEvent {
  const { input: _input, ...rest } = record;
  return rest;
}

/** What `decide` is given about an agent/skill: the declarations as they are now. */
export function facts(ctx: GateContext, agent: string, skill: string): DecisionInput {
  return {
    agent,
    skill,
    radius: ctx.declarations.effectiveRadius(agent, skill),
    hitl: ctx.declarations.effectiveHitlMode(agent, skill),
  };
}

/** The standing approvals of an agent/skill that may still be used. */
export async function liveGrants(
  ctx: GateContext,
  agent: string,
  skill: string,
): Promise<StandingRecord[]> {
  return ctx.inbox.listStanding({ agent, skill, live: true });
}

/** What binds an approval to the exact call: agent, skill, input, radius and policy version. */
export function fingerprintOf(
  ctx: GateContext,
  call: { agent: string; skill: string },
  decision: Decision,
  input: HeldInput,
): string {
  return callFingerprint({
    agent: call.agent,
    skill: call.skill,
    input: normaliseInput(input),
    radius: decision.effectiveRadius,
    policyVersion: ctx.version,
  });
}

/** A decision's reasons on one line. */
export function summary(decision: Decision): string {
  return decision.reasons.map((r) => r.detail).join('; ');
}
