import { z } from 'zod';
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
  /** The entry as the agent sent it. */
  entry: unknown;
  /** What is wrong with it, naming the field. */
  reason: string;
  /** Where it was found, e.g. `artifacts[1].parts[0].data.deltas[3]`. */
  location?: string;
}

function jsonBytes(value: unknown): number {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Checks a dot path: bounded length and depth, no empty or prototype-reaching segments. */
export function checkDeltaPath(path: string): string | undefined {
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
  return undefined;
}

/** What a delta domain may look like besides its length: no whitespace, no dots. */
const DOMAIN_PATTERN = /^[^\s.]+$/;

/** zod schema of one {@link WorldStateDeltaEntry}, enforcing every rule and limit. */
export const worldStateDeltaEntrySchema = z
  .object({
    domain: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(LIMITS.nameLength, `must be at most ${LIMITS.nameLength} characters`)
      .regex(DOMAIN_PATTERN, 'must not contain whitespace or dots'),
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
    if (entry.op === 'inc' && (typeof entry.value !== 'number' || !Number.isFinite(entry.value))) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `must be a finite number for op "inc" (got ${preview(entry.value)})`,
      });
    }
    if (entry.value === undefined && entry.op !== 'inc') {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'is required' });
    }
    const bytes = jsonBytes(entry.value);
    if (bytes > LIMITS.deltaValueBytes) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `is ${bytes} bytes as JSON, more than the limit of ${LIMITS.deltaValueBytes}`,
      });
    }
  });

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

/** True for a value whose JSON is a few bytes whatever it is (a number, boolean or null). */
function smallByType(value: unknown): boolean {
  return typeof value === 'number' || typeof value === 'boolean' || value === null;
}

/**
 * The entry when it passes every rule of {@link worldStateDeltaEntrySchema}, checked by hand;
 * `undefined` when it does not, or when it is not a plain JSON object — then the schema decides and
 * words the reason, so the rules and their messages stay defined once. It accepts only what the
 * schema accepts and returns what the schema returns (`delta-cost.property.test.ts` holds them
 * together). Why: every entry of every skill call passes here, and the schema costs several times
 * these checks on the client's critical path.
 */
function acceptDeltaEntry(candidate: unknown): WorldStateDeltaEntry | undefined {
  if (!isPlainRecord(candidate)) return undefined;
  const { domain, path, op, value } = candidate;
  if (
    typeof domain !== 'string' ||
    domain.length === 0 ||
    domain.length > LIMITS.nameLength ||
    !DOMAIN_PATTERN.test(domain)
  ) {
    return undefined;
  }
  if (typeof path !== 'string' || checkDeltaPath(path) !== undefined) return undefined;
  if (op === 'inc') {
    if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  } else if (op === 'set' || op === 'push') {
    if (value === undefined) return undefined;
    if (!smallByType(value) && jsonBytes(value) > LIMITS.deltaValueBytes) return undefined;
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
  const result = worldStateDeltaEntrySchema.safeParse(candidate);
  if (!result.success) return { ok: false, reason: reasonOf(result.error) };
  const { domain, path, op, value } = result.data;
  return { ok: true, entry: { domain, path, op, value } };
}

/** Every entry of a delta payload, split into the valid and the rejected. */
export interface DeltaVerdicts {
  entries: WorldStateDeltaEntry[];
  rejected: RejectedDeltaEntry[];
}

/**
 * Validates the `deltas` of one worldstate-delta payload. Each entry is judged on its own, so a
 * bad entry never hides the good ones beside it. `startIndex` numbers entries across several parts;
 * `budget` is how many more entries the task may still contribute (see `LIMITS.deltasPerTask`).
 */
export function parseDeltaPayload(
  payload: unknown,
  options: {
    startIndex?: number;
    budget?: number;
    location?: string;
    /** Where the payload sits in its task; the location is worded only for a rejection. */
    artifact?: number;
    part?: number;
  } = {},
): DeltaVerdicts & { consumed: number } {
  const start = options.startIndex ?? 0;
  const budget = options.budget ?? LIMITS.deltasPerTask;
  const out: DeltaVerdicts & { consumed: number } = { entries: [], rejected: [], consumed: 0 };
  if (!isRecord(payload) || !Array.isArray(payload.deltas)) {
    out.rejected.push({
      index: start,
      entry: payload,
      reason: `worldstate-delta payload must be an object with a "deltas" array (got ${preview(payload)})`,
      location: payloadLocation(options),
    });
    out.consumed = 1;
    return out;
  }
  const deltas: unknown[] = payload.deltas;
  for (let i = 0; i < deltas.length; i += 1) {
    // A hole of a sparse array is skipped, as `forEach` does (JSON arrays have none).
    if (!(i in deltas)) continue;
    const candidate = deltas[i];
    if (i >= budget) {
      out.rejected.push({
        index: start + i,
        entry: candidate,
        reason: `too many entries: a task may report at most ${LIMITS.deltasPerTask}`,
        location: `${payloadLocation(options)}.deltas[${i}]`,
      });
      continue;
    }
    const accepted = acceptDeltaEntry(candidate);
    if (accepted !== undefined) {
      out.entries.push(accepted);
      continue;
    }
    const verdict = parseDeltaEntry(candidate);
    if (verdict.ok) out.entries.push(verdict.entry);
    else {
      out.rejected.push({
        index: start + i,
        entry: candidate,
        reason: verdict.reason,
        location: `${payloadLocation(options)}.deltas[${i}]`,
      });
    }
  }
  out.consumed = deltas.length;
  return out;
}

function payloadLocation(options: { location?: string; artifact?: number; part?: number }): string {
  if (options.location !== undefined) return options.location;
  if (options.artifact === undefined || options.part === undefined) return 'data';
  return partLocation(options.artifact, options.part);
}

/** `artifacts[a].parts[p].data`: where a part's payload sits in its task, for messages. */
export function partLocation(artifact: number, part: number): string {
  return `artifacts[${artifact}].parts[${part}].data`;
}
