/**
 * The `fetch` every request to an agent goes through (the SDK transports are handed it): whatever
 * the agent answers, the gateway reads a bounded amount for a bounded time, and the request with
 * its headers (auth secrets) never leaves the agent's origin.
 */
import { FleetgateError } from '../protocol/index.js';
import { canExchange, exchange } from '../net/index.js';

/** Limits of the exchanges with one agent. */
export interface AgentFetchLimits {
  /**
   * Most bytes of one response read from an agent (default 16 MiB): the body is read through a
   * counter and cut at the first chunk past it, failing the call with
   * `FLEETGATE_AGENT_RESPONSE_TOO_LARGE`; a declared `Content-Length` past it fails before reading.
   * A stream counts every event it carries.
   */
  maxResponseBytes?: number;
  /**
   * Most milliseconds one HTTP exchange with an agent may take, from the request to the last byte
   * of the answer (default 10 minutes): past it the request is aborted and the call fails with
   * `FLEETGATE_CALL_TIMEOUT`. An agent that drips its answer a byte at a time is cut off here. A
   * stream cut this way is resumed by the task tracker like any dropped stream.
   */
  responseTimeoutMs?: number;
  /** Redirects followed, each only within the agent's origin (default 3). */
  maxRedirects?: number;
}

/** Default {@link AgentFetchLimits.maxResponseBytes}: 16 MiB. */
export const DEFAULT_AGENT_RESPONSE_BYTES = 16 * 1024 * 1024;
/** Default {@link AgentFetchLimits.responseTimeoutMs}: 10 minutes. */
export const DEFAULT_AGENT_RESPONSE_TIMEOUT_MS = 10 * 60 * 1000;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function urlOf(input: Parameters<typeof fetch>[0]): URL {
  return new URL(input instanceof Request ? input.url : input.toString());
}

/** The ways a body can be read whole; each is watched for {@link whenBodyRead}. */
const BODY_READERS = ['json', 'text', 'arrayBuffer', 'blob', 'formData', 'bytes'] as const;

/**
 * Calls `done` once the body of `response` has been read whole (or its read failed) through any of
 * its reading methods, which keep their behaviour. The reader reads the response fetch returned,
 * so no second response and body stream are built for it.
 */
function whenBodyRead(response: Response, done: () => void): void {
  for (const name of BODY_READERS) {
    const read = (response as unknown as Record<string, unknown>)[name];
    if (typeof read !== 'function') continue;
    Object.defineProperty(response, name, {
      configurable: true,
      writable: true,
      value: (): Promise<unknown> => {
        const reading = (read as () => Promise<unknown>).call(response);
        reading.then(done, done);
        return reading;
      },
    });
  }
}

function tooLargeError(
  agent: string,
  url: URL,
  maxBytes: number,
  size: string,
  status: number,
): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_AGENT_RESPONSE_TOO_LARGE',
    `Agent ${agent} answered ${url.pathname} with ${size}, more than the limit of ${maxBytes} bytes; the rest was not read.`,
    { details: { agent, url: url.toString(), limit: maxBytes, status } },
  );
}

/**
 * Wraps `base` for the requests to one agent (see the file comment). Without `base` (the product
 * path; tests inject one), requests go over `node:http`/`node:https` (`src/net/exchange.ts`) and
 * nothing else: what that path does not take is refused (`FLEETGATE_CALL_FAILED`).
 *
 * @param agent the agent's name, for error messages.
 */
export function createAgentFetch(
  base: typeof fetch | undefined,
  agent: string,
  limits: AgentFetchLimits = {},
): typeof fetch {
  const maxBytes = limits.maxResponseBytes ?? DEFAULT_AGENT_RESPONSE_BYTES;
  const timeoutMs = limits.responseTimeoutMs ?? DEFAULT_AGENT_RESPONSE_TIMEOUT_MS;
  const maxRedirects = limits.maxRedirects ?? 3;

  // The SDK asks for the same endpoint every time: its URL is parsed once.
  let lastInput: string | undefined;
  let lastUrl: URL | undefined;

  return async (input, init) => {
    let first: URL;
    if (typeof input === 'string' && input === lastInput) first = lastUrl!;
    else {
      first = urlOf(input);
      if (typeof input === 'string') {
        lastInput = input;
        lastUrl = first;
      }
    }
    const origin = first.origin;
    // One deadline for the whole exchange, body included; the caller's signal still aborts it.
    const deadline = new AbortController();
    const timer = setTimeout(() => {
      deadline.abort(
        new FleetgateError(
          'FLEETGATE_CALL_TIMEOUT',
          `Agent ${agent} did not finish answering ${first.pathname} within ${timeoutMs} ms; the request was cut off.`,
          { details: { agent, url: first.toString(), responseTimeoutMs: timeoutMs } },
        ),
      );
    }, timeoutMs);
    timer.unref?.();
    const signal =
      init?.signal === undefined || init.signal === null
        ? deadline.signal
        : AbortSignal.any([init.signal, deadline.signal]);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
    };
    try {
      let url = first;
      let request: RequestInit = { ...init, signal, redirect: 'manual' };
      for (let hop = 0; ; hop += 1) {
        let response: Response;
        if (base === undefined) {
          // Agents are called over `src/net` only: the agent's own URL is http(s) (the config
          // says so); a card or a redirect naming another scheme, or a body that is not text or
          // bytes, is refused rather than handed to another transport.
          if (!canExchange(url, request)) {
            throw new FleetgateError(
              'FLEETGATE_CALL_FAILED',
              `Agent ${agent}: the gateway calls agents over http:// or https:// with a text body; ${url.protocol}//${url.host}${url.pathname} is not one.`,
              { details: { agent, url: url.toString() } },
            );
          }
          const at = url;
          const got = await exchange(url, request, signal, maxBytes, (size, status) =>
            tooLargeError(agent, at, maxBytes, size, status),
          );
          response = got.response;
          if (got.whole && !REDIRECTS.has(response.status)) {
            finish();
            return response;
          }
        } else {
          try {
            // The first hop goes to what the caller asked (the string it gave, parsed only here).
            response = await base(hop === 0 ? input : url, request);
          } catch (error) {
            throw deadline.signal.aborted ? deadline.signal.reason : error;
          }
        }
        if (!REDIRECTS.has(response.status)) {
          return limitBody(response, agent, url, maxBytes, deadline.signal, finish);
        }
        await response.body?.cancel().catch(() => undefined);
        const location = response.headers.get('location');
        if (location === null) return response;
        const next = new URL(location, url);
        if (next.origin !== origin) {
          throw new FleetgateError(
            'FLEETGATE_CALL_REDIRECT_REFUSED',
            `Agent ${agent} redirected ${url.pathname} to another origin (${next.origin}); the request was not sent there.`,
            { details: { agent, url: url.toString(), origin, redirectOrigin: next.origin } },
          );
        }
        if (hop >= maxRedirects) {
          throw new FleetgateError(
            'FLEETGATE_CALL_REDIRECT_REFUSED',
            `Agent ${agent} redirected more than ${maxRedirects} times from ${first.pathname}.`,
            { details: { agent, url: first.toString(), maxRedirects } },
          );
        }
        // Fetch's rules: 307/308 repeat the request as it was; the others turn a POST into a GET.
        if (response.status !== 307 && response.status !== 308 && request.method !== 'GET') {
          const headers = new Headers(request.headers);
          headers.delete('content-type');
          headers.delete('content-length');
          request = { ...request, method: 'GET', body: null, headers };
        }
        url = next;
      }
    } catch (error) {
      finish();
      throw error;
    }
  };
}

/**
 * The response with its body read through the byte counter and the deadline; `finish` is called
 * once the body ended, failed or was canceled.
 */
function limitBody(
  response: Response,
  agent: string,
  url: URL,
  maxBytes: number,
  deadline: AbortSignal,
  finish: () => void,
): Response {
  const tooLarge = (size: string): FleetgateError =>
    tooLargeError(agent, url, maxBytes, size, response.status);
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  const source = response.body;
  if (Number.isFinite(declared) && declared > maxBytes) {
    finish();
    void source?.cancel().catch(() => undefined);
    throw tooLarge(`${declared} bytes`);
  }
  if (source === null) {
    finish();
    return response;
  }
  if (Number.isFinite(declared)) {
    // A declared length within the limit (fetch holds the body to it): the response goes to the
    // caller as it is. Its body is read under the deadline still (the fetch's signal aborts the
    // read, failing it with FLEETGATE_CALL_TIMEOUT), and the deadline ends once it was read.
    whenBodyRead(response, finish);
    return response;
  }
  const reader = source.getReader();
  let total = 0;
  const onDeadline = (): void => void reader.cancel(deadline.reason).catch(() => undefined);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (deadline.aborted) throw deadline.reason;
        const { done, value } = await reader.read();
        if (done) {
          deadline.removeEventListener('abort', onDeadline);
          finish();
          controller.close();
          return;
        }
        total += value.byteLength;
        if (total > maxBytes) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge(`more than ${maxBytes} bytes`);
        }
        controller.enqueue(value);
      } catch (error) {
        deadline.removeEventListener('abort', onDeadline);
        finish();
        controller.error(deadline.aborted ? deadline.reason : error);
      }
    },
    async cancel(reason) {
      deadline.removeEventListener('abort', onDeadline);
      finish();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
  deadline.addEventListener('abort', onDeadline, { once: true });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
