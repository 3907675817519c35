import type { BlastRadius, HitlModeDeclaration } from '../protocol/index.js';
import { createBlastExtension } from './blast.js';
import { createCostExtension, type CostExtensionOptions } from './cost.js';
import { createEffectDomainExtension } from './effect-domain.js';
import { createHitlModeExtension } from './hitl-mode.js';
import type { ExtensionRegistry } from './registry.js';
import type { ExtensionEventBus, RegisterOptions } from './types.js';
import { defined } from '../protocol/fields/index.js';

/**
 * The effective radius and mode of a skill, as the stamps must carry them (the fleet's declaration
 * book: `broker.stamps`). An agent is never told a narrower level than the gate applies.
 */
export interface StampLookup {
  radius(agent: string, skill: string): BlastRadius | undefined;
  hitlMode(agent: string, skill: string): HitlModeDeclaration | undefined;
}

/** Options of {@link registerStandardExtensions}. */
export interface StandardExtensionsOptions {
  bus: ExtensionEventBus;
  /**
   * Where blast-v1 and hitl-mode-v1 read the values they stamp (`broker.stamps`). Without it they
   * stamp what each card itself declares (a client with no card broker: no ratchet, no floors).
   */
  declarations?: StampLookup;
  /** Per-URI registration options, e.g. `{ [EFFECT_DOMAIN_V1_URI]: { required: true } }`. */
  options?: Readonly<Record<string, RegisterOptions>>;
  /** Passed to the cost-v1 extension. */
  cost?: Omit<CostExtensionOptions, 'bus'>;
  /** Largest event payload effect-domain-v1 publishes before splitting (default 512 KiB). */
  maxEventBytes?: number;
}

/**
 * Registers the four extensions Fleetgate implements, in this order: blast-v1, hitl-mode-v1,
 * effect-domain-v1, cost-v1. So `before` stamps policy first and starts the cost clock last, and
 * `after` records cost first, then publishes deltas.
 */
export function registerStandardExtensions(
  registry: ExtensionRegistry,
  options: StandardExtensionsOptions,
): ExtensionRegistry {
  const lookup = options.declarations;
  const extensions = [
    createBlastExtension(
      lookup === undefined ? {} : { lookup: (ctx) => lookup.radius(ctx.agent, ctx.skill) },
    ),
    createHitlModeExtension(
      lookup === undefined ? {} : { lookup: (ctx) => lookup.hitlMode(ctx.agent, ctx.skill) },
    ),
    createEffectDomainExtension({
      bus: options.bus,
      ...defined({ maxEventBytes: options.maxEventBytes }),
    }),
    createCostExtension({ ...options.cost, bus: options.bus }),
  ];
  for (const extension of extensions) {
    registry.register(extension, options.options?.[extension.uri] ?? {});
  }
  return registry;
}
