import type { z } from 'zod';
import { lazySchema } from './lazy-zod.js';
import { FORBIDDEN_PATH_SEGMENTS, LIMITS } from './limits.js';
import { isRecord, preview } from './json-path.js';

/** Mutation operations of a worldstate-delta entry: replace, add to a number, append to a list. */
export const DELTA_OPS = ['set', 'inc', 'push'] as const;

/** One of {@link DELTA_OPS}. */
export type DeltaOp = (typeof DELTA_OPS)[number];

/** One observed mutation an agent reports for a skill call. */
export interface WorldStateDeltaEntry {
  /** World-state domain (`ci`, `board`, …). */
  domain: string;
  /** Dot-separated path into the domain object (`data.blockedPRs`). */
  path: string;
  op: DeltaOp;
  /** Value to set, finite number to add (for `inc`), or item to append. */
  value: unknown;
}

/** The payload of a worldstate-delta data part. */
export interface WorldStateDeltaPayload {
  deltas: WorldStateDeltaEntry[];
}

/** A reported entry that was not accepted, with its position and the reason. */
export interface RejectedDeltaEntry {
  /** Position of the entry among all entries the task reported, counting from 0. */
  index: number;
  /**
   * The entry as the agent sent it; a summary when it is larger than
   * `LIMITS.rejectedEntryBytes` as JSON (see {@link summariseRejectedEntry}), or
   * `{ $summary: 'entries', count }` for a run of entries past the per-task limit.
   */
  entry: unknown;
  /** What is wrong with it, naming the field. */
  reason: string;
  /** Where it was found, e.g. `artifacts[1].parts[0].data.deltas[3]`. */
  location?: string;
  /** The error code when the reason has one (`FLEETGATE_WORLD_DOMAIN_FULL`). */
  code?: string;
}

/**
 * What a rejection keeps of an entry: the entry itself when it is at most
 * `LIMITS.rejectedEntryBytes` as JSON, else `{ $summary: 'entry', bytes, domain?, path?, op? }`
 * (the string fields cut to `LIMITS.nameLength` characters) — the reason says what was wrong, and
 * a huge entry must not make the rejection itself too large to publish.
 */
export function summariseRejectedEntry(entry: unknown): unknown {
  const bytes = jsonBytes(entry);
  if (bytes <= LIMITS.rejectedEntryBytes) return entry;
  const summary: Record<string, unknown> = {
    $summary: 'entry',
    bytes: Number.isFinite(bytes) ? bytes : null,
  };
  if (isRecord(entry)) {
    for (const key of ['domain', 'path', 'op'] as const) {
      const field = entry[key];
      if (typeof field === 'string') summary[key] = field.slice(0, LIMITS.nameLength);
    }
  }
  return summary;
}

function jsonBytes(value: unknown): number {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/*
 * The one rule for what a delta entry may carry, applied wherever entries enter: the protocol
 * parser (fast path and zod schema alike), and the world state when it reads an event. A domain
 * and every path segment must not reach a prototype (`__proto__`, `constructor`, `prototype`)
 * nor contain NUL; a value must be plain JSON (null, a boolean, a finite number, a string, an
 * array or a plain object of such values — no `undefined`, NaN, Infinity, bigint, function,
 * symbol, Date, Map or class instance at any depth, since JSON would drop, null or rewrite them),
 * must not have an own `__proto__` key at any depth, nest deeper than `LIMITS.deltaValueDepth`, or
 * be larger than `LIMITS.deltaValueBytes` as JSON.
 */

const DOT = 46;
const NUL = 0;

/**
 * True when `text.slice(start, start + length)` is a prototype-reaching name (one of
 * `FORBIDDEN_PATH_SEGMENTS`, decided by length first); no slice made.
 */
function isForbiddenSegment(text: string, start: number, length: number): boolean {
  if (length === 9)
    return text.startsWith('__proto__', start) || text.startsWith('prototype', start);
  return length === 11 && text.startsWith('constructor', start);
}

/** Checks a dot path: bounded length and depth, no empty, NUL or prototype-reaching segments. */
export function checkDeltaPath(path: string): string | undefined {
  const n = path.length;
  if (n === 0 || n > LIMITS.pathLength) return pathProblem(path);
  // One scan, nothing allocated; the reason is worded only for a path that fails.
  let segments = 1;
  let start = 0;
  for (let i = 0; i <= n; i += 1) {
    const c = i === n ? DOT : path.charCodeAt(i);
    if (c === DOT) {
      const length = i - start;
      if (length === 0 || isForbiddenSegment(path, start, length)) return pathProblem(path);
      if (i < n) segments += 1;
      start = i + 1;
    } else if (c === NUL) {
      return pathProblem(path);
    }
  }
  return segments > LIMITS.pathDepth ? pathProblem(path) : undefined;
}

/** Why `path` fails {@link checkDeltaPath}: the first rule it breaks, in a fixed order. */
function pathProblem(path: string): string | undefined {
  if (path.length === 0) return 'must not be empty';
  if (path.length > LIMITS.pathLength) return `is longer than ${LIMITS.pathLength} characters`;
  const segments = path.split('.');
  if (segments.length > LIMITS.pathDepth) {
    return `has ${segments.length} segments, more than the limit of ${LIMITS.pathDepth}`;
  }
  for (const segment of segments) {
    if (segment.length === 0) return `has an empty segment in ${JSON.stringify(path)}`;
    if (FORBIDDEN_PATH_SEGMENTS.has(segment)) {
      return `must not contain the segment ${JSON.stringify(segment)}`;
    }
  }
  if (path.includes('\0')) return 'must not contain a NUL character';
  return undefined;
}

/** What a delta domain may look like besides its length: no whitespace, no dots, no NUL. */
const DOMAIN_PATTERN = /^[^\s.\0]+$/;

/**
 * True when `domain` is ASCII without whitespace, dots or NUL: what {@link DOMAIN_PATTERN} accepts,
 * decided by one scan (the pattern is asked only about text this cannot settle).
 */
function plainDomainText(domain: string): boolean {
  for (let i = 0; i < domain.length; i += 1) {
    const c = domain.charCodeAt(i);
    if (c <= 32 || c === DOT || c >= 127) return false;
  }
  return true;
}

/**
 * Checks a delta domain: a non-empty name of at most `LIMITS.nameLength` characters, without
 * whitespace, dots or NUL, that does not reach a prototype.
 */
export function checkDeltaDomain(domain: string): string | undefined {
  if (domain.length === 0) return 'must not be empty';
  if (domain.length > LIMITS.nameLength) return `must be at most ${LIMITS.nameLength} characters`;
  if (!plainDomainText(domain) && !DOMAIN_PATTERN.test(domain)) {
    return domain.includes('\0')
      ? 'must not contain a NUL character'
      : 'must not contain whitespace or dots';
  }
  // The prototype-reaching names, matched as path segments are (no set lookup on every call).
  if (isForbiddenSegment(domain, 0, domain.length)) return `must not be ${JSON.stringify(domain)}`;
  return undefined;
}

/** Longest text `JSON.stringify` gives a number (`-0.0000012345678901234567` is 25). */
const MAX_NUMBER_BYTES = 32;
/** At most 6 bytes of JSON per UTF-16 unit of a string (`\u001f`); 3 unescaped. */
const MAX_BYTES_PER_UNIT = 6;

/** Where a walk of a value stopped and why; built only when it stops. */
interface ValueProblem {
  reason: string;
  /** Keys from the problem up to the value, innermost first. */
  trail: (string | number)[];
}

/** How a value that is not plain JSON reads in a reason: `NaN`, `undefined`, `a function`… */
function describeNotJson(value: unknown): string {
  switch (typeof value) {
    case 'number':
    case 'undefined':
      return String(value);
    case 'bigint':
    case 'function':
    case 'symbol':
      return `a ${typeof value}`;
    default: {
      // The prototype's own `constructor`, read without running a getter: `Map`, `Date`, a class.
      const proto = Object.getPrototypeOf(value) as object | null;
      const ctor: unknown =
        proto === null ? undefined : Object.getOwnPropertyDescriptor(proto, 'constructor')?.value;
      return typeof ctor === 'function' && ctor.name !== ''
        ? `an instance of ${ctor.name}`
        : 'an object with a prototype other than Object.prototype';
    }
  }
}

/** The problem of a value that is not plain JSON, found where the walk stands. */
function notJson(value: unknown): ValueProblem {
  return { reason: `must be plain JSON, not ${describeNotJson(value)}`, trail: [] };
}

/**
 * An upper bound of the value's size as UTF-8 JSON, or the first problem found on the way (not
 * plain JSON, an own `__proto__` key, too deep). One walk checks the rule and bounds the size, so a
 * valid value is never serialised to be measured; its JSON is what was checked (no `toJSON`).
 */
function walkValue(value: unknown, depth: number): number | ValueProblem {
  switch (typeof value) {
    case 'number':
      return Number.isFinite(value) ? MAX_NUMBER_BYTES : notJson(value);
    case 'boolean':
      return 5;
    case 'string':
      return value.length * MAX_BYTES_PER_UNIT + 2;
    case 'object': {
      if (value === null) return 4;
      if (depth >= LIMITS.deltaValueDepth) {
        return { reason: `is nested deeper than ${LIMITS.deltaValueDepth} levels`, trail: [] };
      }
      let total = 2;
      if (Array.isArray(value)) {
        // A hole of a sparse array reads as `undefined`, refused: JSON would write it as null.
        for (let i = 0; i < value.length; i += 1) {
          const item = walkValue(value[i], depth + 1);
          if (typeof item !== 'number') {
            item.trail.push(i);
            return item;
          }
          total += item + 1;
        }
        return total;
      }
      // A Map, Set, Date or class instance would reach JSON as `{}` or through its `toJSON`.
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return notJson(value);
      if (Object.hasOwn(value, '__proto__')) {
        return { reason: 'must not have an own "__proto__" key', trail: ['__proto__'] };
      }
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const item = walkValue(record[key], depth + 1);
        if (typeof item !== 'number') {
          item.trail.push(key);
          return item;
        }
        total += key.length * MAX_BYTES_PER_UNIT + 4 + item;
      }
      return total;
    }
    default:
      return notJson(value);
  }
}

/**
 * Checks a delta value (of a `set` or `push`): plain JSON (see above; `undefined` is refused too,
 * at the top as anywhere inside), no own `__proto__` key at any depth, at most
 * `LIMITS.deltaValueDepth` levels of nesting, at most `LIMITS.deltaValueBytes` as JSON. A problem
 * inside the value names where it is: `must be plain JSON, not NaN (at value.stats[2])`.
 */
export function checkDeltaValue(value: unknown): string | undefined {
  const walked = walkValue(value, 0);
  if (typeof walked !== 'number') {
    let at = 'value';
    for (let i = walked.trail.length - 1; i >= 0; i -= 1) {
      const key = walked.trail[i]!;
      at += typeof key === 'number' ? `[${key}]` : `.${key}`;
    }
    return walked.trail.length === 0 ? walked.reason : `${walked.reason} (at ${at})`;
  }
  if (walked <= LIMITS.deltaValueBytes) return undefined;
  const bytes = jsonBytes(value);
  if (bytes > LIMITS.deltaValueBytes) {
    return `is ${bytes} bytes as JSON, more than the limit of ${LIMITS.deltaValueBytes}`;
  }
  return undefined;
}

/** zod schema of one {@link WorldStateDeltaEntry}, enforcing every rule and limit (built on first use). */
export const worldStateDeltaEntrySchema = lazySchema((z) =>
  z
    .object({
      domain: z.string({ error: 'must be a string' }).superRefine((domain, ctx) => {
        const problem = checkDeltaDomain(domain);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      }),
      path: z.string({ error: 'must be a string' }).superRefine((path, ctx) => {
        const problem = checkDeltaPath(path);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      }),
      op: z.enum(DELTA_OPS, {
        error: (issue) => `must be one of ${DELTA_OPS.join(', ')} (got ${preview(issue.input)})`,
      }),
      value: z.unknown().optional(),
    })
    .superRefine((entry, ctx) => {
      // One issue about the value at most: `inc` has its own rule; a missing value is "required".
      let problem: string | undefined;
      if (entry.op === 'inc') {
        if (typeof entry.value !== 'number' || !Number.isFinite(entry.value)) {
          // `preview` writes NaN and Infinity as JSON does: `null`.
          const got = typeof entry.value === 'number' ? String(entry.value) : preview(entry.value);
          problem = `must be a finite number for op "inc" (got ${got})`;
        }
      } else if (entry.value === undefined) {
        problem = 'is required';
      } else {
        problem = checkDeltaValue(entry.value);
      }
      if (problem !== undefined)
        ctx.addIssue({ code: 'custom', path: ['value'], message: problem });
    }),
);

/** Formats the first zod issue as `field: message`. */
function reasonOf(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.map(String).join('.');
      return field === '' ? issue.message : `${field} ${issue.message}`;
    })
    .join('; ');
}

/** The verdict on one candidate entry. */
export type DeltaEntryVerdict =
  { ok: true; entry: WorldStateDeltaEntry } | { ok: false; reason: string };

/** A plain JSON object: reading its keys reads its own properties (no getters, no class). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** True for plain JSON of a few bytes by its type alone: a finite number, a boolean, null. */
function smallByType(value: unknown): boolean {
  return (
    (typeof value === 'number' && Number.isFinite(value)) ||
    typeof value === 'boolean' ||
    value === null
  );
}

/**
 * The entry when it passes every rule of {@link worldStateDeltaEntrySchema}, checked by hand;
 * `undefined` when it does not, or when it is not a plain JSON object — then the schema decides and
 * words the reason, so the rules and their messages stay defined once. It accepts only what the
 * schema accepts and returns what the schema returns (`delta-cost.property.test.ts` holds them
 * together). Why: every entry of every skill call passes here, and the schema costs several times
 * these checks on the client's critical path.
 */
export function acceptDeltaEntry(candidate: unknown): WorldStateDeltaEntry | undefined {
  if (!isPlainRecord(candidate)) return undefined;
  const { domain, path, op, value } = candidate;
  if (typeof domain !== 'string' || checkDeltaDomain(domain) !== undefined) return undefined;
  if (typeof path !== 'string' || checkDeltaPath(path) !== undefined) return undefined;
  if (op === 'inc') {
    if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  } else if (op === 'set' || op === 'push') {
    if (value === undefined) return undefined;
    if (!smallByType(value) && checkDeltaValue(value) !== undefined) return undefined;
  } else {
    return undefined;
  }
  return { domain, path, op, value };
}

/** Validates one candidate entry; never throws. */
export function parseDeltaEntry(candidate: unknown): DeltaEntryVerdict {
  const accepted = acceptDeltaEntry(candidate);
  if (accepted !== undefined) return { ok: true, entry: accepted };
  if (!isRecord(candidate)) {
    return { ok: false, reason: `entry must be an object (got ${preview(candidate)})` };
  }
  const result = worldStateDeltaEntrySchema().safeParse(candidate);
  if (!result.success) return { ok: false, reason: reasonOf(result.error) };
  const { domain, path, op, value } = result.data;
  return { ok: true, entry: { domain, path, op, value } };
}

/** Every entry of a delta payload, split into the valid and the rejected. */
export interface DeltaVerdicts {
  entries: WorldStateDeltaEntry[];
  rejected: RejectedDeltaEntry[];
}

/** `artifacts[a].parts[p].data`: where a part's payload sits in its task, for messages. */
export function partLocation(artifact: number, part: number): string {
  return `artifacts[${artifact}].parts[${part}].data`;
}
