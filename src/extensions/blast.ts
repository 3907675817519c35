import { BLAST_V1_URI, STAMPS, type BlastDeclaration } from '../protocol/index.js';
import type { Extension } from './types.js';

/** Where blast-v1 looks up a declaration; the fleet's `BlastRegistry` is one. */
export interface BlastLookup {
  get(agent: string, skill: string): BlastDeclaration | undefined;
}

/** Dependencies of {@link createBlastExtension}. */
export interface BlastExtensionOptions {
  /** The blast registry (populated from cards by the card broker). */
  blast: BlastLookup;
}

/**
 * blast-v1. `before` stamps `x-blast-radius` when the agent declared a radius for the skill; an
 * undeclared skill gets no stamp (unknown is the policy's business, not the wire's). No `after`.
 */
export function createBlastExtension(options: BlastExtensionOptions): Extension {
  const { blast } = options;
  return {
    uri: BLAST_V1_URI,
    description: 'Stamps the blast radius the agent declared for the skill.',
    before(ctx) {
      const declaration = blast.get(ctx.agent, ctx.skill);
      if (declaration !== undefined) ctx.stamp(STAMPS.blastRadius, declaration.radius);
    },
  };
}
