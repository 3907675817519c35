/**
 * Small parts of the composition root: the bus a configuration names (with the query parameters
 * that keep deployments apart on a shared server) and the observed policy gate.
 */
import type { EventBus } from '../bus/index.js';
import { createInMemoryEventBus } from '../bus/index.js';
import type { GateCall, GateVerdict, PolicyGate } from '../dispatch/index.js';
import { defined } from '../protocol/fields/index.js';
import { parseBusUrl } from './config-values.js';

/**
 * The bus the config names: in-process, or NATS JetStream (the client loads only then).
 * `nats://host:port?stream=NAME&prefix=name` keeps several deployments apart on one server.
 *
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` for a URL `parseBusUrl` refuses.
 */
export async function openBus(url: string): Promise<EventBus> {
  const target = parseBusUrl(url);
  if (target.kind === 'memory') return createInMemoryEventBus();
  const { createJetStreamEventBus } = await import('../bus/jetstream/index.js');
  return createJetStreamEventBus({
    servers: target.servers,
    ...defined({ stream: target.stream, subjectPrefix: target.prefix }),
  });
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
