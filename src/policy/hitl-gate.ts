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
import { decide } from './decide.js';
import { policyVersion } from './fingerprint.js';
import { askCheckpoint, resumeCheckpoint } from './gate-checkpoint.js';
import type { GateContext } from './gate-context.js';
import { facts, fingerprintOf, liveGrants } from './gate-context.js';
import { decideAtDispatch, decideAtOnce } from './gate-dispatch.js';
import { continueHeldFollowUp, releaseHeld, settleDecided, sweepInbox } from './gate-release.js';
import type { HitlGate, HitlGateOptions } from './gate-types.js';

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
import type { PolicyRules } from './types.js';
import { DEFAULT_POLICY_RULES } from './types.js';

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
  const ctx: GateContext = { rules, version, declarations, inbox, publish, now };

  const gate: HitlGate = {
    rules,
    policyVersion: version,
    inbox,

    decide: (call) => decideAtDispatch(ctx, call),
    decideAtOnce: (call) => decideAtOnce(ctx, call),
    release: (call) => releaseHeld(ctx, call),
    continueFollowUp: (call) => continueHeldFollowUp(ctx, call),
    checkpoint: (call) => askCheckpoint(ctx, call),
    resume: (call) => resumeCheckpoint(ctx, call),

    answer: (id, by, text, reason) => inbox.answer(id, by, text, reason),

    async explain(agent, skill, input) {
      const base = facts(ctx, agent, skill);
      const grants = await liveGrants(ctx, agent, skill);
      const decision = decide({ ...base, standing: grants, now: now() }, rules);
      return {
        agent,
        skill,
        decision,
        policyVersion: version,
        ...(input === undefined
          ? {}
          : { fingerprint: fingerprintOf(ctx, { agent, skill }, decision, input) }),
      };
    },

    approve: (id, by, reason) => inbox.approve(id, by, reason),
    reject: (id, by, reason) => inbox.reject(id, by, reason),
    snooze: (id, by, forMs, reason) => inbox.snooze(id, by, now() + forMs, reason),

    sweep: () => sweepInbox(ctx),
    settle: (id) => settleDecided(ctx, id),

    grant: (grant) => inbox.grantStanding(grant),
    revoke: (id, by, reason) => inbox.revokeStanding(id, by, reason),
  };
  return gate;
}
