import type { Part } from '@a2a-js/sdk';
import type { CostPayload } from './cost.js';
import type { WorldStateDeltaEntry } from './delta.js';
import { isRecord } from './json-path.js';
import { COST_MIME, PART_MIME_METADATA_KEY, WORLDSTATE_DELTA_MIME } from './uris.js';

/**
 * A part in one shape, whatever shape it arrived in: an SDK object (`content.$case`), v1.0 wire
 * JSON (`{ text | data | url | raw, metadata, mediaType }`) or v0.3 wire JSON (`kind`).
 */
export type NormalizedPart =
  | { type: 'text'; text: string; metadata: Record<string, unknown>; mediaType?: string }
  | { type: 'data'; data: unknown; metadata: Record<string, unknown>; mediaType?: string }
  | {
      type: 'file';
      url?: string;
      bytes?: string;
      name?: string;
      metadata: Record<string, unknown>;
      mediaType?: string;
    };

/** The outcome of decoding one part. */
export type PartVerdict = { ok: true; part: NormalizedPart } | { ok: false; reason: string };

function metadataOf(value: Record<string, unknown>): Record<string, unknown> {
  return isRecord(value.metadata) ? value.metadata : {};
}

function withMediaType<T extends NormalizedPart>(part: T, mediaType: unknown): T {
  if (typeof mediaType === 'string' && mediaType !== '') part.mediaType = mediaType;
  return part;
}

function bytesToBase64(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return undefined;
}

/** Decodes a part from any of the three shapes; never throws. */
export function readPart(value: unknown): PartVerdict {
  if (!isRecord(value)) return { ok: false, reason: 'part must be an object' };
  const metadata = metadataOf(value);

  // SDK object: `content: { $case, value }`.
  if (isRecord(value.content) && typeof value.content.$case === 'string') {
    const { $case, value: inner } = value.content;
    switch ($case) {
      case 'text':
        return typeof inner === 'string'
          ? {
              ok: true,
              part: withMediaType({ type: 'text', text: inner, metadata }, value.mediaType),
            }
          : { ok: false, reason: 'text part content must be a string' };
      case 'data':
        return {
          ok: true,
          part: withMediaType({ type: 'data', data: inner, metadata }, value.mediaType),
        };
      case 'url':
      case 'raw': {
        const file: NormalizedPart = { type: 'file', metadata };
        if ($case === 'url' && typeof inner === 'string') file.url = inner;
        const bytes = $case === 'raw' ? bytesToBase64(inner) : undefined;
        if (bytes !== undefined) file.bytes = bytes;
        if (typeof value.filename === 'string' && value.filename !== '') file.name = value.filename;
        return { ok: true, part: withMediaType(file, value.mediaType) };
      }
      default:
        return { ok: false, reason: `unknown part content case ${JSON.stringify($case)}` };
    }
  }

  // v0.3 wire JSON: `kind` discriminates.
  if (typeof value.kind === 'string') {
    switch (value.kind) {
      case 'text':
        return typeof value.text === 'string'
          ? { ok: true, part: { type: 'text', text: value.text, metadata } }
          : { ok: false, reason: 'v0.3 text part needs a string "text"' };
      case 'data':
        return 'data' in value
          ? { ok: true, part: { type: 'data', data: value.data, metadata } }
          : { ok: false, reason: 'v0.3 data part needs "data"' };
      case 'file': {
        if (!isRecord(value.file)) return { ok: false, reason: 'v0.3 file part needs "file"' };
        const file: NormalizedPart = { type: 'file', metadata };
        if (typeof value.file.uri === 'string') file.url = value.file.uri;
        if (typeof value.file.bytes === 'string') file.bytes = value.file.bytes;
        if (typeof value.file.name === 'string') file.name = value.file.name;
        return { ok: true, part: withMediaType(file, value.file.mimeType) };
      }
      default:
        return { ok: false, reason: `unknown v0.3 part kind ${JSON.stringify(value.kind)}` };
    }
  }

  // v1.0 wire JSON: exactly one content member.
  if (typeof value.text === 'string') {
    return {
      ok: true,
      part: withMediaType({ type: 'text', text: value.text, metadata }, value.mediaType),
    };
  }
  if ('data' in value) {
    return {
      ok: true,
      part: withMediaType({ type: 'data', data: value.data, metadata }, value.mediaType),
    };
  }
  if (typeof value.url === 'string' || typeof value.raw === 'string') {
    const file: NormalizedPart = { type: 'file', metadata };
    if (typeof value.url === 'string') file.url = value.url;
    if (typeof value.raw === 'string') file.bytes = value.raw;
    if (typeof value.filename === 'string') file.name = value.filename;
    return { ok: true, part: withMediaType(file, value.mediaType) };
  }
  return { ok: false, reason: 'part has no text, data, url, raw or kind member' };
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
