/**
 * JSON values as the world state holds them: plain objects, arrays, strings, finite numbers,
 * booleans and null — never a prototype-reaching key, never a class instance.
 */
import { FORBIDDEN_PATH_SEGMENTS, LIMITS } from '../protocol/index.js';

/** A JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** Deepest nesting of a value stored in the world state: the protocol's limit. */
const MAX_VALUE_DEPTH = LIMITS.deltaValueDepth;

/** A plain object: created by `{}` / `JSON.parse` or with a null prototype. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Copies `value` into fresh plain JSON, or explains why it is not JSON the world state can hold:
 * a non-finite number, `undefined`, a function, a class instance, nesting deeper than 64, or a key
 * that reaches a prototype (`__proto__`, `constructor`, `prototype`). The copy never shares
 * objects with the input, so a later mutation of the state cannot reach the event payload (the
 * in-memory bus hands the same payload to every subscriber).
 */
export function toJsonValue(
  value: unknown,
): { ok: true; value: JsonValue } | { ok: false; reason: string } {
  // Primitives first: most entries carry one, and they need no copy.
  if (typeof value === 'string' || typeof value === 'boolean' || value === null) {
    return { ok: true, value };
  }
  if (typeof value === 'number' && Number.isFinite(value)) return { ok: true, value };
  const fast = copyPlain(value, 0);
  if (fast !== NOT_JSON) return { ok: true, value: fast };
  // Not JSON: copy again, this time tracking where, for the reason.
  const problems: string[] = [];
  const copy = copyJson(value, 'value', 0, problems);
  const problem = problems[0];
  if (problem !== undefined) return { ok: false, reason: problem };
  return { ok: true, value: copy as JsonValue };
}

/** Returned by {@link copyPlain} for a value {@link copyJson} would report a problem for. */
const NOT_JSON: unique symbol = Symbol('not JSON');

/**
 * {@link copyJson} without the bookkeeping of where a problem is: the same checks, in the same
 * order, but no location text is built per key (that text was most of the cost of a copy).
 */
function copyPlain(value: unknown, depth: number): JsonValue | typeof NOT_JSON {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : NOT_JSON;
    case 'object': {
      if (value === null) return null;
      if (depth >= MAX_VALUE_DEPTH) return NOT_JSON;
      if (Array.isArray(value)) {
        const out = new Array<JsonValue>(value.length);
        for (let i = 0; i < value.length; i++) {
          const item = copyPlain(value[i], depth + 1);
          if (item === NOT_JSON) return NOT_JSON;
          out[i] = item;
        }
        return out;
      }
      if (!isPlainObject(value)) return NOT_JSON;
      const out: JsonObject = {};
      for (const key of Object.keys(value)) {
        if (FORBIDDEN_PATH_SEGMENTS.has(key)) return NOT_JSON;
        const item = copyPlain(value[key], depth + 1);
        if (item === NOT_JSON) return NOT_JSON;
        out[key] = item;
      }
      return out;
    }
    default:
      return NOT_JSON;
  }
}

function copyJson(value: unknown, where: string, depth: number, problems: string[]): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) problems.push(`${where} must be a finite number`);
      return value;
    case 'object': {
      if (value === null) return null;
      if (depth >= MAX_VALUE_DEPTH) {
        problems.push(`${where} is nested deeper than ${MAX_VALUE_DEPTH} levels`);
        return null;
      }
      if (Array.isArray(value)) {
        const out: unknown[] = new Array<unknown>(value.length);
        for (let i = 0; i < value.length && problems.length === 0; i++) {
          out[i] = copyJson(value[i], `${where}[${i}]`, depth + 1, problems);
        }
        return out;
      }
      if (!isPlainObject(value)) {
        problems.push(`${where} must be plain JSON (got an instance of a class)`);
        return null;
      }
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        if (FORBIDDEN_PATH_SEGMENTS.has(key)) {
          problems.push(`${where} must not contain the key ${JSON.stringify(key)}`);
          return null;
        }
        out[key] = copyJson(value[key], `${where}.${key}`, depth + 1, problems);
        if (problems.length > 0) return null;
      }
      return out;
    }
    case 'undefined':
      problems.push(`${where} must not be undefined`);
      return null;
    case 'bigint':
    case 'function':
    case 'symbol':
      problems.push(`${where} must be JSON (got a ${typeof value})`);
      return null;
  }
}

/**
 * `value` itself when it is a JSON primitive (nothing to copy), else a fresh plain copy, else
 * undefined when it is not JSON the world state can hold ({@link toJsonValue} says why). The
 * allocation-free path for the common case.
 */
export function copyJsonValue(value: unknown): JsonValue | undefined {
  if (typeof value === 'string' || typeof value === 'boolean' || value === null) return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  const copy = copyPlain(value, 0);
  return copy === NOT_JSON ? undefined : copy;
}

/** Largest array or object kept whole in an audit record before it is summarised. */
export const AUDIT_MAX_ITEMS = 256;

/** Summary standing in for a value too large to keep in an audit record. */
export interface AuditSummary {
  $summary: 'array' | 'object' | 'string';
  /** Items of an array, keys of an object, characters of a string. */
  size: number;
  /** Bytes of the value as JSON, when measured. */
  bytes?: number;
}

/**
 * An independent copy of a state value for an audit record; a value larger than `maxBytes` as JSON
 * (or with more than 256 items) is replaced by an {@link AuditSummary}. Replay never reads these
 * copies (it re-applies the operations), so summarising costs nothing but detail.
 */
export function auditSnapshot(value: unknown, maxBytes: number): unknown {
  return auditValue(value, maxBytes, true);
}

/**
 * `value` itself when it is small enough for an audit record, else an {@link AuditSummary}. For
 * values nothing mutates any more (a replaced value, an independent copy); no copy is made.
 */
export function auditView(value: unknown, maxBytes: number): unknown {
  return auditValue(value, maxBytes, false);
}

/** What an audit record keeps of `value`: see {@link auditSnapshot} (`copy`) and {@link auditView}. */
function auditValue(value: unknown, maxBytes: number, copy: boolean): unknown {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'string' && value.length > maxBytes) {
      return { $summary: 'string', size: value.length } satisfies AuditSummary;
    }
    return value;
  }
  if (Array.isArray(value) && value.length > AUDIT_MAX_ITEMS) {
    return { $summary: 'array', size: value.length } satisfies AuditSummary;
  }
  const text = JSON.stringify(value);
  if (text.length <= maxBytes) return copy ? (JSON.parse(text) as unknown) : value;
  return Array.isArray(value)
    ? ({ $summary: 'array', size: value.length, bytes: text.length } satisfies AuditSummary)
    : ({
        $summary: 'object',
        size: Object.keys(value).length,
        bytes: text.length,
      } satisfies AuditSummary);
}

/** A deep copy of a JSON object (the state of a domain). */
export function cloneJsonObject(value: JsonObject): JsonObject {
  return structuredClone(value);
}
