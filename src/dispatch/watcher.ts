/**
 * Waits on dispatches: a wait ends on the dispatch's own `skill.dispatch.*` event, then re-reads
 * the record. The waiter is registered before the first read, so an event published while that
 * read is in flight still ends the wait at once.
 */
import type { DispatchRecord } from './dispatch-records.js';

/** Waits for dispatches to move. */
export interface DispatchWatcher {
  /**
   * Resolves with the dispatch once `done` holds for its record (or it is not found), or as it
   * stands after `timeoutMs`, or when `signal` aborts, or when the watcher closes.
   */
  until(
    id: string,
    done: (record: DispatchRecord) => boolean,
    options?: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<DispatchRecord | undefined>;
  /**
   * Resolves with the dispatch once it is no longer `running` (ended, or waiting on an approval
   * or on input), or as it stands after `timeoutMs`.
   */
  settled(id: string, timeoutMs: number): Promise<DispatchRecord | undefined>;
  close(): void;
}

/** Where the watcher hears of dispatch events: registers a listener of their dispatch ids. */
export type DispatchEventSource = (listener: (dispatchId: string) => void) => {
  /** Resolves once events published from now on reach the listener. */
  ready: Promise<void>;
  stop(): void;
};

/**
 * Longest wait between two reads of a waited-for dispatch when no event of it arrives. Events end
 * the wait in the normal course; this only bounds a wait whose event was dropped (a live feed lets
 * the oldest go when it falls behind).
 */
const SAFETY_READ_MS = 1000;

/** Builds a watcher reading records with `read`, woken by the events of `source`. */
export function createDispatchWatcher(
  read: (id: string) => Promise<DispatchRecord | undefined>,
  source: DispatchEventSource,
): DispatchWatcher {
  /** Per dispatch id, the waits that an event of it wakes. */
  const waiting = new Map<string, Set<Wait>>();
  let closed = false;
  let listening: ReturnType<DispatchEventSource> | undefined;
  const listen = (): ReturnType<DispatchEventSource> =>
    (listening ??= source((id) => {
      const set = waiting.get(id);
      if (set !== undefined) for (const wait of set) wait.wake();
    }));
  const until: DispatchWatcher['until'] = async (id, done, options = {}) => {
    const deadline = Date.now() + (options.timeoutMs ?? Number.POSITIVE_INFINITY);
    const wait = new Wait();
    let set = waiting.get(id);
    if (set === undefined) waiting.set(id, (set = new Set()));
    set.add(wait);
    const abort = (): void => wait.wake();
    options.signal?.addEventListener('abort', abort);
    try {
      await listen().ready;
      let record = await read(id);
      while (!closed && options.signal?.aborted !== true && record !== undefined && !done(record)) {
        const left = deadline - Date.now();
        if (left <= 0) break;
        await wait.next(Math.min(SAFETY_READ_MS, left));
        record = await read(id);
      }
      return record;
    } finally {
      options.signal?.removeEventListener('abort', abort);
      set.delete(wait);
      if (set.size === 0) waiting.delete(id);
    }
  };
  return {
    until,
    settled: (id, timeoutMs) => until(id, (record) => record.status !== 'running', { timeoutMs }),
    close() {
      // Waits answer with the dispatch as it stands.
      closed = true;
      listening?.stop();
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
