/**
 * The caller-side extension runtime: the registry, the before/after chain and the four
 * extensions (effect-domain-v1, blast-v1, hitl-mode-v1, cost-v1).
 */
export type {
  CallOutcome,
  Extension,
  ExtensionEventBus,
  RegisterOptions,
  RegisteredExtension,
  SkillCallContext,
  Stamps,
} from './types.js';
export { createStateKey, createCallState, type CallState, type StateKey } from './state.js';
export { ExtensionRegistry } from './registry.js';
export {
  SkillCallChain,
  createSkillCallContext,
  createHookFailureLog,
  type ChainContext,
  type HookFailure,
  type HookFailureLog,
  type HookFailureSink,
  type SkillCallContextInit,
} from './chain.js';
export {
  createEffectDomainExtension,
  taskEventId,
  WORLD_STATE_DELTA_TOPIC,
  WORLD_STATE_DELTA_REJECTED_TOPIC,
  type EffectDomainExtensionOptions,
} from './effect-domain.js';
export { createBlastExtension, type BlastExtensionOptions } from './blast.js';
export { createHitlModeExtension, type HitlModeExtensionOptions } from './hitl-mode.js';
export {
  createCostExtension,
  COST_SAMPLE_TOPIC,
  type CostExtensionOptions,
  type CostSample,
} from './cost.js';
export {
  registerStandardExtensions,
  type StampLookup,
  type StandardExtensionsOptions,
} from './standard.js';
