/**
 * The service room's internal door: the composition root with the parts it is made of, for the
 * service layer's own wiring, white-box suites and benchmarks. Not exported by the package
 * (`fleetgate/gateway` is `index.ts`).
 */
export {
  assembleGateway,
  type AssembledGateway,
  type GatewayParts,
  type GatewayPorts,
} from './gateway.js';
