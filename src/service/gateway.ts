/**
 * `createGateway(config, deps?)`: the one composition root. Every part of a gateway is built here,
 * once, in the only order that works; tests, benchmarks, the CLI and the service go through it.
 *
 * Wiring order (each step needs the ones above it):
 * 1. store (migrated) and bus — injected through `deps` or opened from the config;
 * 2. the fleet side: directory, learned floors, card broker (the only writer of the registries);
 * 3. the outbox relay and the event collector: after hooks publish into the collector, the
 *    terminal claim writes what they collected to the outbox in its own transaction;
 * 4. the extension chain, the fleet client (cards and declarations from the broker), the task
 *    tracker, the HITL gate (decisions from the broker's effective declarations, approvals in the
 *    store) and the dispatcher;
 * 5. the world-state materialiser and the alerts, subscribed to the bus;
 * 6. start: cached cards, first refresh, recovery of tasks left in flight, then the approvals
 *    sweeper (held dispatches decided elsewhere or while the gateway was down move on).
 *
 * The steps are `gateway-wiring.ts` and `gateway-start.ts`; the `Gateway` over them (and its shutdown, the steps in
 * reverse) is `gateway-front.ts`.
 */
import type { TaskTracker } from '../tasks/index.js';
import type { EventBus, OutboxRelay } from '../bus/index.js';
import type { FleetClient } from '../dispatch/index.js';
import type { FleetgateConfig, FleetgateConfigInput } from './config.js';
import { parseConfig } from './config.js';
import type { RetentionSweeper } from './retention.js';
import { buildGateway } from './gateway-front.js';
import type { Gateway, GatewayDeps, GatewayPorts } from './gateway-types.js';
import { abandonStart, startGateway, wireConsumers } from './gateway-start.js';
import type { CallPath } from './gateway-wiring.js';
import { openGround, wireCallPath, wireRecords, wireUpkeep } from './gateway-wiring.js';

export type {
  FollowUpRequest,
  Gateway,
  GatewayConsumer,
  GatewayDeps,
  GatewayPorts,
  GatewayRecords,
} from './gateway-types.js';

/**
 * The parts a gateway is made of, for white-box suites and benchmarks that drive one directly (a
 * tracker fed a task, a retention sweep run now). Product code reads {@link GatewayPorts} only.
 */
export interface GatewayParts extends GatewayPorts {
  readonly bus: EventBus;
  readonly fleet: FleetClient;
  readonly tracker: TaskTracker;
  readonly relay: OutboxRelay;
  readonly retention: RetentionSweeper;
}

/** A gateway with what its composition root hands to the service layer. */
export interface AssembledGateway {
  readonly gateway: Gateway;
  readonly parts: GatewayParts;
}

/**
 * Builds and starts a gateway.
 *
 * @example
 * ```ts
 * const gw = await createGateway({ agents: [{ name: 'ci', url: 'http://127.0.0.1:9101' }] });
 * const record = await gw.dispatch({ agent: 'ci', skill: 'rerun_checks', text: 'PR 42' }).result();
 * console.log(record.status, await gw.world.getDomain('ci'));
 * await gw.close();
 * ```
 */
export async function createGateway(
  input: FleetgateConfigInput | FleetgateConfig = {},
  deps: GatewayDeps = {},
): Promise<Gateway> {
  return (await assembleGateway(input, deps)).gateway;
}

/**
 * {@link createGateway} for the service layer (and white-box suites): the gateway with its
 * {@link GatewayParts}. Not part of the package's API.
 */
export async function assembleGateway(
  input: FleetgateConfigInput | FleetgateConfig = {},
  deps: GatewayDeps = {},
): Promise<AssembledGateway> {
  const config = parseConfig(input);
  const ground = await openGround(config, deps);
  // Aborted when close() starts: work waiting for the database to come back stops waiting.
  const closing = new AbortController();
  // Each step from here to the start, when it fails, first closes what the ones before it opened.
  let calls: CallPath | undefined;
  let wired;
  try {
    const records = wireRecords(ground);
    calls = await wireCallPath(ground, records);
    const upkeep = wireUpkeep(ground, records, calls);
    wired = { records, calls, upkeep, consumers: wireConsumers(ground, closing.signal) };
  } catch (error) {
    await abandonStart(ground, { calls });
    throw error;
  }
  const { records, upkeep, consumers } = wired;
  const orphans = await startGateway(ground, records, calls, upkeep, consumers);
  const gateway = buildGateway({ ground, records, calls, upkeep, consumers, orphans, closing });
  const { store, bus, relay, lease } = ground;
  const { fleet, tracker } = calls;
  return {
    gateway,
    parts: {
      store,
      agentClient: (agent) => fleet.agentClient(agent),
      leaseHeld: () => lease.held(),
      trackedTasks: () => tracker.size,
      bus,
      fleet,
      tracker,
      relay,
      retention: upkeep.retention,
    },
  };
}
