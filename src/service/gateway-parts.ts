/**
 * Small parts of the composition root: the bus a configuration names (with the query parameters
 * that keep deployments apart on a shared server) and the observed policy gate.
 */
import type { EventBus } from '../bus/index.js';
import { createInMemoryEventBus } from '../bus/index.js';
import type { GateCall, GateVerdict, PolicyGate } from '../dispatch/index.js';
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import { redactStoreUrl } from '../store/index.js';
import { parseBusUrl } from './config-values.js';

/** The store a gateway's bus belongs to (see {@link openBus}). */
export interface BusOwner {
  /** The store's URL, as configured (shown without its password). */
  readonly store: string;
  /** The store's deployment id (`deploymentIdOf`); asked only for a JetStream bus. */
  readonly deployment: () => Promise<string>;
}

/**
 * The bus the config names: in-process, or NATS JetStream (the client loads only then).
 * `nats://host:port?stream=NAME&prefix=name` keeps several deployments apart on one server. With
 * `owner`, the JetStream stream must be the owner's deployment's (or no deployment's yet, and
 * then it becomes the owner's): a stream another store's gateways run on is refused before
 * anything on it changes.
 *
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` for a URL `parseBusUrl` refuses;
 * `FLEETGATE_BUS_DEPLOYMENT_MISMATCH` for a stream of another deployment; what
 * `createJetStreamEventBus` throws.
 */
export async function openBus(url: string, owner?: BusOwner): Promise<EventBus> {
  const target = parseBusUrl(url);
  if (target.kind === 'memory') return createInMemoryEventBus();
  const deployment = await owner?.deployment();
  const { createJetStreamEventBus } = await import('../bus/jetstream/index.js');
  try {
    return await createJetStreamEventBus({
      servers: target.servers,
      ...defined({ stream: target.stream, subjectPrefix: target.prefix, deployment }),
    });
  } catch (error) {
    if (owner === undefined || !isFleetgateError(error, 'FLEETGATE_BUS_DEPLOYMENT_MISMATCH')) {
      throw error;
    }
    throw otherStore(error, url, redactStoreUrl(owner.store));
  }
}

/** The refusal of a stream of another deployment, in the words of the gateway's configuration. */
function otherStore(error: FleetgateError, bus: string, store: string): FleetgateError {
  const details = error.details ?? {};
  const stream = String(details.stream);
  const owner = String(details.streamDeployment);
  const deployment = String(details.deployment);
  return new FleetgateError(
    'FLEETGATE_BUS_DEPLOYMENT_MISMATCH',
    `JetStream stream ${stream} (bus ${redactStoreUrl(bus)}) belongs to deployment ${owner}, ` +
      `but the store ${store} belongs to deployment ${deployment}; the stream was left ` +
      `unchanged and nothing was consumed. Two deployments on one stream would each get part of ` +
      `the other's world-state deltas and see its events. If this is another deployment, give ` +
      `it a stream and prefix of its own (bus: nats://…?stream=NAME&prefix=name); if it is a ` +
      `replica of deployment ${owner}, point it at that deployment's store.`,
    { cause: error, details: { ...details, store } },
  );
}

/** The gate, telling `observe` each decision it takes. */
export function observedGate(
  gate: PolicyGate,
  observe: ((request: GateCall, decision: GateVerdict) => void) | undefined,
): PolicyGate {
  if (observe === undefined) return gate;
  return {
    async decide(request) {
      const decision = await gate.decide(request);
      observe(request, decision);
      return decision;
    },
    // Kept, so a call the gate lets go at once is still recorded with its send in one unit.
    ...(gate.decideAtOnce === undefined
      ? {}
      : {
          decideAtOnce: (request) => {
            const decision = gate.decideAtOnce!(request);
            if (decision !== undefined) observe(request, decision);
            return decision;
          },
        }),
    ...(gate.release === undefined ? {} : { release: (r) => gate.release!(r) }),
    ...(gate.checkpoint === undefined ? {} : { checkpoint: (r) => gate.checkpoint!(r) }),
    ...(gate.resume === undefined ? {} : { resume: (r) => gate.resume!(r) }),
    ...(gate.continueFollowUp === undefined
      ? {}
      : { continueFollowUp: (r) => gate.continueFollowUp!(r) }),
  };
}
