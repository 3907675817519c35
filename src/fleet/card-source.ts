import { hash } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { canExchange, exchangeWhole, type WholeAnswer } from '../net/index.js';
import { FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import { remember } from '../protocol/caches/index.js';
import { AGENT_CARD_PATHS, LIMITS } from '../protocol/index.js';

/** What a card source needs to know about an agent to fetch its card. */
export interface CardTarget {
  name: string;
  /** The agent's base URL, or the URL of its card document (ending in `.json`). */
  url: string;
  /** Headers sent with the fetch (auth). */
  headers?: Readonly<Record<string, string>>;
}

/** Validators from the previous fetch, for a conditional request. */
export interface CardValidators {
  etag?: string;
  lastModified?: string;
}

/** The validators of a card kept in the store, whose columns hold `null` for none. */
export function storedValidators(etag: string | null, lastModified: string | null): CardValidators {
  return defined({ etag: etag ?? undefined, lastModified: lastModified ?? undefined });
}

/** The outcome of one fetch. */
export type CardFetchResult =
  | {
      status: 'fetched';
      /** The URL the card was served from. */
      url: string;
      text: string;
      /** sha256 of the text, hex. */
      digest: string;
      validators: CardValidators;
    }
  /** The server answered 304: the card did not change since `validators`. */
  | { status: 'not-modified'; url: string };

/**
 * Where agent cards come from. `HttpCardSource` fetches them from the agents;
 * `StaticCardSource` serves cards held in memory (tests, file-based cards).
 */
export interface CardSource {
  /**
   * Fetches the card of `target`. Rejects with a `FleetgateError` (`FLEETGATE_CARD_FETCH_FAILED`,
   * `FLEETGATE_CARD_TOO_LARGE`) whose message names the URL and the reason.
   */
  fetch(
    target: CardTarget,
    previous?: CardValidators,
    signal?: AbortSignal,
  ): Promise<CardFetchResult>;
}

/** sha256 of a card text, hex: the card's identity in events and provenance. */
export function cardDigest(text: string): string {
  // The one-shot hash: no Hash object per card (a third of the cost of hashing a card).
  return hash('sha256', text, 'hex');
}

/** Options of {@link HttpCardSource}. */
export interface HttpCardSourceOptions {
  /** Milliseconds before a fetch is abandoned (default 5000). */
  timeoutMs?: number;
  /** Largest card accepted in bytes (default `LIMITS.cardBytes`). */
  maxBytes?: number;
  /** Most redirects followed, each only within the agent's origin (default 3). */
  maxRedirects?: number;
  /**
   * The fetch every card request goes through (tests inject one). Without it, cards are fetched
   * over `node:http` / `node:https` (`src/net`) and nothing else.
   */
  fetch?: typeof fetch;
}

/** The card URLs to try for an agent: the URL itself when it names a file, else the well-known paths. */
export function cardUrlsFor(agentUrl: string): string[] {
  const url = new URL(agentUrl);
  if (url.pathname.endsWith('.json')) return [url.toString()];
  const base = url.toString().replace(/\/+$/, '');
  return AGENT_CARD_PATHS.map((path) => `${base}${path}`);
}

/** Agent URLs whose card URLs a source remembers. */
const MAX_REMEMBERED_URLS = 10_000;

/** The card URLs to try for `agentUrl`, in order. */
function cardUrlList(agentUrl: string): readonly CardUrl[] {
  return cardUrlsFor(agentUrl).map((href) => ({ href }));
}

/** A card URL, and its parsed form once asked (the legacy one is parsed only when tried). */
interface CardUrl {
  href: string;
  parsed?: URL;
}

/** What the status of an answer means for a card fetch (an error status throws instead). */
type Verdict =
  /** A redirect to follow. */
  | URL
  /** Not modified, or not found here. */
  | CardFetchResult
  | 'not-found'
  /** A card to read. */
  | 'card';

/** Asks only for a card newer than the one `previous` describes (sets the request's validators). */
function askIfChanged(headers: Record<string, unknown>, previous: CardValidators): void {
  if (previous.etag !== undefined) headers['if-none-match'] = previous.etag;
  if (previous.lastModified !== undefined) headers['if-modified-since'] = previous.lastModified;
}

/** A card read at `url`, with the validators its answer named (absent ones left out). */
function fetchedCard(
  url: string,
  text: string,
  etag: string | null | undefined,
  lastModified: string | null | undefined,
): CardFetchResult {
  const validators: CardValidators = {};
  if (etag !== null && etag !== undefined) validators.etag = etag;
  if (lastModified !== null && lastModified !== undefined) validators.lastModified = lastModified;
  return { status: 'fetched', url, text, digest: cardDigest(text), validators };
}

/** Only a card's body is read: the body of any other answer is left unread, as before. */
const okStatus = (status: number): boolean => status >= 200 && status < 300;

function failed(url: string, reason: string, cause?: unknown, status?: number): FleetgateError {
  return new FleetgateError('FLEETGATE_CARD_FETCH_FAILED', `${url}: ${reason}`, {
    cause,
    details: status === undefined ? { url } : { url, status },
  });
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) {
    const code = (cause as Error & { code?: unknown }).code;
    return typeof code === 'string' && !cause.message.includes(code)
      ? `${code} ${cause.message}`
      : cause.message;
  }
  return error.message;
}

/**
 * Fetches agent cards over HTTP: `A2A-Version: 1.0`, the agent's auth headers, a timeout, a size
 * limit enforced while reading, redirects followed only within the agent's origin, and
 * `If-None-Match` / `If-Modified-Since` so an unchanged card costs a 304. Tries
 * `/.well-known/agent-card.json`, then the legacy `/.well-known/agent.json` on a 404.
 */
export class HttpCardSource implements CardSource {
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #maxRedirects: number;
  /** The caller's fetch; undefined: the exchange over `node:http`. */
  readonly #fetch: typeof fetch | undefined;
  /** The card URLs of each agent URL seen (`cardUrlsFor` parses and prints a URL every time). */
  readonly #urls = new Map<string, readonly CardUrl[]>();

  constructor(options: HttpCardSourceOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#maxBytes = options.maxBytes ?? LIMITS.cardBytes;
    this.#maxRedirects = options.maxRedirects ?? 3;
    this.#fetch = options.fetch;
  }

  async fetch(
    target: CardTarget,
    previous: CardValidators = {},
    signal?: AbortSignal,
  ): Promise<CardFetchResult> {
    const urls = this.#urlsOf(target.url);
    for (let i = 0; i < urls.length; i += 1) {
      const url = urls[i]!;
      const result = await this.#fetchOne(url, target, previous, signal);
      if (result === 'not-found' && i < urls.length - 1) continue;
      if (result === 'not-found') {
        // Name every URL tried: the legacy one alone reads as if the current path was never asked.
        const tried =
          urls.length === 1
            ? ''
            : ` (also tried ${urls
                .slice(0, -1)
                .map((u) => u.href)
                .join(', ')})`;
        throw failed(url.href, `HTTP 404 Not Found${tried}`, undefined, 404);
      }
      return result;
    }
    /* c8 ignore next */
    throw failed(target.url, 'no card URL to try');
  }

  #urlsOf(agentUrl: string): readonly CardUrl[] {
    // A fleet has a bounded set of agent URLs; a source fed endless new ones starts over.
    const known = this.#urls.get(agentUrl);
    return known ?? remember(this.#urls, MAX_REMEMBERED_URLS, agentUrl, cardUrlList(agentUrl));
  }

  /** One card URL, its redirects included, within one timeout (one async step per fetch). */
  #fetchOne(
    first: CardUrl,
    target: CardTarget,
    previous: CardValidators,
    signal: AbortSignal | undefined,
  ): Promise<CardFetchResult | 'not-found'> {
    if (this.#fetch === undefined) {
      // Cards come over `src/net` only (agent URLs are http(s): the config says so).
      first.parsed ??= new URL(first.href);
      if (!canExchange(first.parsed, {})) {
        return Promise.reject(
          failed(first.href, 'cards are fetched over http:// or https:// only'),
        );
      }
      return this.#exchangeOne(first.href, first.parsed, target, previous, signal);
    }
    return this.#fetchOneWith(this.#fetch, first.href, target, previous, signal);
  }

  /**
   * What the status of an answer at `url` means: a redirect to follow (only within the origin of
   * `first`, at most `maxRedirects` times), not modified, not found, or a card to read. Throws
   * the card's error for any other status.
   */
  #verdict(
    status: number,
    statusText: string,
    location: string | null | undefined,
    url: string,
    first: string,
    hop: number,
  ): Verdict {
    if (status >= 300 && status < 400 && status !== 304) {
      if (location === null || location === undefined) {
        throw failed(url, `HTTP ${status} without a Location`);
      }
      const next = new URL(location, url);
      // Only a redirect needs the origin: parsed then, not for every card.
      const origin = new URL(first).origin;
      if (next.origin !== origin) {
        throw failed(url, `redirect to another origin (${next.origin}) refused`, undefined, status);
      }
      if (hop >= this.#maxRedirects) {
        throw failed(url, `more than ${this.#maxRedirects} redirects`, undefined, status);
      }
      return next;
    }
    if (status === 304) return { status: 'not-modified', url };
    if (status === 404) return 'not-found';
    if (status < 200 || status > 299) {
      throw failed(url, `HTTP ${status} ${statusText}`.trim(), undefined, status);
    }
    return 'card';
  }

  /**
   * {@link #fetchOne} over `node:http`: the exchange reads a card whole, under the size limit and
   * a deadline of its own (one for all the redirects), and leaves any other body unread.
   */
  async #exchangeOne(
    firstUrl: string,
    first: URL,
    target: CardTarget,
    previous: CardValidators,
    signal: AbortSignal | undefined,
  ): Promise<CardFetchResult | 'not-found'> {
    // Lower-case names, set in order: the agent's headers override the defaults, as with fetch.
    const headers: OutgoingHttpHeaders = { accept: 'application/json', 'a2a-version': '1.0' };
    const given = target.headers;
    if (given !== undefined) for (const name in given) headers[name.toLowerCase()] = given[name];
    askIfChanged(headers, previous);
    const deadline = performance.now() + this.#timeoutMs;
    let parsed = first;
    let url = firstUrl;
    for (let hop = 0; ; hop += 1) {
      const at = url;
      let answer: WholeAnswer;
      try {
        answer = await exchangeWhole(parsed, {
          headers,
          maxBytes: this.#maxBytes,
          tooLarge: (size) => tooLarge(at, size, this.#maxBytes),
          wanted: okStatus,
          timeoutMs: Math.max(0, deadline - performance.now()),
          timedOut: () =>
            failed(
              at,
              `timed out after ${this.#timeoutMs} ms`,
              new DOMException('card fetch timed out', 'TimeoutError'),
            ),
          ...defined({ signal }),
        });
      } catch (error) {
        // The size limit and the deadline fail with the card's error already.
        if (error instanceof FleetgateError && !signal?.aborted) throw error;
        throw failed(url, signal?.aborted ? 'aborted' : describeNetworkError(error), error);
      }
      const h = answer.headers;
      const verdict = this.#verdict(
        answer.status,
        answer.statusText,
        h.location,
        url,
        firstUrl,
        hop,
      );
      if (verdict instanceof URL) {
        parsed = verdict;
        url = verdict.toString();
        continue;
      }
      if (verdict !== 'card') return verdict;
      const text = answer.body === undefined ? '' : answer.body.toString('utf8');
      return fetchedCard(url, text, h.etag, h['last-modified']);
    }
  }

  /** {@link #fetchOne} through a `fetch`. */
  async #fetchOneWith(
    fetcher: typeof fetch,
    firstUrl: string,
    target: CardTarget,
    previous: CardValidators,
    signal: AbortSignal | undefined,
  ): Promise<CardFetchResult | 'not-found'> {
    // A controller and a timer cleared on the way out: `AbortSignal.timeout` costs ~45 µs per
    // signal (a weakly held timer), as much as the rest of a loopback card fetch.
    const controller = new AbortController();
    const timeout = controller.signal;
    const timer = setTimeout(() => {
      controller.abort(new DOMException('card fetch timed out', 'TimeoutError'));
    }, this.#timeoutMs);
    timer.unref?.();
    try {
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      const headers: Record<string, string> = {
        accept: 'application/json',
        'A2A-Version': '1.0',
        ...target.headers,
      };
      askIfChanged(headers, previous);

      let url = firstUrl;
      for (let hop = 0; ; hop += 1) {
        let response: Response;
        try {
          response = await fetcher(url, { headers, redirect: 'manual', signal: combined });
        } catch (error) {
          const reason = timeout.aborted
            ? `timed out after ${this.#timeoutMs} ms`
            : signal?.aborted
              ? 'aborted'
              : describeNetworkError(error);
          throw failed(url, reason, error);
        }
        let verdict: Verdict;
        try {
          verdict = this.#verdict(
            response.status,
            response.statusText,
            response.headers.get('location'),
            url,
            firstUrl,
            hop,
          );
        } finally {
          // Only a card's body is read.
          if (!response.ok) await response.body?.cancel();
        }
        if (verdict instanceof URL) {
          url = verdict.toString();
          continue;
        }
        if (verdict !== 'card') return verdict;
        const declared = Number(response.headers.get('content-length') ?? Number.NaN);
        let text: string;
        if (Number.isFinite(declared) && declared <= this.#maxBytes && response.body !== null) {
          // The server said how long the body is, within the limit: the fetch enforces that
          // length, so read it in one go (much cheaper than pulling chunks through a reader).
          try {
            text = await response.text();
          } catch (error) {
            throw this.#readFailed(url, timeout, error);
          }
        } else {
          text = await this.#readLimited(response, url, timeout, declared);
        }
        return fetchedCard(
          url,
          text,
          response.headers.get('etag'),
          response.headers.get('last-modified'),
        );
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** A body without a length, or one over the limit: read in chunks, counting. */
  async #readLimited(
    response: Response,
    url: string,
    timeout: AbortSignal,
    declared: number,
  ): Promise<string> {
    if (Number.isFinite(declared) && declared > this.#maxBytes) {
      await response.body?.cancel();
      throw tooLarge(url, `${declared} bytes`, this.#maxBytes);
    }
    if (response.body === null) return '';
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > this.#maxBytes) {
          await reader.cancel();
          throw tooLarge(url, `more than ${this.#maxBytes} bytes`, this.#maxBytes);
        }
        chunks.push(value);
      }
    } catch (error) {
      if (error instanceof FleetgateError) throw error;
      throw this.#readFailed(url, timeout, error);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  #readFailed(url: string, timeout: AbortSignal, error: unknown): FleetgateError {
    return failed(
      url,
      timeout.aborted ? `timed out after ${this.#timeoutMs} ms` : describeNetworkError(error),
      error,
    );
  }
}

function tooLarge(url: string, size: string, limit: number): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_CARD_TOO_LARGE',
    `${url}: the card is ${size}, more than the limit of ${limit} bytes`,
    { details: { url, limit } },
  );
}

/**
 * Cards held in memory by agent name: for tests and for cards kept in files. `set` replaces a card
 * (the next fetch sees the change); a card that is `undefined` fails like a refused connection.
 */
export class StaticCardSource implements CardSource {
  readonly #cards = new Map<string, string>();

  constructor(cards: Readonly<Record<string, unknown>> = {}) {
    for (const [name, card] of Object.entries(cards)) this.set(name, card);
  }

  /** Sets the card of `name` (any JSON value, or a JSON text). */
  set(name: string, card: unknown): void {
    this.#cards.set(name, typeof card === 'string' ? card : JSON.stringify(card));
  }

  /** Removes the card of `name`; its next fetch fails. */
  delete(name: string): void {
    this.#cards.delete(name);
  }

  fetch(target: CardTarget, previous: CardValidators = {}): Promise<CardFetchResult> {
    const text = this.#cards.get(target.name);
    const url = `static:${target.name}`;
    if (text === undefined) return Promise.reject(failed(url, 'no card is held for this agent'));
    const digest = cardDigest(text);
    if (previous.etag === `"${digest}"`) return Promise.resolve({ status: 'not-modified', url });
    return Promise.resolve({
      status: 'fetched',
      url,
      text,
      digest,
      validators: { etag: `"${digest}"` },
    });
  }
}
