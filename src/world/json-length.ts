/**
 * About how many bytes a value takes as JSON, for the domain size limit: measured without
 * serialising it when it is plain JSON (every entry of every event is measured).
 */

/**
 * Length of `value` as JSON text, about (a string's escapes are not counted); infinite when it
 * is not JSON. Primitives — most values — are measured without serialising them.
 */
export function jsonLength(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return value.length + 2;
    case 'number':
      return Number.isInteger(value) && Math.abs(value) < 1e9
        ? (value < 0 ? 2 : 1) + (Math.abs(value) < 10 ? 0 : Math.floor(Math.log10(Math.abs(value))))
        : String(value).length;
    case 'boolean':
      return value ? 4 : 5;
    case 'undefined':
      return 0;
    default:
      if (value === null) return 4;
  }
  // Plain JSON (what the state holds, what entries carry) is measured without building its text.
  const measured = textLength(value, 0);
  if (measured >= 0) return measured;
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Deepest nesting {@link textLength} walks; deeper values are measured by `JSON.stringify`. */
const MAX_MEASURED_DEPTH = 64;

/**
 * `JSON.stringify(value).length` for plain JSON — plain objects and arrays of strings, numbers,
 * booleans and null — computed without building the text; -1 for anything else (a class
 * instance, a `toJSON`, `undefined`, a function, deep nesting), which the caller stringifies.
 */
function textLength(value: unknown, depth: number): number {
  switch (typeof value) {
    case 'string':
      return quotedLength(value);
    case 'number':
      return numberLength(value);
    case 'boolean':
      return value ? 4 : 5;
    case 'object':
      if (value === null) return 4;
      if (depth >= MAX_MEASURED_DEPTH) return -1;
      return Array.isArray(value) ? arrayLength(value, depth) : objectLength(value, depth);
    default:
      return -1;
  }
}

function arrayLength(value: readonly unknown[], depth: number): number {
  if (Object.getPrototypeOf(value) !== Array.prototype || 'toJSON' in value) return -1;
  let total = value.length === 0 ? 2 : value.length + 1; // brackets and commas
  for (let i = 0; i < value.length; i++) {
    const item = textLength(value[i], depth + 1);
    if (item < 0) return -1;
    total += item;
  }
  return total;
}

function objectLength(value: object, depth: number): number {
  if (Object.getPrototypeOf(value) !== Object.prototype) return -1;
  const record = value as Record<string, unknown>;
  if ('toJSON' in record) return -1;
  let total = 1; // the opening brace; each member adds its comma or the closing brace
  let members = 0;
  for (const key of Object.keys(record)) {
    const item = textLength(record[key], depth + 1);
    if (item < 0) return -1;
    total += quotedLength(key) + 1 + item + 1;
    members += 1;
  }
  return members === 0 ? 2 : total;
}

/** Length of a number's JSON: its shortest decimal form, `null` when not finite. */
function numberLength(value: number): number {
  if (!Number.isFinite(value)) return 4;
  if (Number.isInteger(value) && Math.abs(value) < 1e21) {
    let digits = 1;
    for (let bound = 10, abs = Math.abs(value); abs >= bound && digits < 21; bound *= 10) {
      digits += 1;
    }
    return value < 0 ? digits + 1 : digits;
  }
  return String(value).length;
}

/** Length of a string as JSON text: its quotes and escapes included (as `JSON.stringify` writes). */
function quotedLength(text: string): number {
  let total = text.length + 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c && (c < 0xd800 || c > 0xdfff)) continue;
    if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a) total += 1;
    else if (c === 0x0c || c === 0x0d) total += 1;
    else if (c < 0x20)
      total += 5; // \u00XX
    else if (c <= 0xdbff && i + 1 < text.length) {
      // A high surrogate: kept as it is when a low one follows, else escaped like a lone low one.
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i += 1;
      else total += 5;
    } else total += 5;
  }
  return total;
}
