/**
 * The service room: the composition root, the configuration it reads and the gateway's store
 * (every room's migrations). `fleetgate/gateway`.
 */
export {
  createGateway,
  type FollowUpRequest,
  type Gateway,
  type GatewayConsumer,
  type GatewayDeps,
} from './gateway.js';
export type {
  CallUpdate,
  DispatchHandle,
  DispatchRecord,
  DispatchRequest,
} from '../dispatch/index.js';
export type { ApprovalOutcome, GatewayApprovals } from './approvals.js';
export type {
  ApprovalRecord,
  ApprovalStatus,
  Decision,
  Explanation,
  Reason,
  ReasonKind,
  StandingRecord,
} from '../policy/index.js';
export {
  configSchema,
  loadConfigFile,
  parseConfig,
  parseDuration,
  type FleetgateConfig,
  type FleetgateConfigInput,
} from './config.js';
export * from './migrations.js';
export * from './fleet-runtime.js';
// How the gateway reads a `bus:` URL, and a store URL as it shows one (its password hidden).
export { parseBusUrl, type BusTarget } from './config-values.js';
export { redactStoreUrl } from '../store/index.js';
export type { RetentionPolicy, RetentionResult, RetentionSweeper } from './retention.js';
export { startService, type RunningService, type ServiceOptions } from './server.js';
