import type { DeclarationLookup } from '../protocol/index.js';
import type { CardBroker } from './card-broker.js';

/** What {@link declarationLookupOf} reads: the effective views of the card broker. */
export type EffectiveDeclarationSource = Pick<
  CardBroker,
  'effectiveRadius' | 'effectiveHitlMode' | 'declaredDomains'
>;

/**
 * The protocol's {@link DeclarationLookup} port over the fleet's effective declarations (ratchet
 * and floors applied), for the extension chain, the alerts and the policy.
 *
 * @example
 * ```ts
 * createReconciler({ bus, declarations: declarationLookupOf(broker) });
 * ```
 */
export function declarationLookupOf(source: EffectiveDeclarationSource): DeclarationLookup {
  return {
    blast: (agent, skill) => source.effectiveRadius(agent, skill),
    hitlMode: (agent, skill) => source.effectiveHitlMode(agent, skill),
    effectDomains: (agent, skill) => source.declaredDomains(agent, skill),
  };
}
