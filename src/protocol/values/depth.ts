/**
 * Where `value` holds arrays or objects nested deeper than `limit` levels: the path of the first
 * one past the limit (`[0].steps[2]`; `''` when `value` itself is), or undefined when it is within
 * the limit. It descends no deeper than `limit`, so a value nested a million deep costs no more
 * than one at the limit and never the stack that canonical JSON, fingerprints and codecs need.
 *
 * @example
 * ```ts
 * tooDeepAt({ a: [[1]] }, 2); // '.a[0]'
 * tooDeepAt({ a: [1] }, 2); // undefined
 * ```
 */
export function tooDeepAt(value: unknown, limit: number): string | undefined {
  const trail = deepTrail(value, limit);
  if (trail === undefined) return undefined;
  let at = '';
  for (let i = trail.length - 1; i >= 0; i -= 1) {
    const key = trail[i]!;
    at +=
      typeof key === 'number'
        ? `[${key}]`
        : /^[A-Za-z_$][\w$]*$/.test(key)
          ? `.${key}`
          : `[${JSON.stringify(key)}]`;
  }
  return at;
}

/** The keys to the first container past `levels` more levels, innermost first. */
function deepTrail(value: unknown, levels: number): (string | number)[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (levels === 0) return [];
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const trail = deepTrail(value[i], levels - 1);
      if (trail !== undefined) return (trail.push(i), trail);
    }
    return undefined;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const trail = deepTrail(record[key], levels - 1);
    if (trail !== undefined) return (trail.push(key), trail);
  }
  return undefined;
}
