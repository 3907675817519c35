/**
 * The fields of `T`, where a field that may be `undefined` becomes optional and never holds
 * `undefined`: what `exactOptionalPropertyTypes` accepts for an optional property.
 */
export type Defined<T> = Flat<
  { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
    [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
  }
>;

/** One object type instead of an intersection, so that error messages stay readable. */
type Flat<T> = { [K in keyof T]: T[K] } & {};

/**
 * A copy of `fields` without the keys whose value is `undefined` (`null`, `0`, `''` and `false`
 * stay). With `exactOptionalPropertyTypes` an optional property may be absent but not `undefined`,
 * so options built from optional values go through here instead of one conditional spread each.
 *
 * @example
 * createStore({ url, ...defined({ schema, now: deps.now }) });
 */
export function defined<T extends object>(fields: T): Defined<T> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out as Defined<T>;
}
