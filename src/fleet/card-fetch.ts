import { FleetgateError } from '../errors/index.js';
import { AGENT_CARD_PATHS, LIMITS } from '../protocol/index.js';

/** Options for {@link fetchCardText}. */
export interface FetchCardOptions {
  /** Milliseconds before the fetch is abandoned; default 5000. */
  timeoutMs?: number;
  /** Largest body accepted, in bytes; default `LIMITS.cardBytes`. */
  maxBytes?: number;
  /** Extra request headers (auth). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  fetchImpl?: typeof fetch;
}

/** A fetched card document. */
export interface FetchedCard {
  url: string;
  text: string;
  etag?: string;
  lastModified?: string;
}

async function readLimited(response: Response, maxBytes: number, url: string): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw new FleetgateError(
      'FLEETGATE_CARD_TOO_LARGE',
      `${url}: the card is ${declared} bytes, more than the limit of ${maxBytes}`,
    );
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new FleetgateError(
        'FLEETGATE_CARD_TOO_LARGE',
        `${url}: the card is more than the limit of ${maxBytes} bytes`,
      );
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The URLs to try for an agent: the URL itself when it names a file, else the well-known paths. */
export function cardUrlsFor(agentUrl: string): string[] {
  const url = new URL(agentUrl);
  if (url.pathname.endsWith('.json')) return [url.toString()];
  const base = url.toString().replace(/\/+$/, '');
  return AGENT_CARD_PATHS.map((path) => `${base}${path}`);
}

/**
 * Fetches an agent card document over HTTP with `A2A-Version: 1.0`, a timeout and a size limit.
 * Tries `/.well-known/agent-card.json`, then the legacy `/.well-known/agent.json` on a 404.
 *
 * @throws FleetgateError `FLEETGATE_CARD_FETCH_FAILED` or `FLEETGATE_CARD_TOO_LARGE`.
 */
export async function fetchCardText(
  agentUrl: string,
  options: FetchCardOptions = {},
): Promise<FetchedCard> {
  const fetchImpl = options.fetchImpl ?? fetch;
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxBytes = options.maxBytes ?? LIMITS.cardBytes;
  const urls = cardUrlsFor(agentUrl);
  let lastStatus = 0;
  for (const url of urls) {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await fetchImpl(url, {
        headers: { accept: 'application/json', 'A2A-Version': '1.0', ...options.headers },
        redirect: 'error',
        signal,
      });
    } catch (error) {
      const reason = timeout.aborted
        ? `timed out after ${timeoutMs} ms`
        : error instanceof Error
          ? error.cause instanceof Error
            ? error.cause.message
            : error.message
          : String(error);
      throw new FleetgateError('FLEETGATE_CARD_FETCH_FAILED', `${url}: ${reason}`, {
        cause: error,
        details: { url },
      });
    }
    if (response.status === 404 && url !== urls[urls.length - 1]) {
      await response.body?.cancel();
      lastStatus = 404;
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new FleetgateError(
        'FLEETGATE_CARD_FETCH_FAILED',
        `${url}: HTTP ${response.status} ${response.statusText}`.trim(),
        { details: { url, status: response.status } },
      );
    }
    const text = await readLimited(response, maxBytes, url);
    const fetched: FetchedCard = { url, text };
    const etag = response.headers.get('etag');
    const lastModified = response.headers.get('last-modified');
    if (etag !== null) fetched.etag = etag;
    if (lastModified !== null) fetched.lastModified = lastModified;
    return fetched;
  }
  throw new FleetgateError('FLEETGATE_CARD_FETCH_FAILED', `${agentUrl}: HTTP ${lastStatus}`);
}
