/**
 * Decoding of one part from any of its three shapes. Internal to `protocol/`: `readPart` is the
 * public form; the task reader calls this directly, since every part of every terminal task passes
 * here and a verdict object around each part is only garbage.
 */
import { isRecord } from './json-path.js';

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

/**
 * Decodes a part from an SDK object (`content.$case`), v1.0 wire JSON (`{ text | data | url |
 * raw, metadata, mediaType }`) or v0.3 wire JSON (`kind`): the part, or the reason it cannot be
 * read (a string). Never throws.
 */
export function decodePart(value: unknown): NormalizedPart | string {
  if (!isRecord(value)) return 'part must be an object';
  const metadata = metadataOf(value);

  // SDK object: `content: { $case, value }`.
  if (isRecord(value.content) && typeof value.content.$case === 'string') {
    const { $case, value: inner } = value.content;
    switch ($case) {
      case 'text':
        return typeof inner === 'string'
          ? withMediaType({ type: 'text', text: inner, metadata }, value.mediaType)
          : 'text part content must be a string';
      case 'data':
        return withMediaType({ type: 'data', data: inner, metadata }, value.mediaType);
      case 'url':
      case 'raw': {
        const file: NormalizedPart = { type: 'file', metadata };
        if ($case === 'url' && typeof inner === 'string') file.url = inner;
        const bytes = $case === 'raw' ? bytesToBase64(inner) : undefined;
        if (bytes !== undefined) file.bytes = bytes;
        if (typeof value.filename === 'string' && value.filename !== '') file.name = value.filename;
        return withMediaType(file, value.mediaType);
      }
      default:
        return `unknown part content case ${JSON.stringify($case)}`;
    }
  }

  // v0.3 wire JSON: `kind` discriminates.
  if (typeof value.kind === 'string') {
    switch (value.kind) {
      case 'text':
        return typeof value.text === 'string'
          ? { type: 'text', text: value.text, metadata }
          : 'v0.3 text part needs a string "text"';
      case 'data':
        return 'data' in value
          ? { type: 'data', data: value.data, metadata }
          : 'v0.3 data part needs "data"';
      case 'file': {
        if (!isRecord(value.file)) return 'v0.3 file part needs "file"';
        const file: NormalizedPart = { type: 'file', metadata };
        if (typeof value.file.uri === 'string') file.url = value.file.uri;
        if (typeof value.file.bytes === 'string') file.bytes = value.file.bytes;
        if (typeof value.file.name === 'string') file.name = value.file.name;
        return withMediaType(file, value.file.mimeType);
      }
      default:
        return `unknown v0.3 part kind ${JSON.stringify(value.kind)}`;
    }
  }

  // v1.0 wire JSON: exactly one content member.
  if (typeof value.text === 'string') {
    return withMediaType({ type: 'text', text: value.text, metadata }, value.mediaType);
  }
  if ('data' in value) {
    return withMediaType({ type: 'data', data: value.data, metadata }, value.mediaType);
  }
  if (typeof value.url === 'string' || typeof value.raw === 'string') {
    const file: NormalizedPart = { type: 'file', metadata };
    if (typeof value.url === 'string') file.url = value.url;
    if (typeof value.raw === 'string') file.bytes = value.raw;
    if (typeof value.filename === 'string') file.name = value.filename;
    return withMediaType(file, value.mediaType);
  }
  return 'part has no text, data, url, raw or kind member';
}
