/**
 * Typed per-call state: a `before` hook records something (a start time, a skill lookup) that its
 * `after` hook needs, without a shared mutable map keyed by strings.
 */

/**
 * A typed key into {@link CallState}. Keys compare by identity, so two extensions never collide
 * even when they pick the same description.
 *
 * @example
 * ```ts
 * const STARTED = createStateKey<number>('cost-v1:started');
 * // before: ctx.state.set(STARTED, performance.now())
 * // after:  const started = ctx.state.get(STARTED)
 * ```
 */
export interface StateKey<T> {
  readonly description: string;
  /** Phantom field carrying the value type; never set. */
  readonly __type?: T;
}

/** Creates a {@link StateKey}. */
export function createStateKey<T>(description: string): StateKey<T> {
  return Object.freeze({ description });
}

/** Per-call state shared by the hooks of one call. */
export interface CallState {
  get<T>(key: StateKey<T>): T | undefined;
  set<T>(key: StateKey<T>, value: T): void;
  has(key: StateKey<unknown>): boolean;
}

/**
 * Keys and values side by side in one small array (`[key, value, key, value, …]`): a call holds a
 * handful of entries at most, so a linear scan beats hashing, and nothing is allocated until the
 * first write.
 */
class ArrayCallState implements CallState {
  #entries: unknown[] | undefined;

  get<T>(key: StateKey<T>): T | undefined {
    const entries = this.#entries;
    if (entries === undefined) return undefined;
    for (let i = 0; i < entries.length; i += 2) if (entries[i] === key) return entries[i + 1] as T;
    return undefined;
  }

  set<T>(key: StateKey<T>, value: T): void {
    const entries = this.#entries;
    if (entries === undefined) {
      this.#entries = [key, value];
      return;
    }
    for (let i = 0; i < entries.length; i += 2) {
      if (entries[i] === key) {
        entries[i + 1] = value;
        return;
      }
    }
    entries.push(key, value);
  }

  has(key: StateKey<unknown>): boolean {
    const entries = this.#entries;
    if (entries === undefined) return false;
    for (let i = 0; i < entries.length; i += 2) if (entries[i] === key) return true;
    return false;
  }
}

/** The state of one call (keys compared by identity, storage created on first write). */
export function createCallState(): CallState {
  return new ArrayCallState();
}
