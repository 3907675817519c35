/**
 * `fleetgate/agent`: the agent-author kit. Declare the extensions on a card (`declareBlast`,
 * `declareHitlMode`, `declareEffectDomain`, `declareCost`, or radii derived from MCP tool
 * annotations), report deltas and cost from an SDK executor (`withEffects`; `startTask` and
 * `endTask` publish the first and last event of a turn), activate the
 * extensions so they are echoed on every transport (`activateExtensions`), read the caller's
 * stamps typed, and check an agent as a gateway would (`checkAgent`). Imports only the protocol
 * contracts and the A2A SDK server.
 */
export {
  declareBlast,
  declareCost,
  declareEffectDomain,
  declareHitlMode,
  type BlastInput,
  type CardExtensionLike,
  type CardLike,
  type Declared,
  type EffectDomainInput,
  type HitlModeInput,
  type SkillIdOf,
} from './card.js';
export {
  activateExtensions,
  declaredExtensionUris,
  readCallerStamps,
  type CallerStamps,
} from './stamps.js';
export { withEffects } from './effects.js';
export {
  EFFECTS_ARTIFACT_ID,
  type EffectsAgentExecutor,
  type EffectsWarning,
  type TaskEffects,
  type WithEffectsOptions,
} from './effects-types.js';
export { endTask, startTask, type TaskEnd, type TaskIds } from './task-events.js';
export {
  checkRadiiAgainstMcpTools,
  declareBlastFromMcpTools,
  deriveRadiusFromMcpAnnotations,
  parseMcpTools,
  radiusFromMcpAnnotations,
  type McpBlastOptions,
  type McpRadiusDerivation,
  type McpTool,
  type McpToolAnnotations,
} from './mcp.js';
export { checkAgent } from './check.js';
export type { AgentCheckCall, AgentCheckReport, CheckAgentOptions } from './check-types.js';
