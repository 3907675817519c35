/**
 * How the policy room meets the rest of the gateway: the card broker's effective declarations as
 * the policy's port, and the config's `policy:` section as its rules. Used by the composition root
 * and by the CLI's `policy explain`, so both decide alike.
 */
import type { EffectiveDeclarations, PolicyRules } from '../policy/index.js';
import type { FleetgateConfig } from './config.js';
import type { FleetRuntime } from './fleet-runtime.js';

/** The fleet side as the policy reads it: the broker's effective declarations. */
export function policyDeclarations(runtime: FleetRuntime): EffectiveDeclarations {
  const { broker, registries } = runtime;
  return {
    effectiveRadius(agent, skill) {
      const { floorSource, ...facts } = broker.effectiveRadius(agent, skill);
      if (floorSource === undefined) return facts;
      const reason =
        floorSource === 'learned' ? 'learned from an observed violation' : 'operator floor';
      return { ...facts, floorSource: { reason } };
    },
    effectiveHitlMode(agent, skill) {
      const mode = broker.effectiveHitlMode(agent, skill);
      const reviewer = registries.hitlMode.get(agent, skill)?.reviewer;
      return reviewer === undefined ? mode : { ...mode, reviewer };
    },
    domains: (agent, skill) => broker.declaredDomains(agent, skill),
  };
}

/** The config's `policy:` section as the policy's rules (durations already in milliseconds). */
export function policyRules(policy: FleetgateConfig['policy']): PolicyRules {
  return {
    unknownRadius: policy.unknownRadius,
    approvalAtOrAbove: policy.approvalAtOrAbove,
    vetoAtOrAbove: policy.vetoAtOrAbove,
    notifyAtOrAbove: policy.notifyAtOrAbove,
    vetoWindowMs: policy.vetoWindow,
    approvalTtlMs: policy.approvalTtl,
    rejectCooldownMs: policy.rejectCooldown,
    approvers: policy.approvers,
    overrides: policy.overrides,
  };
}
