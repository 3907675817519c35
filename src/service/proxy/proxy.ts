/**
 * The A2A proxy: a request handler per agent (`proxy-handler.ts`), behind the SDK's JSON-RPC and
 * HTTP+JSON handlers, over the state the handlers share (`proxy-core.ts`). Every message goes
 * through the gateway's dispatch path — the policy gate, the stamps, the merged `A2A-Extensions`
 * header, the tracker, the single terminal — with the client's message forwarded as sent. The
 * proxy's task id is the dispatch's; its row maps it to the agent's task id and keeps the task as
 * the client sees it, so any replica answers `GetTask`, and a client that sends the same message
 * id again gets the same task.
 */
import type { AgentCard } from '@a2a-js/sdk';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { EventEnvelope, TaskStateName } from '../../protocol/index.js';
import type { Gateway, GatewayPorts } from '../gateway.js';
import { ProxyCore } from './proxy-core.js';
import { ProxyHandler } from './proxy-handler.js';
import type { PushDelivery } from './push.js';
import type { PushUrlPolicy } from './push-url.js';
import type { ProxyTaskStore } from './task-store.js';

export { awaitingApproval } from './proxy-task-meta.js';

/** Options of {@link createA2aProxy}. */
export interface A2aProxyOptions {
  gateway: Gateway;
  /** The gateway's store (the proxy's tables) and agent clients. */
  ports: Pick<GatewayPorts, 'store' | 'agentClient'>;
  /** Every bus event this process receives (the live-event hub's `listen`). */
  listen: (listener: (event: EventEnvelope) => void) => () => void;
  /** The gateway's public base URL: the card's interfaces and the dashboard links point there. */
  publicUrl: string;
  /** How long a blocking `SendMessage` waits for an approval. */
  holdForMs: number;
  push: { attempts: number; backoffMs: number; timeoutMs: number; sweepMs: number };
  /** Which URLs clients may register for push notifications (`proxy.pushUrls`). */
  pushUrls: PushUrlPolicy;
  /** Told of held calls and task state changes (metrics). */
  observe?: {
    held?: (agent: string, delta: 1 | -1) => void;
    state?: (agent: string, state: TaskStateName) => void;
    push?: (outcome: 'delivered' | 'retried' | 'dead') => void;
  };
  onError: (error: unknown, where: string) => void;
}

/** The proxy of a gateway. */
export interface A2aProxy {
  /** True when the agent is configured. */
  knows(agent: string): boolean;
  /** The request handler of one agent (cached). */
  handler(agent: string): A2ARequestHandler;
  /** The proxy's card of an agent; undefined while its card has not loaded. */
  card(agent: string): Promise<AgentCard> | undefined;
  readonly store: ProxyTaskStore;
  readonly push: PushDelivery;
  close(): Promise<void>;
}

/** Builds the proxy of a gateway. */
export function createA2aProxy(options: A2aProxyOptions): A2aProxy {
  const core = new ProxyCore(options);
  const handlers = new Map<string, A2ARequestHandler>();
  const proxy: A2aProxy = {
    knows: (agent) => options.gateway.agents.state(agent) !== undefined,
    handler(agent) {
      let handler = handlers.get(agent);
      if (handler === undefined) {
        handler = new ProxyHandler(core, agent);
        handlers.set(agent, handler);
      }
      return handler;
    },
    card: (agent) => core.card(agent),
    store: core.store,
    push: core.push,
    close: () => core.close(),
  };
  return proxy;
}
