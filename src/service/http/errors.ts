/**
 * Errors on the wire: every failure the HTTP API answers is `{ error: { code, message, details? } }`
 * with one of the project's stable codes. The mapping from code to HTTP status lives here, and
 * only here (the rest of the library knows nothing of HTTP).
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../../protocol/index.js';
import { FleetgateError, isFleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import { editDistance } from '../did-you-mean.js';

/** The body of every error answer. */
export interface ErrorEnvelope {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

/** HTTP status of each code the API can answer with; anything else is a 500. */
const STATUS: Partial<Record<ErrorCode, number>> = {
  FLEETGATE_HTTP_ROUTE_NOT_FOUND: 404,
  FLEETGATE_HTTP_REQUEST_INVALID: 400,
  FLEETGATE_HTTP_JSON_INVALID: 400,
  FLEETGATE_HTTP_BODY_TOO_LARGE: 413,
  FLEETGATE_HTTP_MEDIA_TYPE_UNSUPPORTED: 415,
  FLEETGATE_AUTH_REQUIRED: 401,
  FLEETGATE_AUTH_INVALID: 401,
  FLEETGATE_AUTH_FORBIDDEN: 403,
  FLEETGATE_AUTH_RATE_LIMITED: 429,
  FLEETGATE_HTTP_HOST_NOT_ALLOWED: 421,
  FLEETGATE_HTTP_ORIGIN_NOT_ALLOWED: 403,
  FLEETGATE_HTTP_REQUEST_TIMEOUT: 408,
  FLEETGATE_PUSH_URL_REFUSED: 400,
  FLEETGATE_DISPATCH_NOT_FOUND: 404,
  FLEETGATE_DISPATCH_NOT_CANCELABLE: 409,
  FLEETGATE_SKILL_UNKNOWN: 404,
  FLEETGATE_WORLD_DOMAIN_UNKNOWN: 404,
  FLEETGATE_AGENT_UNKNOWN: 404,
  FLEETGATE_AGENT_UNAVAILABLE: 503,
  FLEETGATE_APPROVAL_NOT_FOUND: 404,
  FLEETGATE_APPROVAL_ALREADY_DECIDED: 409,
  FLEETGATE_APPROVAL_EXPIRED: 409,
  FLEETGATE_APPROVAL_VOID: 409,
  FLEETGATE_APPROVAL_SELF: 403,
  FLEETGATE_NOTHING_TO_ACKNOWLEDGE: 409,
  FLEETGATE_TOPIC_INVALID: 400,
  FLEETGATE_WORLD_QUERY_INVALID: 400,
  FLEETGATE_LIMIT_EXCEEDED: 413,
  FLEETGATE_USAGE: 400,
  FLEETGATE_CALL_TIMEOUT: 504,
  FLEETGATE_CALL_FAILED: 502,
  FLEETGATE_GATEWAY_CLOSED: 503,
  FLEETGATE_SERVICE_NOT_READY: 503,
  FLEETGATE_EVENTS_TOO_MANY_CLIENTS: 503,
  // The database is away or slow: the request may succeed when retried.
  FLEETGATE_STORE_UNAVAILABLE: 503,
  FLEETGATE_STORE_TIMEOUT: 503,
  FLEETGATE_PUSH_UNKNOWN_TASK: 404,
  FLEETGATE_PUSH_UNAUTHORIZED: 401,
  FLEETGATE_PUSH_BODY_INVALID: 400,
};

/** The HTTP status the API answers a code with. */
export function statusOf(code: string): number {
  return STATUS[code as ErrorCode] ?? 500;
}

/** Builds an error envelope. */
export function envelope(
  code: string,
  message: string,
  details?: Record<string, unknown>,
): ErrorEnvelope {
  return { error: { code, message, ...defined({ details }) } };
}

/**
 * The longest path parameter the router matches (fastify's `maxParamLength`, 100 by default): above
 * the longest id a route schema takes (500, a push callback's task id), so an id too long gets the
 * schema's 400 naming the parameter, and only a path far beyond any id is refused by the router.
 */
export const MAX_PARAM_LENGTH = 512;

/** A coded error and the status it is answered with. */
interface Refusal {
  error: FleetgateError;
  status: number;
}

/** The longest framework message passed on: some carry the request's path or headers. */
const MESSAGE_CHARS = 200;

/** `text` cut to {@link MESSAGE_CHARS} characters, `…` marking the cut. */
export function clip(text: string): string {
  return text.length <= MESSAGE_CHARS ? text : `${text.slice(0, MESSAGE_CHARS)}…`;
}

/**
 * Fastify's own error codes, as the project's. What fastify refuses of a request (a 4xx
 * `FST_ERR_*`) keeps fastify's status under `FLEETGATE_HTTP_REQUEST_INVALID` when no code fits
 * better; a 5xx `FST_ERR_*` is the gateway's fault and stays a 500.
 */
function fromFastify(error: FastifyError): Refusal | undefined {
  const coded = (code: ErrorCode, message: string, status = statusOf(code)): Refusal => ({
    error: new FleetgateError(code, message, { cause: error }),
    status,
  });
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return coded('FLEETGATE_HTTP_BODY_TOO_LARGE', error.message);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // The parser says no more; a body that parses but holds `__proto__` (or
      // `constructor.prototype`) is refused here too, and a caller should know to look for it.
      return coded(
        'FLEETGATE_HTTP_JSON_INVALID',
        'The body is not valid JSON, or holds a "__proto__" or "constructor": { "prototype" } key, which is refused.',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return coded('FLEETGATE_HTTP_JSON_INVALID', error.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return coded('FLEETGATE_HTTP_MEDIA_TYPE_UNSUPPORTED', error.message);
    // Both messages carry the whole path: it is not echoed.
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return coded(
        'FLEETGATE_HTTP_REQUEST_INVALID',
        `A path segment is longer than the ${MAX_PARAM_LENGTH} characters the gateway routes.`,
        414,
      );
    case 'FST_ERR_BAD_URL':
      return coded(
        'FLEETGATE_HTTP_REQUEST_INVALID',
        'The path holds a malformed percent-encoding.',
        400,
      );
    case 'FST_ERR_NOT_FOUND':
      return coded('FLEETGATE_HTTP_ROUTE_NOT_FOUND', 'No route matches this method and path.');
    default:
      break;
  }
  const status = error.statusCode ?? 500;
  if (error.code?.startsWith('FST_ERR_') && status >= 400 && status < 500) {
    return coded(
      'FLEETGATE_HTTP_REQUEST_INVALID',
      `${clip(error.message)} (${error.code})`,
      status,
    );
  }
  if (error instanceof SyntaxError || error.statusCode === 400) {
    return coded('FLEETGATE_HTTP_JSON_INVALID', error.message);
  }
  return undefined;
}

/**
 * The app's error handler: a coded error keeps its code (and details), fastify's own refusals get
 * the project's codes, anything else is a 500 whose message is logged, not sent.
 */
export function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const refusal = isFleetgateError(error)
    ? { error, status: statusOf(error.code) }
    : fromFastify(error as FastifyError);
  if (refusal === undefined) {
    request.log.error({ err: error }, 'request failed');
    void reply
      .code(500)
      .send(
        envelope(
          'FLEETGATE_HTTP_INTERNAL',
          `The gateway failed to answer (request ${request.id}); see its log.`,
        ),
      );
    return;
  }
  const { error: coded, status } = refusal;
  if (status >= 500) request.log.error({ err: coded }, 'request failed');
  if (status === 503) void reply.header('retry-after', '5');
  void reply.code(status).send(envelope(coded.code, coded.message, coded.details));
}

/**
 * Fastify's `frameworkErrors` handler: a request the router refused (a path segment longer than
 * {@link MAX_PARAM_LENGTH}, a malformed percent-encoding) before any hook ran, so the request id
 * is set here.
 */
export function handleFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  void reply.header('x-request-id', request.id);
  handleError(error, request, reply);
}

/**
 * The app's not-found handler (see {@link notFoundHandler}) with no routes to suggest.
 */
export const handleNotFound = notFoundHandler([]);

/**
 * The app's not-found handler: says which route was missed and, when one of `routes` is a typo
 * away (`GET /api/dispatch` for `GET /api/dispatches`) or takes the path with another method,
 * names it. The path is echoed cut to {@link MESSAGE_CHARS} characters: Node takes a request line
 * of up to 16 KB, and nobody needs it all back to see which route was missed.
 */
export function notFoundHandler(
  routes: readonly { method: string; url: string }[],
): (request: FastifyRequest, reply: FastifyReply) => void {
  return (request, reply) => {
    const path = clip(request.url.split('?', 1)[0]!);
    const hint = routeHint(request.method, path, routes);
    void reply
      .code(404)
      .send(
        envelope(
          'FLEETGATE_HTTP_ROUTE_NOT_FOUND',
          `No route ${request.method} ${path}${hint === undefined ? '' : ` (did you mean ${hint}?)`}; see /api/openapi.json.`,
        ),
      );
  };
}

/**
 * The routes a missed `method path` was probably meant for: the closest route of the same method
 * whose fixed segments are a typo away (its parameters filled in from the path), and the same path
 * with another method.
 */
function routeHint(
  method: string,
  path: string,
  routes: readonly { method: string; url: string }[],
): string | undefined {
  const segments = path.split('/').filter((s) => s !== '');
  /** The route's path for these segments and how far its fixed segments are from them. */
  const fit = (url: string): { path: string; distance: number; fixed: number } | undefined => {
    const template = url.split('/').filter((s) => s !== '');
    if (template.length !== segments.length) return undefined;
    let distance = 0;
    let fixed = 0;
    const filled = template.map((s, i) => {
      if (s.startsWith(':')) return segments[i]!;
      distance += editDistance(s, segments[i]!);
      fixed += s.length;
      return s;
    });
    return { path: `/${filled.join('/')}`, distance, fixed };
  };
  let best: { path: string; distance: number } | undefined;
  for (const route of routes) {
    if (route.method !== method) continue;
    const f = fit(route.url);
    if (f === undefined || f.distance === 0) continue;
    if (f.distance > Math.max(1, Math.floor(f.fixed / 4))) continue;
    if (best === undefined || f.distance < best.distance) best = f;
  }
  const others = routes
    .filter((r) => r.method !== method && fit(r.url)?.distance === 0)
    .map((r) => `${r.method} ${path}`);
  const hints = [...(best === undefined ? [] : [`${method} ${best.path}`]), ...others];
  return hints.length === 0 ? undefined : hints.join(', or ');
}

/** What Node's HTTP parser refused, or its timeouts cut, as the project's code and status. */
function clientRefusal(code: string): { status: number; code: ErrorCode; message: string } {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        code: 'FLEETGATE_HTTP_REQUEST_TIMEOUT',
        message:
          'The request did not arrive in time: its headers within listen.timeouts.headers, or the whole of it within listen.timeouts.request.',
      };
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        code: 'FLEETGATE_HTTP_REQUEST_INVALID',
        message: 'The request line and headers are larger than the gateway takes.',
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return {
        status: 413,
        code: 'FLEETGATE_HTTP_REQUEST_INVALID',
        message: 'The chunk extensions of the request body are larger than the gateway takes.',
      };
    default:
      return {
        status: 400,
        code: 'FLEETGATE_HTTP_REQUEST_INVALID',
        message: `The request is not valid HTTP/1.1 (${code}).`,
      };
  }
}

/**
 * Answers a client error of the HTTP server (its `clientError` event, fastify's
 * `clientErrorHandler`): a request whose headers did not arrive within `listen.timeouts.headers`
 * (or the whole of it within `listen.timeouts.request`) is 408 `FLEETGATE_HTTP_REQUEST_TIMEOUT`,
 * one Node cannot parse 400 (431 for headers too large) `FLEETGATE_HTTP_REQUEST_INVALID`; the
 * connection is closed once the answer is written. No request exists yet: the answer is written
 * to the socket. A socket already answered (no longer writable) is left as it is, so a second
 * listener does no harm.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) return;
  const code = error.code ?? '';
  // Node's own check: an answer whose head is already on the wire cannot be followed by another.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent: boolean } | null })
    ._httpMessage;
  const answerable = code === 'ERR_HTTP_REQUEST_TIMEOUT' || code.startsWith('HPE_');
  if (!answerable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  const refusal = clientRefusal(code);
  const body = JSON.stringify(envelope(refusal.code, refusal.message));
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\n` +
      'content-type: application/json\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'connection: close\r\n\r\n' +
      body,
    () => socket.destroy(),
  );
}
