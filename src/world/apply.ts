/**
 * Apply semantics of one worldstate-delta entry on a domain object. Pure and synchronous; the only
 * mutation is of the object passed in, and only after the whole entry was found applicable, so a
 * rejected entry leaves the object exactly as it was.
 *
 * - `set` replaces the value at the path, creating missing parents as plain objects;
 * - `inc` adds a finite number to a number, or to an absent value taken as 0;
 * - `push` appends to an array, or to an absent value taken as `[]`.
 *
 * A segment addresses an own property of an object, or an element of an array by its decimal
 * index (`data.items.0`); an index may equal the array's length, which appends. Prototypes are
 * never read or written: lookups use `Object.hasOwn`, new containers are plain `{}`, and the
 * segments `__proto__`, `constructor` and `prototype` are refused here even though the protocol
 * parser already refuses them (defence in depth).
 */
import type { DeltaOp } from '../protocol/index.js';
import { checkDeltaPath } from '../protocol/index.js';
import { copyJsonValue, isPlainObject, toJsonValue } from './json.js';
import { jsonLength } from './json-length.js';
import type { AuditSummary } from './json.js';
import type { JsonObject, JsonValue } from './json.js';

/** What applying one entry did, or why it could not. */
export type ApplyOutcome =
  | {
      ok: true;
      /**
       * The value at the path before (undefined when absent). For `set` it is the replaced value,
       * which has left the tree; for `push` the array's size (`{ $summary: 'array', size }`).
       */
      previous: unknown;
      /**
       * The value at the path after: the `snapshot` of the new value for `set`, the sum for `inc`,
       * the array's size for `push`.
       */
      next: unknown;
    }
  | { ok: false; reason: string };

/** Options of {@link applyDelta}. */
export interface ApplyOptions {
  /**
   * Copies the new value of a `set` for the outcome's `next`, before later entries can mutate it
   * (default: the stored value itself — fine for callers that copy it right away or not at all).
   */
  snapshot?: (value: unknown) => unknown;
}

const INDEX = /^(?:0|[1-9]\d{0,8})$/;

type Container = JsonObject | JsonValue[];

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

const identity = (value: unknown): unknown => value;

/** What `push` reports as previous / next: the array's size, not a copy of a growing array. */
function arraySize(size: number): AuditSummary {
  return { $summary: 'array', size };
}

/**
 * The segments of `path` when it passes `checkDeltaPath` (non-empty segments, bounded length and
 * depth, no prototype-reaching segment), else undefined: the protocol's rule, re-checked. The
 * materialiser keeps the result per path (see `PathCache`); nothing here mutates it.
 */
export function splitPath(path: string): readonly string[] | undefined {
  return checkDeltaPath(path) === undefined ? path.split('.') : undefined;
}

/** Returned by {@link child} for a segment that is not valid in its container. */
const INVALID_STEP: unique symbol = Symbol('invalid step');

/**
 * The child at `segments[depth]` of `container` (undefined when absent), or {@link INVALID_STEP}
 * when the segment cannot address an element of an array there ({@link invalidStepReason} says
 * why). No object is allocated per step: this runs for every segment of every entry.
 */
function child(
  container: Container,
  segments: readonly string[],
  depth: number,
): JsonValue | undefined | typeof INVALID_STEP {
  const segment = segments[depth]!;
  if (Array.isArray(container)) {
    if (!INDEX.test(segment)) return INVALID_STEP;
    const index = Number(segment);
    return index > container.length ? INVALID_STEP : container[index];
  }
  return Object.hasOwn(container, segment) ? container[segment] : undefined;
}

/** Why {@link child} returned {@link INVALID_STEP} for `segments[depth]` of the array `container`. */
function invalidStepReason(
  container: readonly JsonValue[],
  segments: readonly string[],
  depth: number,
): { ok: false; reason: string } {
  const segment = segments[depth]!;
  const at = segments.slice(0, depth).join('.') || '(root)';
  if (!INDEX.test(segment)) {
    return {
      ok: false,
      reason: `${at} is an array; segment ${JSON.stringify(segment)} is not an index`,
    };
  }
  return {
    ok: false,
    reason: `${at} has ${container.length} items; index ${Number(segment)} would leave a gap`,
  };
}

function write(container: Container, segment: string, value: JsonValue): void {
  if (Array.isArray(container)) container[Number(segment)] = value;
  else container[segment] = value;
}

/**
 * Applies one entry to `root` in place. Never throws for bad input: an entry that cannot apply
 * comes back `{ ok: false, reason }` and `root` is unchanged.
 *
 * @example
 * ```ts
 * const domain = { data: { blockedPRs: 3 } };
 * applyDelta(domain, 'data.blockedPRs', 'inc', -1); // { ok: true, previous: 3, next: 2 }
 * applyDelta(domain, 'data.blockedPRs.x', 'set', 1); // { ok: false, reason: '… goes through a number' }
 * ```
 */
export function applyDelta(
  root: JsonObject,
  path: string,
  op: DeltaOp,
  value: unknown,
  options: ApplyOptions = {},
): ApplyOutcome {
  return applyDeltaAt(root, path, splitPath(path), op, value, options.snapshot ?? identity);
}

/**
 * {@link applyDelta} with the path already split by {@link splitPath} (undefined when it did not
 * pass): the materialiser splits each distinct path once, not once per entry — splitting and
 * looking up freshly split keys was the largest cost of applying an entry.
 */
export function applyDeltaAt(
  root: JsonObject,
  path: string,
  segments: readonly string[] | undefined,
  op: DeltaOp,
  value: unknown,
  snapshot: (value: unknown) => unknown = identity,
): ApplyOutcome {
  if (segments === undefined) {
    return { ok: false, reason: `path ${checkDeltaPath(path) ?? 'is invalid'}` };
  }
  if (!isPlainObject(root)) return { ok: false, reason: 'domain state is not a plain object' };

  let operand: JsonValue;
  switch (op) {
    case 'inc':
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        return { ok: false, reason: `inc needs a finite number as value (got ${describe(value)})` };
      }
      operand = value;
      break;
    case 'set':
    case 'push': {
      const copy = copyJsonValue(value);
      if (copy === undefined) {
        const verdict = toJsonValue(value);
        return { ok: false, reason: verdict.ok ? 'value is not JSON' : verdict.reason };
      }
      operand = copy;
      break;
    }
    default:
      return { ok: false, reason: `op must be set, inc or push (got ${JSON.stringify(op)})` };
  }

  const last = segments.length - 1;
  // Phase 1: walk as far as the path exists, checking every step; nothing is written yet.
  let container: Container = root;
  let depth = 0;
  for (; depth < last; depth++) {
    const next = child(container, segments, depth);
    if (next === INVALID_STEP) return invalidStepReason(container as JsonValue[], segments, depth);
    if (next === undefined) break; // missing parents from here on: created in phase 2
    if (next === null || typeof next !== 'object') {
      const through = segments.slice(0, depth + 1).join('.');
      return { ok: false, reason: `path goes through ${through}, which is ${describe(next)}` };
    }
    container = next;
  }

  if (depth < last) {
    // A missing parent: the target is absent, so every op applies (as set, inc from 0, push
    // onto []). The first missing segment must still be a valid step of its container.
    const target: JsonValue = op === 'push' ? [operand] : operand;
    let built: JsonValue = target;
    for (let i = last; i > depth; i--) {
      const node: JsonObject = {};
      node[segments[i]!] = built;
      built = node;
    }
    write(container, segments[depth]!, built);
    return { ok: true, previous: undefined, next: op === 'push' ? arraySize(1) : snapshot(target) };
  }

  const key = segments[last]!;
  const current = child(container, segments, last);
  if (current === INVALID_STEP) return invalidStepReason(container as JsonValue[], segments, last);
  switch (op) {
    case 'set': {
      write(container, key, operand);
      // The replaced value left the tree, so it needs no copy; the new one is copied for the
      // caller because later entries may mutate it.
      return { ok: true, previous: current, next: snapshot(operand) };
    }
    case 'inc': {
      if (current !== undefined && typeof current !== 'number') {
        return { ok: false, reason: `inc needs a number at ${path}, found ${describe(current)}` };
      }
      const sum = (current ?? 0) + (operand as number);
      if (!Number.isFinite(sum)) return { ok: false, reason: `inc at ${path} overflows` };
      write(container, key, sum);
      return { ok: true, previous: current, next: sum };
    }
    case 'push': {
      if (current === undefined) {
        write(container, key, [operand]);
        return { ok: true, previous: undefined, next: arraySize(1) };
      }
      if (!Array.isArray(current)) {
        return { ok: false, reason: `push needs an array at ${path}, found ${describe(current)}` };
      }
      const previous = arraySize(current.length);
      current.push(operand);
      return { ok: true, previous, next: arraySize(current.length) };
    }
  }
}

/** The value at `segments` of `root` without changing anything (undefined when absent). */
function valueAt(root: JsonObject, segments: readonly string[]): JsonValue | undefined {
  let node: JsonValue = root;
  for (const segment of segments) {
    if (node === null || typeof node !== 'object') return undefined;
    if (Array.isArray(node)) {
      if (!INDEX.test(segment)) return undefined;
      node = node[Number(segment)] as JsonValue;
    } else {
      if (!Object.hasOwn(node, segment)) return undefined;
      node = node[segment]!;
    }
    if (node === undefined) return undefined;
  }
  return node;
}

/**
 * About how many bytes applying the entry adds to the domain's JSON (negative when it shrinks it):
 * a `set` the new value's JSON less the replaced one's, a `push` the item's, an `inc` nothing
 * unless it creates the number. A new key counts its name. Measures only the values involved,
 * never the domain.
 */
export function growthOf(
  root: JsonObject,
  segments: readonly string[],
  op: string,
  value: unknown,
): number {
  const current = valueAt(root, segments);
  const key = current === undefined ? segments[segments.length - 1]!.length + 4 : 0;
  switch (op) {
    case 'set':
      return jsonLength(value) + key - (current === undefined ? 0 : jsonLength(current));
    case 'push':
      return jsonLength(value) + 1 + (current === undefined ? key + 2 : 0);
    case 'inc':
      return current === undefined ? key + 8 : 0;
    default:
      return 0;
  }
}
