/**
 * The one port through which callers read a skill's effective declarations: the extension chain
 * (stamps), the alerts (reconciliation, severity) and the policy. The fleet's declaration book
 * implements it; readers depend on this type, never on `fleet`.
 */
import type { BlastRadius } from './radius.js';
import type { HitlMode } from './hitl.js';

/** The effective blast radius of a skill. */
export interface EffectiveBlast {
  /**
   * max(declared, acknowledged, operator floor); `undefined` when the skill declares no radius
   * (unknown: the policy applies its unknown rule).
   */
  readonly radius: BlastRadius | undefined;
  /** True while the agent's card is stale: readers fall back to the unknown rule. */
  readonly stale: boolean;
}

/** The effective hitl mode of a skill. */
export interface EffectiveHitl {
  /** max(declared, acknowledged); `undefined` when the skill declares no mode. */
  readonly mode: HitlMode | undefined;
  /** The veto window the agent declared, for `veto`. */
  readonly vetoTtlMs: number | undefined;
  readonly stale: boolean;
}

/** `(agent, skill)` → effective declarations, with the ratchet and floors already applied. */
export interface DeclarationLookup {
  /** Effective blast-v1 radius (what `x-blast-radius` carries and the gate uses). */
  blast(agent: string, skill: string): EffectiveBlast;
  /** Effective hitl-mode-v1 mode (what `x-hitl-mode` carries). */
  hitlMode(agent: string, skill: string): EffectiveHitl;
  /** Domains the skill declared in effect-domain-v1 params; `undefined` when it declared none. */
  effectDomains(agent: string, skill: string): readonly string[] | undefined;
}
