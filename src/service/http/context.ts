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

/**
 * Longest wait between two reads of a waited-for dispatch when no event of it arrives. Events end
 * the wait in the normal course; this only bounds a wait whose event the hub dropped (it lets the
 * oldest go when it falls behind).
 */
const SAFETY_READ_MS = 1000;

/**
 * Builds the dispatch watcher on the hub's events: a wait ends on the dispatch's own
 * `skill.dispatch.*` event, then re-reads the record. The waiter is registered before the first
 * read, so an event published while that read is in flight still ends the wait at once.
 */
export function createDispatchWatcher(
  gateway: Pick<Gateway, 'dispatchRecord'>,
  hub: Pick<EventHub, 'listen'>,
): DispatchWatcher {
  /** Per dispatch id, the waits that an event of it wakes. */
  const waiting = new Map<string, Set<Wait>>();
  let closed = false;
  const stopListening = hub.listen((event) => {
    if (!event.topic.startsWith('skill.dispatch.')) return;
    const id = (event.payload as { id?: unknown } | null)?.id;
    if (typeof id !== 'string') return;
    const set = waiting.get(id);
    if (set !== undefined) for (const wait of set) wait.wake();
  });
  return {
    async settled(id, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const wait = new Wait();
      let set = waiting.get(id);
      if (set === undefined) waiting.set(id, (set = new Set()));
      set.add(wait);
      try {
        let record = await gateway.dispatchRecord(id);
        while (!closed && record !== undefined && WAITING.has(record.status)) {
          const left = deadline - Date.now();
          if (left <= 0) break;
          await wait.next(Math.min(SAFETY_READ_MS, left));
          record = await gateway.dispatchRecord(id);
        }
        return record;
      } finally {
        set.delete(wait);
        if (set.size === 0) waiting.delete(id);
      }
    },
    close() {
      // Waits answer with the dispatch as it stands.
      closed = true;
      stopListening();
      for (const set of waiting.values()) for (const wait of set) wait.wake();
    },
  };
}

/**
 * One waiter: `next()` resolves on the first `wake()` since the previous `next()` resolved (a
 * wake that came while nothing waited is kept, not lost), or after `ms`.
 */
class Wait {
  #woken = false;
  #resolve: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  wake(): void {
    if (this.#resolve === undefined) {
      this.#woken = true;
      return;
    }
    const resolve = this.#resolve;
    this.#resolve = undefined;
    clearTimeout(this.#timer);
    resolve();
  }

  next(ms: number): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(() => this.wake(), ms);
    });
  }
}
