/**
 * The A2A proxy (`/a2a/:agent`): the agents' cards rewritten to the gateway, JSON-RPC and
 * HTTP+JSON in v1.0 and v0.3 through the SDK's server handlers, every call through the gateway's
 * dispatch path. The tables load with the store; the HTTP front (the SDK's server side, express)
 * loads only when a service starts.
 */
export type { A2aProxy, A2aProxyOptions } from './proxy.js';
export type { ProxyTask, ProxyTaskStore, ProxyPushConfig, ClientProtocol } from './task-store.js';
export type { ProxyFrontOptions } from './front.js';
export { PROXY_MIGRATIONS, type ProxyDatabase } from './store-tables.js';

/** Loads the proxy and its HTTP front on first use (the SDK's server side and express with it). */
export async function loadA2aProxy() {
  return import('./front.js');
}
