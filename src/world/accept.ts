/**
 * A fast acceptance check for delta entries on the materialiser's hot path. Apart from the path —
 * which `applyDelta` then checks by the rules and with the reasons of `checkDeltaPath` — it accepts
 * a subset of what the protocol's `parseDeltaEntry` (zod) accepts, the common clearly valid entries,
 * and returns undefined for everything else, which then goes through `parseDeltaEntry` for the
 * verdict and its reason. So the rules stay defined in one place (`src/protocol/delta.ts`).
 */
import type { WorldStateDeltaEntry } from '../protocol/index.js';
import { LIMITS } from '../protocol/index.js';
import { isPlainObject } from './json.js';

const DOMAIN = /^[^\s.]+$/u;
/** A UTF-8 character takes at most 3 bytes per UTF-16 unit; quotes and escapes are covered below. */
const MAX_BYTES_PER_UNIT = 6;

/** Longest text `JSON.stringify` gives a finite number (`-0.0000012345678901234567` is 25). */
const MAX_NUMBER_CHARS = 32;
/** Deeper values are left to the protocol parser (the world state refuses them anyway). */
const MAX_DEPTH = 64;

/**
 * An upper bound of `JSON.stringify(value).length`, or `Infinity` when it passes `max` or `value`
 * is anything but plain JSON (a `toJSON`, `undefined`, a class instance…): then the caller asks
 * the protocol parser. Walks the value instead of serialising it, which cost more than applying.
 */
function jsonLengthBound(value: unknown, max: number, depth: number): number {
  switch (typeof value) {
    case 'number':
      return MAX_NUMBER_CHARS;
    case 'boolean':
      return 5;
    case 'string':
      return value.length * MAX_BYTES_PER_UNIT + 2;
    case 'object': {
      if (value === null) return 4;
      if (depth >= MAX_DEPTH) return Number.POSITIVE_INFINITY;
      let total = 2;
      if (Array.isArray(value)) {
        if (Object.hasOwn(value, 'toJSON')) return Number.POSITIVE_INFINITY;
        for (let i = 0; i < value.length && total <= max; i++) {
          total += jsonLengthBound(value[i], max - total, depth + 1) + 1;
        }
        return total <= max ? total : Number.POSITIVE_INFINITY;
      }
      if (!isPlainObject(value)) return Number.POSITIVE_INFINITY;
      for (const key of Object.keys(value)) {
        // `"key":value,` — the key escaped like any string.
        total += key.length * MAX_BYTES_PER_UNIT + 4;
        if (total > max) return Number.POSITIVE_INFINITY;
        total += jsonLengthBound(value[key], max - total, depth + 1);
      }
      return total <= max ? total : Number.POSITIVE_INFINITY;
    }
    default:
      return Number.POSITIVE_INFINITY;
  }
}

function smallEnough(value: unknown): boolean {
  switch (typeof value) {
    case 'number':
    case 'boolean':
      return true;
    case 'string':
      return value.length * MAX_BYTES_PER_UNIT + 2 <= LIMITS.deltaValueBytes;
    case 'object': {
      if (value === null) return true;
      // At most 3 UTF-8 bytes per UTF-16 unit of the JSON text. The bound settles small values;
      // a larger one (or one with escapes the bound counts at their worst) is measured.
      const max = Math.floor(LIMITS.deltaValueBytes / 3);
      if (jsonLengthBound(value, max, 0) <= max) return true;
      let text: string | undefined;
      try {
        text = JSON.stringify(value);
      } catch {
        return false;
      }
      return text !== undefined && text.length <= max;
    }
    default:
      return false;
  }
}

/** The entry when it is clearly valid, else undefined (ask `parseDeltaEntry`). */
export function acceptDeltaEntry(candidate: unknown): WorldStateDeltaEntry | undefined {
  if (!isPlainObject(candidate)) return undefined;
  const { domain, path, op, value } = candidate;
  if (typeof domain !== 'string' || domain.length === 0 || domain.length > LIMITS.nameLength) {
    return undefined;
  }
  if (!DOMAIN.test(domain)) return undefined;
  // The path's rules (length, depth, segments) are checked by `applyDelta` with the same rules and
  // reasons as `checkDeltaPath`, so they are not checked twice on this path.
  if (typeof path !== 'string') return undefined;
  if (op === 'inc') {
    if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  } else if (op === 'set' || op === 'push') {
    if (value === undefined || !smallEnough(value)) return undefined;
  } else {
    return undefined;
  }
  return { domain, path, op, value };
}
