import { BLAST_V1_URI, STAMPS, type BlastRadius } from '../protocol/index.js';
import type { Extension, SkillCallContext } from './types.js';

/** Dependencies of {@link createBlastExtension}. */
export interface BlastExtensionOptions {
  /**
   * The radius to stamp: the *effective* radius (declared, raised by the narrowing ratchet and
   * floors) — the fleet's declaration book (`broker.stamps.radius`). By default the card's own
   * declaration (`ctx.declarations.blast[skill]`), for a client with no fleet behind it.
   */
  lookup?: (ctx: SkillCallContext) => BlastRadius | undefined;
}

const declaredRadius = (ctx: SkillCallContext): BlastRadius | undefined =>
  Object.hasOwn(ctx.declarations.blast, ctx.skill)
    ? ctx.declarations.blast[ctx.skill]?.radius
    : undefined;

/**
 * blast-v1. `before` stamps `x-blast-radius` with the skill's effective radius; a skill that
 * declares none gets no stamp (unknown is the policy's business, not the wire's). No `after`.
 */
export function createBlastExtension(options: BlastExtensionOptions = {}): Extension {
  const lookup = options.lookup ?? declaredRadius;
  return {
    uri: BLAST_V1_URI,
    description: 'Stamps the effective blast radius of the skill.',
    before(ctx) {
      const radius = lookup(ctx);
      if (radius !== undefined) ctx.stamp(STAMPS.blastRadius, radius);
    },
  };
}
