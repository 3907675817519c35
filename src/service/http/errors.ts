/**
 * Errors on the wire: every failure the HTTP API answers is `{ error: { code, message, details? } }`
 * with one of the project's stable codes. The mapping from code to HTTP status lives here, and
 * only here (the rest of the library knows nothing of HTTP).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../../protocol/index.js';
import { FleetgateError, isFleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';

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

/** Fastify's own error codes, as the project's. */
function fromFastify(error: FastifyError): FleetgateError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new FleetgateError('FLEETGATE_HTTP_BODY_TOO_LARGE', error.message);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new FleetgateError('FLEETGATE_HTTP_JSON_INVALID', error.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new FleetgateError('FLEETGATE_HTTP_MEDIA_TYPE_UNSUPPORTED', error.message);
    default:
      break;
  }
  if (error instanceof SyntaxError || error.statusCode === 400) {
    return new FleetgateError('FLEETGATE_HTTP_JSON_INVALID', error.message);
  }
  return undefined;
}

/**
 * The app's error handler: a coded error keeps its code (and details), fastify's body errors get
 * the project's codes, anything else is a 500 whose message is logged, not sent.
 */
export function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const coded = isFleetgateError(error) ? error : fromFastify(error as FastifyError);
  if (coded === undefined) {
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
  const status = statusOf(coded.code);
  if (status >= 500) request.log.error({ err: coded }, 'request failed');
  if (status === 503) void reply.header('retry-after', '5');
  void reply.code(status).send(envelope(coded.code, coded.message, coded.details));
}

/** The app's not-found handler. */
export function handleNotFound(request: FastifyRequest, reply: FastifyReply): void {
  void reply
    .code(404)
    .send(
      envelope(
        'FLEETGATE_HTTP_ROUTE_NOT_FOUND',
        `No route ${request.method} ${request.url.split('?', 1)[0]}; see /api/openapi.json.`,
      ),
    );
}
