/**
 * What every route of the HTTP API is given: the gateway, the live-event hub, the metrics, the
 * dispatch watcher and the service's readiness.
 */
import { createDispatchWatcher, type DispatchWatcher } from '../../dispatch/index.js';
import type { Gateway, GatewayPorts } from '../gateway-types.js';
import type { EventHub } from './event-hub.js';
import type { GatewayMetrics } from './metrics.js';

/** The routes' shared context. */
export interface ApiContext {
  gateway: Gateway;
  /** The store and readings the composition root hands over (`GatewayPorts`). */
  ports: GatewayPorts;
  hub: EventHub;
  metrics: GatewayMetrics;
  watcher: DispatchWatcher;
  /** Answers false while starting and once stopping (`/readyz`). */
  ready(): boolean;
  version: string;
}

/**
 * The dispatch watcher on the hub's events (no subscription of its own): a wait ends on the
 * dispatch's own `skill.dispatch.*` event, then re-reads the record.
 */
export function createHubDispatchWatcher(
  gateway: Pick<Gateway, 'dispatchRecord'>,
  hub: Pick<EventHub, 'listen'>,
): DispatchWatcher {
  return createDispatchWatcher(
    (id) => gateway.dispatchRecord(id),
    (listener) => {
      const stop = hub.listen((event) => {
        if (!event.topic.startsWith('skill.dispatch.')) return;
        const id = (event.payload as { id?: unknown } | null)?.id;
        if (typeof id === 'string') listener(id);
      });
      return { ready: Promise.resolve(), stop };
    },
  );
}
