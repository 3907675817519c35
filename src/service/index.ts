/**
 * The service room: the composition root and the configuration it reads. `fleetgate/gateway`.
 */
export { createGateway, type Gateway, type GatewayDeps } from './gateway.js';
export {
  configSchema,
  loadConfigFile,
  parseConfig,
  parseDuration,
  type FleetgateConfig,
  type FleetgateConfigInput,
} from './config.js';
