import type { Part } from '@a2a-js/sdk';
import type { CostPayload } from './cost.js';
import type { WorldStateDeltaEntry } from './delta.js';
import type { NormalizedPart } from './part-decode.js';
import { decodePart } from './part-decode.js';

export type { NormalizedPart } from './part-decode.js';
import { COST_MIME, PART_MIME_METADATA_KEY, WORLDSTATE_DELTA_MIME } from './uris.js';

/** The outcome of decoding one part. */
export type PartVerdict = { ok: true; part: NormalizedPart } | { ok: false; reason: string };

/** Decodes a part from any of the three shapes; never throws. */
export function readPart(value: unknown): PartVerdict {
  const decoded = decodePart(value);
  return typeof decoded === 'string' ? { ok: false, reason: decoded } : { ok: true, part: decoded };
}

/** How a part identifies as a given extension MIME type. */
export type MimeMatch = 'metadata' | 'mediaType' | 'none';

/**
 * Whether a part carries `mime`: in `metadata.mimeType` (the extensions' convention), or only in
 * the v1.0 `mediaType` field (accepted, but callers warn).
 */
export function partMimeMatch(part: NormalizedPart, mime: string): MimeMatch {
  if (part.metadata[PART_MIME_METADATA_KEY] === mime) return 'metadata';
  if (part.mediaType === mime) return 'mediaType';
  return 'none';
}

function dataPart(value: unknown, mime: string): Part {
  return {
    content: { $case: 'data', value },
    metadata: { [PART_MIME_METADATA_KEY]: mime },
    filename: '',
    mediaType: '',
  };
}

/**
 * A worldstate-delta data part (SDK object) reporting the given mutations.
 *
 * @example
 * ```ts
 * createWorldStateDeltaPart([{ domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 }])
 * ```
 */
export function createWorldStateDeltaPart(deltas: readonly WorldStateDeltaEntry[]): Part {
  return dataPart({ deltas: deltas.map((d) => ({ ...d })) }, WORLDSTATE_DELTA_MIME);
}

/** A cost-v1 data part (SDK object) carrying one usage sample. */
export function createCostPart(payload: CostPayload): Part {
  return dataPart({ ...payload }, COST_MIME);
}
