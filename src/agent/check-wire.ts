/**
 * The wire side of `checkAgent`: the agent's card, and skill calls made the way a Fleetgate
 * gateway makes them (JSON-RPC or HTTP+JSON, A2A v1.0 or v0.3), kept as the raw JSON the agent
 * sent so the check can see what an SDK client would smooth over.
 */
import {
  AGENT_CARD_PATHS,
  FleetgateError,
  LEGACY_EXTENSIONS_HEADER,
  parseCardJson,
} from '../protocol/index.js';

/** Where and how the agent is called. */
export interface AgentEndpoint {
  binding: 'JSONRPC' | 'HTTP+JSON';
  version: '1.0' | '0.3';
  url: string;
}

/** What one HTTP exchange returned. */
export interface WireExchange {
  /** The HTTP status; 0 when no answer came (refused, or the timeout before any header). */
  status: number;
  /** The extensions the agent echoed (`A2A-Extensions`, `X-A2A-Extensions` on v0.3), or null. */
  echoed: string[] | null;
  /** The JSON-RPC `result` or the HTTP+JSON body; for a stream, every event in order. */
  results: unknown[];
  /** Why the exchange failed, when it did. */
  error?: string;
  /** The timeout ended a stream after whole events: `results` holds them, `error` is unset. */
  timedOut?: true;
}

/** How to reach the agent. */
export interface WireOptions {
  fetch: typeof fetch;
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === 'TimeoutError';
}

/** Why a request failed; a timeout is named with its value, which the platform's message omits. */
function reason(error: unknown, timeoutMs: number): string {
  if (isTimeout(error)) return `no answer within the request timeout of ${timeoutMs} ms`;
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

/**
 * Fetches and parses the agent's card: `url` itself when it names a `.json` document, else the
 * well-known card paths under it, current first.
 *
 * @throws FleetgateError `FLEETGATE_CARD_FETCH_FAILED`, `FLEETGATE_CARD_TOO_LARGE` or
 * `FLEETGATE_CARD_INVALID`.
 */
export async function fetchCard(
  url: string,
  options: WireOptions,
): Promise<{ card: unknown; url: string }> {
  const base = url.replace(/\/+$/, '');
  const candidates = /\.json$/i.test(new URL(base).pathname)
    ? [base]
    : AGENT_CARD_PATHS.map((path) => `${base}${path}`);
  const problems: string[] = [];
  for (const candidate of candidates) {
    let response: Response;
    try {
      response = await options.fetch(candidate, {
        headers: { 'A2A-Version': '1.0', ...options.headers },
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (error) {
      problems.push(`${candidate}: ${reason(error, options.timeoutMs)}`);
      continue;
    }
    if (!response.ok) {
      problems.push(`${candidate}: HTTP ${response.status}`);
      continue;
    }
    return { card: parseCardJson(await response.text(), candidate), url: candidate };
  }
  throw new FleetgateError('FLEETGATE_CARD_FETCH_FAILED', problems.join('; '), {
    details: { url, tried: candidates },
  });
}

function binding(value: unknown): AgentEndpoint['binding'] | undefined {
  if (typeof value !== 'string') return undefined;
  const upper = value.toUpperCase();
  if (upper === 'JSONRPC') return 'JSONRPC';
  if (upper === 'HTTP+JSON' || upper === 'REST') return 'HTTP+JSON';
  return undefined;
}

/** The interface URL on the agent's own origin (a card cannot send the check elsewhere). */
function pin(url: unknown, base: string): string {
  const origin = new URL(base);
  let pinned: URL;
  try {
    pinned = new URL(typeof url === 'string' ? url : '', origin);
  } catch {
    pinned = new URL(origin);
  }
  pinned.protocol = origin.protocol;
  pinned.host = origin.host;
  return pinned.toString().replace(/\/$/, '');
}

/**
 * The endpoint a gateway would call: the card's first JSON-RPC or HTTP+JSON interface (v1.0
 * `supportedInterfaces`, or v0.3 `url` + `preferredTransport` + `additionalInterfaces`).
 */
export function pickEndpoint(card: unknown, base: string): AgentEndpoint | { problem: string } {
  if (!isRecord(card)) return { problem: 'the card is not an object' };
  if (Array.isArray(card.supportedInterfaces)) {
    for (const iface of card.supportedInterfaces as unknown[]) {
      if (!isRecord(iface)) continue;
      const b = binding(iface.protocolBinding);
      if (b === undefined) continue;
      const version =
        typeof iface.protocolVersion === 'string' && iface.protocolVersion.startsWith('0.')
          ? '0.3'
          : '1.0';
      return { binding: b, version, url: pin(iface.url, base) };
    }
    return { problem: 'supportedInterfaces offers no JSONRPC or HTTP+JSON interface' };
  }
  if (typeof card.url === 'string') {
    const preferred = binding(card.preferredTransport ?? 'JSONRPC');
    if (preferred !== undefined)
      return { binding: preferred, version: '0.3', url: pin(card.url, base) };
    const extra = Array.isArray(card.additionalInterfaces) ? card.additionalInterfaces : [];
    for (const iface of extra as unknown[]) {
      if (!isRecord(iface)) continue;
      const b = binding(iface.transport);
      if (b !== undefined) return { binding: b, version: '0.3', url: pin(iface.url, base) };
    }
  }
  return { problem: 'the card names no JSONRPC or HTTP+JSON interface' };
}

/** The parameters of a send: the user message and the stamps, in the wire shape of the version. */
function sendParams(
  endpoint: AgentEndpoint,
  text: string,
  stamps: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const message =
    endpoint.version === '1.0'
      ? { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] }
      : {
          kind: 'message',
          messageId: crypto.randomUUID(),
          role: 'user',
          parts: [{ kind: 'text', text }],
        };
  return { message, metadata: { ...stamps } };
}

const METHODS = {
  '1.0': { send: 'SendMessage', stream: 'SendStreamingMessage', get: 'GetTask' },
  '0.3': { send: 'message/send', stream: 'message/stream', get: 'tasks/get' },
} as const;

function restPath(endpoint: AgentEndpoint, path: string): string {
  return `${endpoint.url}${endpoint.version === '0.3' ? '/v1' : ''}${path}`;
}

function echoedOf(endpoint: AgentEndpoint, headers: Headers): string[] | null {
  const value =
    endpoint.version === '0.3'
      ? (headers.get(LEGACY_EXTENSIONS_HEADER) ?? headers.get('A2A-Extensions'))
      : headers.get('A2A-Extensions');
  if (value === null) return null;
  return [
    ...new Set(
      value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
}

/** The `data:` payloads of a server-sent event stream, parsed as JSON. */
function sseData(text: string): unknown[] {
  const out: unknown[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data !== '') out.push(JSON.parse(data) as unknown);
  }
  return out;
}

/** The events of a stream cut short that came whole: the text up to its last blank line. */
function wholeEvents(text: string): string {
  let end = 0;
  for (const m of text.matchAll(/\r?\n\r?\n/g)) end = m.index + m[0].length;
  return text.slice(0, end);
}

/** Reads a stream chunk by chunk: what came before a failure is kept (`text()` drops it). */
async function readStream(response: Response): Promise<{ text: string; error?: unknown }> {
  if (response.body === null) return { text: '' };
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: text + decoder.decode() };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

/** Why an answer whose headers came did not come whole. */
function brokeOff(error: unknown, timeoutMs: number): string {
  return isTimeout(error)
    ? `the answer did not end within the request timeout of ${timeoutMs} ms`
    : `the response broke off: ${reason(error, timeoutMs)}`;
}

/** Unwraps a JSON-RPC envelope: its result, or the error as text. */
function rpcResult(envelope: unknown): { result?: unknown; error?: string } {
  if (!isRecord(envelope)) return { error: 'the response is not a JSON-RPC object' };
  if (envelope.error !== undefined) {
    const e = envelope.error;
    return {
      error: isRecord(e)
        ? `JSON-RPC error ${String(e.code)}: ${String(e.message)}`
        : JSON.stringify(e),
    };
  }
  if (!('result' in envelope)) return { error: 'the JSON-RPC response has no result' };
  return { result: envelope.result };
}

/** One HTTP request of the check; `body` is sent as JSON. */
interface WireRequest {
  url: string;
  method: 'GET' | 'POST';
  body?: unknown;
  streaming: boolean;
}

/** A JSON-RPC 2.0 call of `method`, posted to the endpoint's URL. */
function rpcRequest(
  endpoint: AgentEndpoint,
  method: string,
  params: unknown,
  streaming: boolean,
): WireRequest {
  return {
    url: endpoint.url,
    method: 'POST',
    body: { jsonrpc: '2.0', id: crypto.randomUUID(), method, params },
    streaming,
  };
}

async function exchange(
  endpoint: AgentEndpoint,
  request: WireRequest,
  headers: Readonly<Record<string, string>>,
  options: WireOptions,
): Promise<WireExchange> {
  let response: Response;
  try {
    response = await options.fetch(request.url, {
      method: request.method,
      headers: {
        ...(request.body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...(request.streaming ? { Accept: 'text/event-stream' } : {}),
        ...(endpoint.version === '1.0' ? { 'A2A-Version': '1.0' } : {}),
        ...options.headers,
        ...headers,
      },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (error) {
    return { status: 0, echoed: null, results: [], error: reason(error, options.timeoutMs) };
  }
  const out: WireExchange = {
    status: response.status,
    echoed: echoedOf(endpoint, response.headers),
    results: [],
  };
  const sse = (response.headers.get('content-type') ?? '').includes('text/event-stream');
  let text: string;
  if (sse && response.ok) {
    const read = await readStream(response);
    text = read.text;
    if ('error' in read) {
      // A stream the timeout ended keeps the events that came whole: they name the task that did
      // not end in time, which is what the check reports (not a broken answer).
      text = wholeEvents(read.text);
      if (!isTimeout(read.error) || text === '') {
        out.error = brokeOff(read.error, options.timeoutMs);
        return out;
      }
      out.timedOut = true;
    }
  } else {
    try {
      text = await response.text();
    } catch (error) {
      out.error = brokeOff(error, options.timeoutMs);
      return out;
    }
  }
  if (!response.ok) {
    out.error = `HTTP ${response.status}: ${text.slice(0, 200)}`;
    return out;
  }
  try {
    const bodies = sse ? sseData(text) : [JSON.parse(text) as unknown];
    for (const body of bodies) {
      if (endpoint.binding === 'HTTP+JSON') {
        out.results.push(body);
        continue;
      }
      const { result, error } = rpcResult(body);
      if (error !== undefined) {
        out.error = error;
        break;
      }
      out.results.push(result);
    }
  } catch (error) {
    out.error = `the response is not valid JSON: ${reason(error, options.timeoutMs)}`;
  }
  return out;
}

/** Sends the skill call: blocking (`SendMessage`) or streaming (`SendStreamingMessage`). */
export function sendMessage(
  endpoint: AgentEndpoint,
  call: {
    text: string;
    stamps: Readonly<Record<string, string>>;
    extensions: readonly string[];
    streaming: boolean;
  },
  options: WireOptions,
): Promise<WireExchange> {
  const params = sendParams(endpoint, call.text, call.stamps);
  const header = endpoint.version === '0.3' ? LEGACY_EXTENSIONS_HEADER : 'A2A-Extensions';
  const headers = call.extensions.length === 0 ? {} : { [header]: call.extensions.join(',') };
  const request: WireRequest =
    endpoint.binding === 'JSONRPC'
      ? rpcRequest(
          endpoint,
          METHODS[endpoint.version][call.streaming ? 'stream' : 'send'],
          params,
          call.streaming,
        )
      : {
          url: restPath(endpoint, call.streaming ? '/message:stream' : '/message:send'),
          method: 'POST',
          body: params,
          streaming: call.streaming,
        };
  return exchange(endpoint, request, headers, options);
}

/** Reads a task (`GetTask`), to follow one that was not finished in the reply. */
export function getTask(
  endpoint: AgentEndpoint,
  taskId: string,
  options: WireOptions,
): Promise<WireExchange> {
  const request: WireRequest =
    endpoint.binding === 'JSONRPC'
      ? rpcRequest(endpoint, METHODS[endpoint.version].get, { id: taskId }, false)
      : {
          url: restPath(endpoint, `/tasks/${encodeURIComponent(taskId)}`),
          method: 'GET',
          streaming: false,
        };
  return exchange(endpoint, request, {}, options);
}
