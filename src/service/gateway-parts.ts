/**
 * Small parts of the composition root: the bus and store a configuration names (with the query
 * parameters that keep deployments apart on shared servers) and the observed policy gate.
 */
import type { EventBus } from '../bus/index.js';
import { createInMemoryEventBus } from '../bus/index.js';
import type { GateCall, GateVerdict, PolicyGate } from '../dispatch/index.js';
import type { GatewayStore } from './migrations.js';
import { openGatewayStore } from './migrations.js';

/**
 * The bus the config names: in-process, or NATS JetStream (the client loads only then).
 * `nats://host:port?stream=NAME&prefix=name` keeps several deployments apart on one server.
 */
export async function openBus(url: string): Promise<EventBus> {
  if (url === 'memory') return createInMemoryEventBus();
  const { createJetStreamEventBus } = await import('../bus/jetstream/index.js');
  const { base, params } = splitQuery(url);
  const stream = params.get('stream');
  const prefix = params.get('prefix');
  return createJetStreamEventBus({
    servers: base,
    ...(stream === null ? {} : { stream }),
    ...(prefix === null ? {} : { subjectPrefix: prefix }),
  });
}

/** The store the config names; `postgres://…?schema=name` puts every table in that schema. */
export function openConfiguredStore(
  url: string,
  options: Omit<Parameters<typeof openGatewayStore>[1] & object, 'schema'> = {},
): Promise<GatewayStore> {
  if (!url.startsWith('postgres')) return openGatewayStore(url, options);
  const { base, params } = splitQuery(url);
  const schema = params.get('schema');
  params.delete('schema');
  const rest = params.toString();
  return openGatewayStore(rest === '' ? base : `${base}?${rest}`, {
    ...options,
    ...(schema === null ? {} : { schema }),
  });
}

function splitQuery(url: string): { base: string; params: URLSearchParams } {
  const at = url.indexOf('?');
  return at < 0
    ? { base: url, params: new URLSearchParams() }
    : { base: url.slice(0, at), params: new URLSearchParams(url.slice(at + 1)) };
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
