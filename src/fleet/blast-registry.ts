import type {
  BlastDeclaration,
  BlastRadius,
  Declarations,
  EffectDomainDeclaration,
  HitlModeDeclaration,
} from '../protocol/index.js';
import { compareRadius } from '../protocol/index.js';
import type { Provenance, SkillRef } from './declaration-registry.js';
import { DeclarationRegistry } from './declaration-registry.js';

export type { Provenance, RegistryEntry, SkillRef } from './declaration-registry.js';
export { DeclarationRegistry } from './declaration-registry.js';

/**
 * `(agent, skill) → blast-v1 declaration`, filled from cards by the card broker so the HITL
 * policy, dashboards, alerts and the blast-v1 extension query it without re-fetching a card. A
 * missing declaration means **unknown**: what unknown means is the policy's decision, never this
 * registry's. The *declared* radius lives here; the *effective* radius (with floors and the
 * narrowing ratchet) is the card broker's `effectiveRadius`.
 *
 * @example
 * ```ts
 * const blast = new BlastRegistry();
 * blast.declareFromCard('quinn', readDeclarations(card));
 * blast.get('quinn', 'pr_review'); // { radius: 'repo' }
 * ```
 */
export class BlastRegistry extends DeclarationRegistry<BlastDeclaration> {
  /**
   * Replaces every declaration of `agent` with what its card declares now: a skill the card no
   * longer declares is unknown again.
   */
  declareFromCard(
    agent: string,
    declarations: Pick<Declarations, 'blast'>,
    provenance?: Provenance,
  ): void {
    this.replaceAgent(agent, declarations.blast, provenance);
  }

  /**
   * Orders two skills by declared radius, narrowest first (a sort comparator, a planner's
   * tie-breaker). An undeclared skill counts as `unknownAs` (default `public`, the worst case).
   */
  compare(a: SkillRef, b: SkillRef, unknownAs: BlastRadius = 'public'): number {
    const ra = this.get(a.agent, a.skill)?.radius ?? unknownAs;
    const rb = this.get(b.agent, b.skill)?.radius ?? unknownAs;
    return compareRadius(ra, rb);
  }
}

/** `(agent, skill) → hitl-mode-v1 declaration`, filled by the card broker. */
export class HitlModeRegistry extends DeclarationRegistry<HitlModeDeclaration> {}

/** `(agent, skill) → effect-domain-v1 declaration` (the domains a skill may change). */
export class EffectDomainRegistry extends DeclarationRegistry<EffectDomainDeclaration> {}
