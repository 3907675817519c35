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

function smallEnough(value: unknown): boolean {
  switch (typeof value) {
    case 'number':
    case 'boolean':
      return true;
    case 'string':
      return value.length * MAX_BYTES_PER_UNIT + 2 <= LIMITS.deltaValueBytes;
    case 'object': {
      if (value === null) return true;
      let text: string | undefined;
      try {
        text = JSON.stringify(value);
      } catch {
        return false;
      }
      return text !== undefined && text.length * 3 <= LIMITS.deltaValueBytes;
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
