/**
 * Validating the `deltas` of worldstate-delta payloads into one result. `parseDeltaPayload` is the
 * public form for one payload; the task extractor collects every delta part of a task into the
 * same lists, with no result object per part and no copy between them.
 */
import type { DeltaVerdicts, WorldStateDeltaEntry } from './delta.js';
import {
  acceptDeltaEntry,
  parseDeltaEntry,
  partLocation,
  summariseRejectedEntry,
} from './delta.js';
import { isRecord, preview } from './json-path.js';
import { LIMITS } from './limits.js';

/** Where a payload sits, worded only for a rejection: `location`, else its artifact and part. */
function payloadLocation(
  location: string | undefined,
  artifact: number | undefined,
  part: number | undefined,
): string {
  if (location !== undefined) return location;
  if (artifact === undefined || part === undefined) return 'data';
  return partLocation(artifact, part);
}

/**
 * Validates the `deltas` of one payload into `into` (valid entries appended to `entries`, the
 * others to `rejected`) and returns how many entries it consumed. `start` numbers entries across
 * several parts; `budget` is how many more entries the task may still contribute.
 */
export function collectDeltas(
  payload: unknown,
  into: DeltaVerdicts,
  start: number,
  budget: number,
  location: string | undefined,
  artifact: number | undefined,
  part: number | undefined,
): number {
  if (!isRecord(payload) || !Array.isArray(payload.deltas)) {
    into.rejected.push({
      index: start,
      entry: summariseRejectedEntry(payload),
      reason: `worldstate-delta payload must be an object with a "deltas" array (got ${preview(payload)})`,
      location: payloadLocation(location, artifact, part),
    });
    return 1;
  }
  const deltas: unknown[] = payload.deltas;
  // How many entries can be read at most (`budget` comes from a caller: NaN or negative reads none).
  const readable = budget >= deltas.length ? deltas.length : budget > 0 ? Math.floor(budget) : 0;
  // Sized for every entry to pass (the usual case); cut back only when one does not.
  let accepted: WorldStateDeltaEntry[] = new Array<WorldStateDeltaEntry>(readable);
  let count = 0;
  for (let i = 0; i < deltas.length; i += 1) {
    // A hole of a sparse array is skipped, as `forEach` does (JSON arrays have none).
    if (!(i in deltas)) continue;
    const candidate = deltas[i];
    if (i >= budget) {
      // Everything from here on is past the limit: one rejection for the run, not one per entry
      // (an agent could send a million), and none of them is read.
      const rest = deltas.length - i;
      into.rejected.push({
        index: start + i,
        entry: { $summary: 'entries', count: rest },
        reason:
          `too many entries: a task may report at most ${LIMITS.deltasPerTask}; ` +
          `${rest} ${rest === 1 ? 'entry' : 'entries'} from here on ${rest === 1 ? 'was' : 'were'} not read`,
        location: `${payloadLocation(location, artifact, part)}.deltas[${i}]`,
      });
      break;
    }
    const entry = acceptDeltaEntry(candidate);
    if (entry !== undefined) {
      accepted[count++] = entry;
      continue;
    }
    const verdict = parseDeltaEntry(candidate);
    if (verdict.ok) accepted[count++] = verdict.entry;
    else {
      into.rejected.push({
        index: start + i,
        entry: summariseRejectedEntry(candidate),
        reason: verdict.reason,
        location: `${payloadLocation(location, artifact, part)}.deltas[${i}]`,
      });
    }
  }
  if (count < readable) accepted = accepted.slice(0, count);
  if (into.entries.length === 0) into.entries = accepted;
  else for (let i = 0; i < count; i += 1) into.entries.push(accepted[i]!);
  return deltas.length;
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
  const out: DeltaVerdicts & { consumed: number } = { entries: [], rejected: [], consumed: 0 };
  out.consumed = collectDeltas(
    payload,
    out,
    options.startIndex ?? 0,
    options.budget ?? LIMITS.deltasPerTask,
    options.location,
    options.artifact,
    options.part,
  );
  return out;
}
