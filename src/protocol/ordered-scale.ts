/**
 * One implementation of an ordered scale of names (`self` < `project` < …, `autonomous` <
 * `notification` < …), so every scale compares, takes maxima and parses the same way.
 */

/**
 * Compare, maximum, threshold and parse over one ordered list of names. The functions use no
 * `this`, so they can be passed around detached (`radii.sort(scale.compare)`).
 */
export interface OrderedScale<T extends string> {
  /** The names, lowest first. */
  readonly values: readonly T[];
  /** Rank of each name: the first 0, the next 1, … */
  readonly order: Readonly<Record<T, number>>;
  /** True when `value` is a name of this scale (own names only: never `__proto__`, `toString`). */
  readonly is: (value: unknown) => value is T;
  /** Negative when `a` ranks below `b`, 0 when equal, positive when above (a sort comparator). */
  readonly compare: (a: T, b: T) => number;
  /** The highest of the given names, ignoring `undefined`; `undefined` when none is given. */
  readonly max: (...values: readonly (T | undefined)[]) => T | undefined;
  /** True when `value` ranks at or above `threshold`. */
  readonly atLeast: (value: T, threshold: T) => boolean;
  /** `value` when it is a name of this scale, else `undefined` (never throws). */
  readonly parse: (value: unknown) => T | undefined;
}

/**
 * Builds an {@link OrderedScale} over `values`, lowest first.
 *
 * @example
 * ```ts
 * const radius = createOrderedScale(['self', 'project', 'repo', 'fleet', 'public'] as const);
 * radius.max('self', undefined, 'repo'); // 'repo'
 * radius.atLeast('fleet', 'repo');       // true
 * ```
 */
export function createOrderedScale<const T extends string>(values: readonly T[]): OrderedScale<T> {
  const order = Object.freeze(
    Object.fromEntries(values.map((v, i) => [v, i])) as Record<T, number>,
  );
  if (Object.keys(order).length !== values.length) {
    throw new TypeError(`An ordered scale needs distinct names: ${values.join(', ')}`);
  }
  const is = (value: unknown): value is T =>
    typeof value === 'string' && Object.hasOwn(order, value);
  return {
    values: Object.freeze([...values]),
    order,
    is,
    compare: (a, b) => order[a] - order[b],
    max: (...candidates) => {
      let highest: T | undefined;
      for (const c of candidates) {
        if (c !== undefined && (highest === undefined || order[c] > order[highest])) highest = c;
      }
      return highest;
    },
    atLeast: (value, threshold) => order[value] >= order[threshold],
    parse: (value) => (is(value) ? value : undefined),
  };
}
