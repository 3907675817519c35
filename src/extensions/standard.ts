import { createBlastExtension, type BlastLookup } from './blast.js';
import { createCostExtension, type CostExtensionOptions } from './cost.js';
import { createEffectDomainExtension } from './effect-domain.js';
import { createHitlModeExtension } from './hitl-mode.js';
import type { ExtensionRegistry } from './registry.js';
import type { ExtensionEventBus, RegisterOptions } from './types.js';

/** Options of {@link registerStandardExtensions}. */
export interface StandardExtensionsOptions {
  bus: ExtensionEventBus;
  /** The blast registry the blast-v1 extension reads (the fleet's `BlastRegistry`). */
  blast: BlastLookup;
  /** Per-URI registration options, e.g. `{ [EFFECT_DOMAIN_V1_URI]: { required: true } }`. */
  options?: Readonly<Record<string, RegisterOptions>>;
  /** Passed to the cost-v1 extension. */
  cost?: Omit<CostExtensionOptions, 'bus'>;
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
  const extensions = [
    createBlastExtension({ blast: options.blast }),
    createHitlModeExtension(),
    createEffectDomainExtension({ bus: options.bus }),
    createCostExtension({ ...options.cost, bus: options.bus }),
  ];
  for (const extension of extensions) {
    registry.register(extension, options.options?.[extension.uri] ?? {});
  }
  return registry;
}
