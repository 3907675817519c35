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

class MapCallState implements CallState {
  #values: Map<StateKey<unknown>, unknown> | undefined;

  get<T>(key: StateKey<T>): T | undefined {
    return this.#values?.get(key) as T | undefined;
  }

  set<T>(key: StateKey<T>, value: T): void {
    (this.#values ??= new Map()).set(key, value);
  }

  has(key: StateKey<unknown>): boolean {
    return this.#values?.has(key) ?? false;
  }
}

/** The state of one call (a `Map` keyed by key identity, created on first write). */
export function createCallState(): CallState {
  return new MapCallState();
}
