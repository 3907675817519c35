/**
 * What every route of the HTTP API is given: the gateway, the live-event hub, the metrics, the
 * dispatch watcher and the service's readiness.
 */
import type { DispatchRecord } from '../../dispatch/index.js';
import type { Gateway } from '../gateway.js';
import type { EventHub } from './event-hub.js';
import type { GatewayMetrics } from './metrics.js';

/** Waits for dispatches to leave `running`. */
export interface DispatchWatcher {
  /**
   * Resolves with the dispatch once it is no longer `running` (ended, or waiting on an approval
   * or on input), or as it stands after `timeoutMs`.
   */
  settled(id: string, timeoutMs: number): Promise<DispatchRecord | undefined>;
  close(): void;
}

/** The routes' shared context. */
export interface ApiContext {
  gateway: Gateway;
  hub: EventHub;
  metrics: GatewayMetrics;
  watcher: DispatchWatcher;
  /** Answers false while starting and once stopping (`/readyz`). */
  ready(): boolean;
  version: string;
}

/** Statuses a dispatch does not leave by itself. */
const WAITING = new Set(['running']);

/** Builds the dispatch watcher on the hub's events (re-reading the record on each). */
export function createDispatchWatcher(
  gateway: Pick<Gateway, 'dispatchRecord'>,
  hub: Pick<EventHub, 'listen'>,
): DispatchWatcher {
  const waiting = new Map<string, Set<() => void>>();
  const stopListening = hub.listen((event) => {
    if (!event.topic.startsWith('skill.dispatch.')) return;
    const id = (event.payload as { id?: unknown } | null)?.id;
    if (typeof id !== 'string') return;
    for (const wake of waiting.get(id) ?? []) wake();
  });
  return {
    async settled(id, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      let record = await gateway.dispatchRecord(id);
      while (record !== undefined && WAITING.has(record.status) && Date.now() < deadline) {
        // Woken by the dispatch's next event, or every second (an event of another replica may
        // arrive before this replica's watcher was registered).
        await new Promise<void>((resolve) => {
          const set = waiting.get(id) ?? new Set<() => void>();
          waiting.set(id, set);
          const wake = (): void => {
            clearTimeout(timer);
            set.delete(wake);
            if (set.size === 0) waiting.delete(id);
            resolve();
          };
          const timer = setTimeout(wake, Math.min(1000, Math.max(0, deadline - Date.now())));
          set.add(wake);
        });
        record = await gateway.dispatchRecord(id);
      }
      return record;
    },
    close() {
      stopListening();
      for (const set of waiting.values()) for (const wake of [...set]) wake();
    },
  };
}
