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
import type { A2aProxyOptions } from './proxy-core.js';
import { ProxyCore } from './proxy-core.js';

export type { A2aProxyOptions } from './proxy-core.js';
import { ProxyHandler } from './proxy-handler.js';
import type { PushDelivery } from './push.js';
import type { ProxyTaskStore } from './task-store.js';

export { awaitingApproval } from './proxy-task-meta.js';

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
