/**
 * Fleetgate: blast-radius gating and exactly-once world-state deltas for fleets of A2A agents.
 *
 * The library's front door holds what a library user calls: {@link createGateway} (the whole
 * machine from one config), {@link createFleetClient} (skill calls wrapped in the extension chain),
 * the error type, the radius helpers and the event types. The rest sits behind subpaths:
 * `fleetgate/gateway` (the service room: config loading), `fleetgate/protocol` (wire contracts),
 * `fleetgate/store`, `fleetgate/nats` (the JetStream bus). Importing this module loads neither a
 * database driver nor the NATS client; `createGateway` loads what its config names.
 */
import type {
  FleetgateConfig,
  FleetgateConfigInput,
  Gateway,
  GatewayDeps,
} from './service/index.js';

export type { FleetgateConfig, FleetgateConfigInput, Gateway, GatewayDeps };

/**
 * Builds and starts a gateway from a configuration: store, bus, card broker, extension chain,
 * task tracking, dispatcher, world state and alerts, wired in one place.
 *
 * @example
 * ```ts
 * import { createGateway } from 'fleetgate';
 * const gw = await createGateway({ agents: [{ name: 'ci', url: 'http://127.0.0.1:9101' }] });
 * const record = await gw.dispatch({ agent: 'ci', skill: 'rerun_checks', text: 'PR 42' }).result();
 * await gw.close();
 * ```
 */
export async function createGateway(
  config?: FleetgateConfigInput | FleetgateConfig,
  deps?: GatewayDeps,
): Promise<Gateway> {
  // Loaded on first use: the gateway's graph (SQL builder, drivers, config parser) is not part
  // of what importing the library costs.
  const service = await import('./service/index.js');
  return service.createGateway(config, deps);
}

export {
  createFleetClient,
  type CallInput,
  type CallMode,
  type CallOptions,
  type CallResult,
  type CallUpdate,
  type DispatchHandle,
  type DispatchRecord,
  type DispatchRequest,
  type FleetClient,
  type FleetClientOptions,
} from './dispatch/index.js';
export { ExtensionRegistry, registerStandardExtensions } from './extensions/index.js';
export type { Extension, SkillCallContext, CallOutcome } from './extensions/index.js';
export { createInMemoryEventBus } from './bus/index.js';
export type { EventBus } from './bus/index.js';
export type {
  EventEnvelope,
  FleetgateTopics,
  OpsAlertEvent,
  SystemErrorEvent,
  WorldStateDeltaEvent,
  WorldStateDeltaRejectedEvent,
  WorldStateUpdatedEvent,
  CostSampleEvent,
  DeclarationChangedEvent,
  DispatchEvent,
  FleetCardEvent,
  ApprovalEvent,
} from './protocol/index.js';
export { ERROR_CODES, FleetgateError, isFleetgateError, type ErrorCode } from './protocol/index.js';
export {
  BLAST_ORDER,
  BLAST_RADII,
  HITL_MODES,
  RADIUS_PALETTE,
  compareHitlMode,
  compareRadius,
  isBlastRadius,
  isHitlMode,
  maxHitlMode,
  maxRadius,
  type BlastRadius,
  type HitlMode,
  type WorldStateDeltaEntry,
} from './protocol/index.js';
