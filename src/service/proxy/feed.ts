/**
 * In-process fan-out of the live events of the proxy tasks this process is calling: a streaming
 * call publishes the agent's events here as they arrive, and every subscriber of that task on this
 * process (the caller's stream, `SubscribeToTask` after a reconnect) reads them in order. Progress
 * made elsewhere (another replica, an approval) reaches subscribers through the task's store.
 */
import type { StreamResponse } from '@a2a-js/sdk';

/** A queue an async generator drains: push from callbacks, pull with `next`. */
export class EventQueue<T> {
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  /** Poked while nobody waited: the next `next` returns at once. */
  #poked = false;

  push(item: T): void {
    if (this.#ended) return;
    this.#items.push(item);
    this.#wake?.();
  }

  /** Wakes a waiting `next` without an item (something else changed). */
  poke(): void {
    if (this.#wake === undefined) this.#poked = true;
    else this.#wake();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The next item, or undefined when poked, ended or `timeoutMs` passed without one. */
  async next(timeoutMs: number): Promise<T | undefined> {
    if (this.#items.length > 0) return this.#items.shift();
    if (this.#ended) return undefined;
    if (this.#poked) {
      this.#poked = false;
      return undefined;
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.#wake = done;
    });
    return this.#items.shift();
  }
}

/** The live-event fan-out of one process. */
export class TaskFeed {
  readonly #listeners = new Map<string, Set<(event: StreamResponse) => void>>();
  readonly #live = new Map<string, number>();

  /** A streaming call of `taskId` starts here: subscribers wait for its events. */
  open(taskId: string): void {
    this.#live.set(taskId, (this.#live.get(taskId) ?? 0) + 1);
  }

  /** The streaming call ended (its last state is in the store). */
  close(taskId: string): void {
    const n = (this.#live.get(taskId) ?? 1) - 1;
    if (n <= 0) this.#live.delete(taskId);
    else this.#live.set(taskId, n);
    for (const listener of this.#listeners.get(taskId) ?? []) listener({ payload: undefined });
  }

  /** True while a streaming call of `taskId` runs in this process. */
  live(taskId: string): boolean {
    return this.#live.has(taskId);
  }

  publish(taskId: string, event: StreamResponse): void {
    for (const listener of this.#listeners.get(taskId) ?? []) listener(event);
  }

  /** Listens to `taskId`'s events; an event without payload means its live call ended. */
  listen(taskId: string, listener: (event: StreamResponse) => void): () => void {
    let set = this.#listeners.get(taskId);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(taskId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#listeners.delete(taskId);
    };
  }
}
