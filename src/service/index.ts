/**
 * The service room: the composition root and the configuration it reads. `fleetgate/gateway`.
 */
export { createGateway, type Gateway, type GatewayDeps } from './gateway.js';
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
