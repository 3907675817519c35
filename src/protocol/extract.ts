import type { CostPayload } from './cost.js';
import { acceptCostPayload } from './cost-accept.js';
import { parseCostPayload } from './cost.js';
import type { RejectedDeltaEntry, WorldStateDeltaEntry } from './delta.js';
import { partLocation } from './delta.js';
import { collectDeltas } from './delta-collect.js';
import { LIMITS } from './limits.js';
import type { NormalizedPart } from './parts.js';
import { partMimeMatch } from './parts.js';
import type { NormalizedTask } from './task.js';
import { readTask } from './task.js';
import { COST_MIME, WORLDSTATE_DELTA_MIME } from './uris.js';

/** Everything a task reported through worldstate-delta parts. */
export interface DeltaExtraction {
  /** Valid entries of every delta part, in artifact then part order. */
  entries: WorldStateDeltaEntry[];
  /** Entries that were not accepted, with index (across all parts) and reason. */
  rejected: RejectedDeltaEntry[];
  /** How many worldstate-delta parts were found. */
  parts: number;
  /** Things that were accepted but deserve a word, e.g. a MIME only in `mediaType`. */
  warnings: string[];
}

function isNormalizedTask(value: unknown): value is NormalizedTask {
  return (
    typeof value === 'object' &&
    value !== null &&
    'state' in value &&
    typeof value.state === 'string' &&
    'artifacts' in value &&
    Array.isArray(value.artifacts) &&
    !('status' in value)
  );
}

function toNormalized(task: unknown): NormalizedTask {
  return isNormalizedTask(task) ? task : readTask(task);
}

type DataPart = Extract<NormalizedPart, { type: 'data' }>;

/**
 * Calls `visit` with every data part of the task, with its artifact and part index. Index loops
 * that skip holes, as `forEach` would: this runs on every skill call.
 */
function forEachDataPart(
  task: NormalizedTask,
  visit: (part: DataPart, a: number, p: number) => void,
): void {
  const artifacts = task.artifacts;
  for (let a = 0; a < artifacts.length; a += 1) {
    if (!(a in artifacts)) continue;
    const parts = artifacts[a]!.parts;
    for (let p = 0; p < parts.length; p += 1) {
      if (!(p in parts)) continue;
      const part = parts[p]!;
      if (part.type === 'data') visit(part, a, p);
    }
  }
}

/**
 * Collects the worldstate-delta entries of **every** delta part of every artifact of a task
 * (SDK object, v1.0 or v0.3 wire JSON, or an already normalised task). A part is a delta part when
 * its `metadata.mimeType` is the worldstate-delta MIME; one that carries the MIME only in its v1.0
 * `mediaType` is read too, with a warning; any other data part is never read as deltas.
 *
 * @throws FleetgateError `FLEETGATE_TASK_INVALID` when `task` is not a task at all.
 */
export function extractWorldStateDeltas(task: unknown): DeltaExtraction {
  const normalized = toNormalized(task);
  const out: DeltaExtraction = { entries: [], rejected: [], parts: 0, warnings: [] };
  let seen = 0;
  forEachDataPart(normalized, (part, a, p) => {
    const match = partMimeMatch(part, WORLDSTATE_DELTA_MIME);
    if (match === 'none') return;
    if (match === 'mediaType') {
      out.warnings.push(
        `${partLocation(a, p)}: the worldstate-delta MIME is only in "mediaType"; put it in metadata.mimeType`,
      );
    }
    out.parts += 1;
    seen += collectDeltas(
      part.data,
      out,
      seen,
      Math.max(0, LIMITS.deltasPerTask - seen),
      undefined,
      a,
      p,
    );
  });
  return out;
}

/** The cost-v1 sample a task reported, and the problems of any cost part that was not valid. */
export interface CostExtraction {
  /** The first valid cost-v1 payload, if any. */
  payload?: CostPayload;
  /** One message per invalid cost part, naming where it was. */
  problems: string[];
}

/**
 * Reads the cost-v1 part of a task, if the agent sent one.
 *
 * @throws FleetgateError `FLEETGATE_TASK_INVALID` when `task` is not a task at all.
 */
export function extractCost(task: unknown): CostExtraction {
  const normalized = toNormalized(task);
  const problems: string[] = [];
  let payload: CostPayload | undefined;
  forEachDataPart(normalized, (part, a, p) => {
    if (partMimeMatch(part, COST_MIME) === 'none') return;
    // A valid payload (nearly every one) passes the fast check; the schema words the others.
    const accepted = acceptCostPayload(part.data);
    if (accepted !== undefined) {
      payload ??= accepted;
      return;
    }
    const verdict = parseCostPayload(part.data);
    if (!verdict.ok) problems.push(`artifacts[${a}].parts[${p}].data: ${verdict.reason}`);
    else payload ??= verdict.payload;
  });
  return payload === undefined ? { problems } : { problems, payload };
}
