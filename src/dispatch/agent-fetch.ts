/**
 * The `fetch` every request to an agent goes through (the SDK transports are handed it): whatever
 * the agent answers, the gateway reads a bounded amount for a bounded time, and the request with
 * its headers (auth secrets) never leaves the agent's origin.
 */
import { FleetgateError } from '../protocol/index.js';

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

/**
 * Wraps `base` for the requests to one agent (see the file comment).
 *
 * @param agent the agent's name, for error messages.
 */
export function createAgentFetch(
  base: typeof fetch,
  agent: string,
  limits: AgentFetchLimits = {},
): typeof fetch {
  const maxBytes = limits.maxResponseBytes ?? DEFAULT_AGENT_RESPONSE_BYTES;
  const timeoutMs = limits.responseTimeoutMs ?? DEFAULT_AGENT_RESPONSE_TIMEOUT_MS;
  const maxRedirects = limits.maxRedirects ?? 3;

  return async (input, init) => {
    const first = urlOf(input);
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
        try {
          response = await base(url, request);
        } catch (error) {
          throw deadline.signal.aborted ? deadline.signal.reason : error;
        }
        if (!REDIRECTS.has(response.status)) {
          return await limitBody(response, agent, url, maxBytes, deadline.signal, finish);
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
async function limitBody(
  response: Response,
  agent: string,
  url: URL,
  maxBytes: number,
  deadline: AbortSignal,
  finish: () => void,
): Promise<Response> {
  const tooLarge = (size: string): FleetgateError =>
    new FleetgateError(
      'FLEETGATE_AGENT_RESPONSE_TOO_LARGE',
      `Agent ${agent} answered ${url.pathname} with ${size}, more than the limit of ${maxBytes} bytes; the rest was not read.`,
      { details: { agent, url: url.toString(), limit: maxBytes, status: response.status } },
    );
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
    // A declared length within the limit (fetch enforces it): read it in one go under the
    // deadline — cheaper than counting chunks through a second stream.
    let bytes: ArrayBuffer;
    try {
      bytes = await response.arrayBuffer();
    } catch (error) {
      throw deadline.aborted ? deadline.reason : error;
    } finally {
      finish();
    }
    return new Response(bytes, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
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
