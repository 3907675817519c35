import { HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { Extensions } from '@a2a-js/sdk';
import { LEGACY_EXTENSIONS_HEADER } from '../protocol/index.js';

const EXTENSION_HEADERS = new Set([
  HTTP_EXTENSION_HEADER.toLowerCase(),
  LEGACY_EXTENSIONS_HEADER.toLowerCase(),
]);

/**
 * Service parameters (HTTP headers) with one `A2A-Extensions` entry carrying the extensions the
 * caller asked for **merged** with the extensions active for this agent — caller's first, then
 * the active ones, each URI once. Every other spelling of the header (`a2a-extensions`,
 * `X-A2A-Extensions`) is folded in and removed; the SDK client then writes the header under the
 * spelling the agent's protocol version expects (`X-A2A-Extensions` for v0.3). The SDK's own
 * `withA2AExtensions` overwrites instead of merging, which is why this exists.
 *
 * With nothing to send, no extension header is present at all.
 */
export function mergeExtensionHeader(
  serviceParameters: Readonly<Record<string, string>> | undefined,
  callerUris: readonly string[] | undefined,
  activeUris: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  let merged: string[] = [];
  if (serviceParameters !== undefined) {
    for (const [key, value] of Object.entries(serviceParameters)) {
      if (EXTENSION_HEADERS.has(key.toLowerCase())) {
        for (const uri of Extensions.parseServiceParameter(value)) {
          merged = Extensions.createFrom(merged, uri);
        }
      } else {
        out[key] = value;
      }
    }
  }
  for (const given of callerUris ?? []) {
    // Same parsing as the header: a comma-separated entry is several URIs, blanks are dropped.
    for (const uri of Extensions.parseServiceParameter(given)) {
      merged = Extensions.createFrom(merged, uri);
    }
  }
  for (const uri of activeUris) merged = Extensions.createFrom(merged, uri);
  if (merged.length > 0) out[HTTP_EXTENSION_HEADER] = Extensions.toServiceParameter(merged);
  return out;
}

/** The extension URIs an agent echoed on its response (`A2A-Extensions` or `X-A2A-Extensions`). */
export function readEchoedExtensions(headers: Headers): string[] | undefined {
  const value = headers.get(HTTP_EXTENSION_HEADER) ?? headers.get(LEGACY_EXTENSIONS_HEADER);
  return value === null ? undefined : Extensions.parseServiceParameter(value);
}

/**
 * {@link readEchoedExtensions} that remembers the last header value it parsed: an agent echoes the
 * same list on every call, so the per-call work is one lookup and a copy. Given `headerName` (the
 * spelling of the agent's protocol version), only that header is read.
 */
export function createEchoedExtensionsReader(
  headerName?: string,
): (headers: Headers) => string[] | undefined {
  let lastValue: string | undefined;
  let lastUris: readonly string[] = [];
  return (headers) => {
    const value =
      headerName === undefined
        ? (headers.get(HTTP_EXTENSION_HEADER) ?? headers.get(LEGACY_EXTENSIONS_HEADER))
        : headers.get(headerName);
    if (value === null) return undefined;
    if (value !== lastValue) {
      lastUris = Extensions.parseServiceParameter(value);
      lastValue = value;
    }
    return [...lastUris];
  };
}
