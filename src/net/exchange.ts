/**
 * The exchange with an agent over `node:http` / `node:https` instead of `fetch`: the same request
 * and answer at a fraction of the cost — no `Request`, no web streams on the way out, no body
 * stream on the way in for an answer that is not a stream. Such an answer is read whole here,
 * under the exchange's byte limit and deadline, and handed back as a `Response` over its bytes; an
 * event stream keeps a stream body (the caller counts and times it). Connections are kept alive
 * and reused, as `fetch` does. What this path does not take — a scheme other than http(s), a body
 * that is not text or bytes — its callers refuse (see {@link canExchange}). A caller that wants no
 * `Response` at all (a card fetch) takes the answer as Node parsed it ({@link exchangeWhole}).
 */
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import type * as Zlib from 'node:zlib';

// TLS and zlib load on first use: most fleets call agents over plain http, uncompressed, and a
// process that imports the library pays for neither.
const load = createRequire(import.meta.url);
let https: { module: typeof Https; pool: Https.Agent } | undefined;
const httpPool = new HttpAgent({ keepAlive: true });

function httpsOnce(): NonNullable<typeof https> {
  if (https === undefined) {
    const module = load('node:https') as typeof Https;
    https = { module, pool: new module.Agent({ keepAlive: true }) };
  }
  return https;
}

/** Statuses whose answer has no body, and the redirects (the caller reads only their headers). */
const NO_BODY = new Set([101, 204, 205, 304, 301, 302, 303, 307, 308]);

/** What {@link exchange} resolves: the answer, and whether its body was already read whole. */
export interface Exchanged {
  response: Response;
  /** True when the body was read here (within the limit): nothing is left to count or time. */
  whole: boolean;
}

/** True when {@link exchange} can send this request (its callers refuse any other). */
export function canExchange(url: URL, init: RequestInit): boolean {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const body = init.body;
  return (
    body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array
  );
}

/** Why `signal` aborted, as the error the exchange fails with. */
function reasonOf(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error
    ? reason
    : new DOMException('This operation was aborted', 'AbortError');
}

function outgoing(given: HeadersInit | undefined): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  if (given === undefined) return headers;
  if (given instanceof Headers) {
    given.forEach((value, name) => (headers[name] = value));
  } else if (Array.isArray(given)) {
    for (const [name, value] of given) headers[name.toLowerCase()] = value;
  } else {
    for (const name in given) headers[name.toLowerCase()] = given[name];
  }
  return headers;
}

/**
 * The class of an answer read whole, defined on first use: naming the global `Response` loads
 * Node's fetch implementation (tens of milliseconds), which importing the library must not pay.
 */
function defineWholeResponse() {
  /**
   * An answer read whole, as a `Response` over its bytes. `json()`, `text()`, `arrayBuffer()`
   * and `bytes()` decode the bytes at once: an answer read once (every JSON-RPC reply) never
   * builds the body stream, whose setup and read cost more than the parse. `body`, `clone()` and
   * the other readers go to a plain `Response` over the same bytes, made on first use.
   */
  return class WholeResponse extends Response {
    #bytes: Uint8Array<ArrayBuffer> | undefined;
    #plain: Response | undefined;
    readonly #init: ResponseInit;

    constructor(bytes: Uint8Array<ArrayBuffer>, init: ResponseInit) {
      super(null, init);
      this.#bytes = bytes;
      this.#init = init;
    }

    /** The bytes, once: a second read fails as `fetch`'s does. */
    #take(): Uint8Array<ArrayBuffer> {
      const bytes = this.#bytes;
      if (bytes === undefined) throw new TypeError('Body is unusable: Body has already been read');
      this.#bytes = undefined;
      return bytes;
    }

    /** The plain response the rest is left to (an empty body once the bytes were read here). */
    #rest(): Response {
      this.#plain ??= new Response(this.#bytes ?? null, this.#init);
      return this.#plain;
    }

    override get body(): ReadableStream<Uint8Array<ArrayBuffer>> | null {
      return this.#rest().body;
    }

    override get bodyUsed(): boolean {
      return this.#plain === undefined ? this.#bytes === undefined : this.#plain.bodyUsed;
    }

    // A read after the first rejects (the throw in an async method), as `fetch`'s does.
    override async text(): Promise<string> {
      if (this.#plain !== undefined) return this.#plain.text();
      const bytes = this.#take();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    }

    override async json(): Promise<unknown> {
      return JSON.parse(await this.text()) as unknown;
    }

    override async arrayBuffer(): Promise<ArrayBuffer> {
      if (this.#plain !== undefined) return this.#plain.arrayBuffer();
      return new Uint8Array(this.#take()).buffer;
    }

    override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
      if (this.#plain !== undefined) return this.#plain.bytes();
      return new Uint8Array(this.#take());
    }

    override blob(): Promise<Blob> {
      return this.#rest().blob();
    }

    override formData(): Promise<FormData> {
      return this.#rest().formData();
    }

    override clone(): Response {
      return this.#rest().clone();
    }
  };
}

let WholeResponse: ReturnType<typeof defineWholeResponse> | undefined;

/** A `Response` over `bytes`, an answer read whole (see {@link defineWholeResponse}). */
function wholeResponse(bytes: Uint8Array<ArrayBuffer>, init: ResponseInit): Response {
  WholeResponse ??= defineWholeResponse();
  return new WholeResponse(bytes, init);
}

function incoming(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}

/** The body as sent, decoded when the agent compressed it (as `fetch` decodes it). */
function decoded(res: IncomingMessage): Readable {
  const encoding = res.headers['content-encoding']?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return res;
  const zlib = load('node:zlib') as typeof Zlib;
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return res.pipe(zlib.createGunzip());
    case 'deflate':
      return res.pipe(zlib.createInflate());
    case 'br':
      return res.pipe(zlib.createBrotliDecompress());
    default:
      return res;
  }
}

/** The request, on the keep-alive pool of its scheme. */
function send(
  url: URL,
  method: string,
  headers: OutgoingHttpHeaders,
  addresses?: readonly string[],
): ClientRequest {
  // Pinned to addresses checked beforehand: a connection of its own, whose host name resolves to
  // nothing else (the name still goes in `Host` and, over TLS, in SNI and the certificate check).
  const pinned =
    addresses === undefined ? undefined : { agent: false as const, lookup: only(addresses) };
  return url.protocol === 'https:'
    ? httpsOnce().module.request(url, { method, headers, agent: httpsOnce().pool, ...pinned })
    : httpRequest(url, { method, headers, agent: httpPool, ...pinned });
}

/** A `lookup` that answers `addresses` whatever the name (see `WholeExchange.addresses`). */
function only(addresses: readonly string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  return (_host, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? options.family : undefined;
    const usable = entries.filter((e) => wanted === undefined || e.family === wanted);
    if (usable.length === 0) {
      const error = Object.assign(new Error('no checked address of that family'), {
        code: 'ENOTFOUND',
      });
      callback(error, '', 0);
      return;
    }
    if (options.all === true) {
      (callback as unknown as (e: null, all: typeof usable) => void)(null, usable);
    } else callback(null, usable[0]!.address, usable[0]!.family);
  };
}

/**
 * Reads the body of `answer` whole (decoded) into `done`; past `maxBytes`, declared or counted, the
 * answer is cut and `fail` gets `tooLarge(size)`. A connection lost mid-body fails as `fetch`'s
 * body read does (`TypeError: terminated`).
 */
function readWhole(
  answer: IncomingMessage,
  maxBytes: number,
  tooLarge: (size: string) => Error,
  done: (bytes: Buffer) => void,
  fail: (error: Error) => void,
): void {
  const declared = Number(answer.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    answer.destroy();
    fail(tooLarge(`${declared} bytes`));
    return;
  }
  const source = decoded(answer);
  const chunks: Buffer[] = [];
  let total = 0;
  source.on('data', (chunk: Buffer) => {
    total += chunk.length;
    if (total > maxBytes) {
      answer.destroy();
      source.destroy();
      fail(tooLarge(`more than ${maxBytes} bytes`));
      return;
    }
    chunks.push(chunk);
  });
  source.on('end', () => done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)));
  source.on('error', (error) => fail(new TypeError('terminated', { cause: error })));
  answer.on('close', () => {
    if (!answer.complete) fail(new TypeError('terminated'));
  });
}

/**
 * Sends one request (no redirect followed) and resolves its answer. An answer that is not an
 * event stream is read whole: past `maxBytes` (declared or counted) the exchange is cut and fails
 * with `tooLarge(size)`. `signal` aborts it, failing with the signal's reason; a network failure
 * fails as `fetch` does (`TypeError: fetch failed`, the cause attached).
 */
export function exchange(
  url: URL,
  init: RequestInit,
  signal: AbortSignal,
  maxBytes: number,
  tooLarge: (size: string, status: number) => Error,
): Promise<Exchanged> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(reasonOf(signal));
      return;
    }
    const headers = outgoing(init.headers);
    const body = init.body as string | Uint8Array | null | undefined;
    if (body !== undefined && body !== null) {
      headers['content-length'] = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    }
    const req = send(url, init.method ?? 'GET', headers);
    let settled = false;
    let res: IncomingMessage | undefined;
    const onAbort = (): void => {
      const reason = reasonOf(signal);
      req.destroy();
      res?.destroy(reason);
      fail(reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const done = (result: Exchanged, keepListening: boolean): void => {
      if (settled) return;
      settled = true;
      if (!keepListening) signal.removeEventListener('abort', onAbort);
      resolve(result);
    };
    function fail(error: Error): void {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      reject(error);
    }
    req.on('error', (error) =>
      fail(signal.aborted ? reasonOf(signal) : new TypeError('fetch failed', { cause: error })),
    );
    req.on('response', (answer: IncomingMessage) => {
      res = answer;
      const status = answer.statusCode ?? 0;
      const meta = {
        status,
        statusText: answer.statusMessage ?? '',
        headers: incoming(answer.rawHeaders),
      };
      if (NO_BODY.has(status) || init.method === 'HEAD') {
        answer.resume();
        done({ response: new Response(null, meta), whole: true }, false);
        return;
      }
      const contentType = answer.headers['content-type'] ?? '';
      if (contentType.includes('text/event-stream')) {
        // A stream: its body stays a stream; the caller's signal still cuts it.
        answer.once('close', () => signal.removeEventListener('abort', onAbort));
        const stream = Readable.toWeb(decoded(answer)) as ReadableStream<Uint8Array>;
        done({ response: new Response(stream, meta), whole: false }, true);
        return;
      }
      readWhole(
        answer,
        maxBytes,
        (size) => tooLarge(size, status),
        (bytes) => {
          const view = new Uint8Array(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.length);
          done({ response: wholeResponse(view, meta), whole: true }, false);
        },
        (error) => fail(signal.aborted ? reasonOf(signal) : error),
      );
    });
    req.end(body ?? undefined);
  });
}

/** An answer read whole by {@link exchangeWhole}. */
export interface WholeAnswer {
  status: number;
  statusText: string;
  /** As Node parsed them: names in lower case. */
  headers: IncomingHttpHeaders;
  /** The body, decoded; undefined when the status has none or its body was not wanted. */
  body: Buffer | undefined;
}

/** What {@link exchangeWhole} sends, and its limits. */
export interface WholeExchange {
  method?: string;
  /** Names in lower case. */
  headers: OutgoingHttpHeaders;
  /** The request's body (none by default). */
  body?: string | Uint8Array;
  /**
   * Connects only to these addresses, checked beforehand (a push receiver's): the URL's host name
   * is not resolved again, so it cannot lead elsewhere between the check and the connection.
   */
  addresses?: readonly string[];
  maxBytes: number;
  tooLarge: (size: string, status: number) => Error;
  /**
   * Whether the body of an answer with this status is read (default: every body). One that is
   * not comes back without its body, the connection closed (as a `fetch` body canceled unread).
   */
  wanted?: (status: number) => boolean;
  /** Aborts the exchange, which fails with the signal's reason. */
  signal?: AbortSignal;
  /** Milliseconds the exchange may take, its answer read included. */
  timeoutMs?: number;
  /** The error the exchange fails with past `timeoutMs`. */
  timedOut?: () => Error;
}

/**
 * {@link exchange} for a caller that wants no `Response`: one request without a body (no redirect
 * followed) whose answer is read whole, whatever its type, and handed back as Node parsed it. Its
 * deadline is a timer of its own, so a caller needs no `AbortSignal` for one: a card fetch pays
 * neither for a `Response` and its `Headers` nor for a controller and its listeners.
 */
export function exchangeWhole(url: URL, options: WholeExchange): Promise<WholeAnswer> {
  return new Promise((resolve, reject) => {
    const { signal, maxBytes, tooLarge, wanted } = options;
    if (signal?.aborted) {
      reject(reasonOf(signal));
      return;
    }
    const method = options.method ?? 'GET';
    const req = send(url, method, options.headers, options.addresses);
    let settled = false;
    let res: IncomingMessage | undefined;
    const stop = (error: Error): void => {
      req.destroy();
      res?.destroy();
      fail(error);
    };
    const onAbort = (): void => stop(reasonOf(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => stop(options.timedOut?.() ?? new DOMException('timed out', 'TimeoutError')),
            options.timeoutMs,
          );
    timer?.unref();
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    function fail(error: Error): void {
      if (settle()) reject(error);
    }
    const done = (answer: WholeAnswer): void => {
      if (settle()) resolve(answer);
    };
    // After an abort or the deadline, the destroyed request's own error is not the reason.
    req.on('error', (error) => fail(new TypeError('fetch failed', { cause: error })));
    req.on('response', (answer: IncomingMessage) => {
      res = answer;
      const status = answer.statusCode ?? 0;
      const statusText = answer.statusMessage ?? '';
      if (NO_BODY.has(status) || method === 'HEAD') {
        answer.resume();
        done({ status, statusText, headers: answer.headers, body: undefined });
        return;
      }
      if (wanted !== undefined && !wanted(status)) {
        answer.destroy();
        done({ status, statusText, headers: answer.headers, body: undefined });
        return;
      }
      readWhole(
        answer,
        maxBytes,
        (size) => tooLarge(size, status),
        (body) => done({ status, statusText, headers: answer.headers, body }),
        fail,
      );
    });
    req.end(options.body);
  });
}
