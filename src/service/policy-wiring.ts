/**
 * How the policy room meets the rest of the gateway: the card broker's effective declarations as
 * the policy's port, and the config's `policy:` section as its rules. Used by the composition root
 * and by the CLI's `policy explain`, so both decide alike.
 */
import type { EffectiveDeclarations, PolicyRules, RadiusFacts } from '../policy/index.js';
import type { Diagnostic } from '../protocol/index.js';
import { BLAST_V1_URI, jsonPath } from '../protocol/index.js';
import type { FleetgateConfig } from './config.js';
import type { FleetRuntime } from './fleet-runtime.js';

/**
 * The card reader's error on a skill's blast-v1 radius (`…params.skills.<skill>.radius`), when it
 * refused the one the card declares; undefined when the card declares none.
 */
function refusedRadius(
  declarations: { declared: { canonicalUri: string; path: string }[]; diagnostics: Diagnostic[] },
  skill: string,
): RadiusFacts['refused'] {
  const entry = declarations.declared.find((d) => d.canonicalUri === BLAST_V1_URI);
  if (entry === undefined) return undefined;
  const path = jsonPath(
    jsonPath(jsonPath(jsonPath(entry.path, 'params'), 'skills'), skill),
    'radius',
  );
  const found = declarations.diagnostics.find((d) => d.severity === 'error' && d.path === path);
  return found === undefined ? undefined : { path: found.path, message: found.message };
}

/** The fleet side as the policy reads it: the broker's effective declarations. */
export function policyDeclarations(runtime: FleetRuntime): EffectiveDeclarations {
  const { broker, registries } = runtime;
  return {
    effectiveRadius(agent, skill) {
      const { floorSource, ...effective } = broker.effectiveRadius(agent, skill);
      // Only a skill without a radius asks why: the card's diagnostics are read off the hot path.
      const loaded = effective.declared === undefined ? broker.get(agent) : undefined;
      const refused = loaded === undefined ? undefined : refusedRadius(loaded.declarations, skill);
      const facts: RadiusFacts = refused === undefined ? effective : { ...effective, refused };
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
