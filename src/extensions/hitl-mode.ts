import { HITL_MODE_V1_URI, STAMPS, type HitlModeDeclaration } from '../protocol/index.js';
import type { Extension, SkillCallContext } from './types.js';

/** Dependencies of {@link createHitlModeExtension}. */
export interface HitlModeExtensionOptions {
  /**
   * The mode to stamp: the *effective* mode (declared, held by the narrowing ratchet) — the
   * fleet's declaration book (`broker.stamps.hitlMode`). By default the card's own declaration
   * (`ctx.declarations.hitlMode[skill]`), for a client with no fleet behind it.
   */
  lookup?: (ctx: SkillCallContext) => HitlModeDeclaration | undefined;
}

/**
 * hitl-mode-v1. `before` stamps `x-hitl-mode` with the skill's effective mode and,
 * for `veto` only, `x-hitl-veto-ttl-ms` when a veto window is declared. No `after`.
 */
export function createHitlModeExtension(options: HitlModeExtensionOptions = {}): Extension {
  const lookup =
    options.lookup ??
    ((ctx: SkillCallContext) =>
      Object.hasOwn(ctx.declarations.hitlMode, ctx.skill)
        ? ctx.declarations.hitlMode[ctx.skill]
        : undefined);
  return {
    uri: HITL_MODE_V1_URI,
    description: 'Stamps the effective human-in-the-loop mode of the skill.',
    before(ctx) {
      const declaration = lookup(ctx);
      if (declaration === undefined) return;
      ctx.stamp(STAMPS.hitlMode, declaration.mode);
      if (declaration.mode === 'veto' && declaration.vetoTtlMs !== undefined) {
        ctx.stamp(STAMPS.hitlVetoTtlMs, String(declaration.vetoTtlMs));
      }
    },
  };
}
