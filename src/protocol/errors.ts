/**
 * One error class for the whole library, with a stable string `code` taken from one table.
 * `docs/errors.md` lists every code with its meaning and the usual fix.
 */

/** Every error code Fleetgate raises, with the sentence users see when no message is given. */
export const ERROR_CODES = {
  FLEETGATE_CARD_INVALID: 'The agent card is not a valid A2A agent card.',
  FLEETGATE_CARD_TOO_LARGE: 'The agent card exceeds the size limit.',
  FLEETGATE_CARD_FETCH_FAILED: 'The agent card could not be fetched.',
  FLEETGATE_LIMIT_EXCEEDED: 'A size, count or depth limit was exceeded.',
  FLEETGATE_DELTA_INVALID: 'A worldstate-delta entry is invalid.',
  FLEETGATE_PART_INVALID: 'A message or artifact part could not be decoded.',
  FLEETGATE_TASK_INVALID: 'A task or stream response could not be decoded.',
  FLEETGATE_COST_INVALID: 'A cost-v1 payload is invalid.',
  FLEETGATE_EXTENSION_ALREADY_REGISTERED: 'An extension with this URI is already registered.',
  FLEETGATE_STAMP_CONFLICT: 'Two extensions claimed the same request metadata key.',
  FLEETGATE_HOOK_FAILED: 'A required extension hook failed.',
  FLEETGATE_AGENT_UNKNOWN: 'No agent with this name is known.',
  FLEETGATE_AGENT_UNAVAILABLE: 'The agent is configured but its card has not loaded.',
  FLEETGATE_NOTHING_TO_ACKNOWLEDGE: 'There is no narrower declaration waiting for acknowledgement.',
  FLEETGATE_CALL_FAILED: 'The call to the agent failed.',
  FLEETGATE_CALL_TIMEOUT: 'The call to the agent timed out.',
  FLEETGATE_CALL_ABORTED: 'The call to the agent was aborted by the caller.',
  FLEETGATE_CALL_INTERRUPTED:
    'The gateway holding the call stopped before sending it; nothing reached the agent.',
  FLEETGATE_CALL_OUTCOME_UNKNOWN:
    'The gateway holding the call stopped after sending it, and the agent has no task for it: whether it ran is unknown.',
  FLEETGATE_CALL_REDIRECT_REFUSED:
    'The agent redirected the call to another origin (or too often); the request was not sent there.',
  FLEETGATE_AGENT_RESPONSE_TOO_LARGE:
    "The agent's response exceeds the size limit; it was not read further.",
  FLEETGATE_TASK_FAILED: 'The task ended in a failed, canceled or rejected state.',
  FLEETGATE_TASK_ID_INVALID: 'A task id is empty, too long or contains a NUL character.',
  FLEETGATE_HOOK_ERROR: 'An optional extension hook failed; the call went on.',
  FLEETGATE_TOPIC_INVALID: 'The bus topic or pattern is invalid.',
  FLEETGATE_BUS_CLOSED: 'The event bus is closed.',
  FLEETGATE_BUS_OVERFLOW: 'A subscription queue overflowed.',
  FLEETGATE_STORE_URL_INVALID: 'The store URL is not supported.',
  FLEETGATE_BUS_SUBSCRIPTION_INVALID: 'The subscription name or options are invalid.',
  FLEETGATE_BUS_HANDLER_FAILED: 'A bus subscription handler threw or rejected.',
  FLEETGATE_BUS_PUBLISH_FAILED: 'The event bus did not accept the event.',
  FLEETGATE_BUS_CONNECT_FAILED: 'The event bus could not connect or set up its stream.',
  FLEETGATE_BUS_EVENT_INVALID: 'An event received from the bus could not be decoded.',
  FLEETGATE_BUS_DEAD_LETTERED: 'An event was dead-lettered after repeated handler failures.',
  FLEETGATE_STORE_MIGRATION_FAILED: 'A store migration failed.',
  FLEETGATE_STORE_UNAVAILABLE: 'The database could not be reached or dropped the connection.',
  FLEETGATE_STORE_TIMEOUT: 'The database did not answer within the configured timeout.',
  FLEETGATE_STORE_CONNECT_FAILED: 'The store server could not be reached.',
  FLEETGATE_STORE_AUTH_FAILED: 'The store server refused the credentials.',
  FLEETGATE_STORE_DATABASE_MISSING: 'The database named by the store URL does not exist.',
  FLEETGATE_STORE_NOT_INITIALISED: 'The store has not been set up by a gateway.',
  FLEETGATE_STORE_OPEN_FAILED: 'The store file could not be created or opened.',
  FLEETGATE_BUS_STREAM_NOT_FOUND: 'The JetStream stream does not exist.',
  FLEETGATE_BUS_DEPLOYMENT_MISMATCH:
    'The JetStream stream belongs to another deployment (a gateway group on another store).',
  FLEETGATE_OUTBOX_RELAY_FAILED: 'The outbox relay could not publish or mark an event.',
  FLEETGATE_EVENT_TOO_LARGE: 'The event is larger than the bus (or the configured limit) accepts.',
  FLEETGATE_OUTBOX_EVENT_PARKED:
    'An outbox event that can never be published was set aside (parked); the events after it went on.',
  FLEETGATE_CONFIG_INVALID: 'The configuration is invalid.',
  FLEETGATE_TASK_TIMEOUT: 'The task did not finish within the tracking time and was canceled.',
  FLEETGATE_DISPATCH_DENIED: 'The policy gate did not let the call go out.',
  FLEETGATE_PUSH_UNKNOWN_TASK: 'No push notifications are expected for this task.',
  FLEETGATE_PUSH_UNAUTHORIZED: 'The push notification secret is missing or does not match.',
  FLEETGATE_PUSH_BODY_INVALID: 'The push notification body is not a v1.0 or v0.3 task event.',
  FLEETGATE_USAGE: 'The command was called with invalid arguments.',
  FLEETGATE_FILE_ACCESS_FAILED: 'A file could not be read or written.',
  FLEETGATE_INTERNAL: 'An unexpected error: a defect in Fleetgate.',
  FLEETGATE_WORLD_EVENT_INVALID: 'A world.state.delta event payload is malformed.',
  FLEETGATE_WORLD_SEED_INVALID: 'A configured world-state domain seed is invalid.',
  FLEETGATE_WORLD_QUERY_INVALID: 'A world-state history query is invalid.',
  FLEETGATE_WORLD_DOMAIN_UNKNOWN: 'No world-state domain with this name exists.',
  FLEETGATE_WORLD_DOMAIN_FULL:
    'A delta entry would grow a world-state domain past its size limit; it was rejected.',
  FLEETGATE_FLOOR_WRITE_FAILED: 'A learned operator floor could not be persisted.',
  FLEETGATE_GATEWAY_CLOSED: 'The gateway is shutting down and accepts no new calls.',
  FLEETGATE_APPROVAL_NOT_FOUND: 'No approval or standing approval with this id exists.',
  FLEETGATE_APPROVAL_ALREADY_DECIDED: 'The approval was already decided.',
  FLEETGATE_APPROVAL_EXPIRED: 'The approval expired before it was decided; expiry is a rejection.',
  FLEETGATE_APPROVAL_SELF: 'The requester of a call cannot approve it.',
  FLEETGATE_APPROVAL_REJECTED: 'An approver rejected or vetoed the call.',
  FLEETGATE_APPROVAL_REJECTED_RECENTLY:
    'The identical call was rejected recently; it is not asked again.',
  FLEETGATE_APPROVAL_VOID:
    'The call changed after it was approved (input, radius or policy); the approval no longer applies.',
  FLEETGATE_DECLARATION_INVALID:
    'A card declaration names a skill missing from card.skills or carries an invalid value.',
  FLEETGATE_EFFECTS_CLOSED:
    'The task already ended and its effects were sent; nothing more can be reported.',
  FLEETGATE_MCP_TOOLS_INVALID: 'The MCP tool list is not a tools/list result or a list of tools.',
  FLEETGATE_HTTP_ROUTE_NOT_FOUND: 'No route of the HTTP API matches this method and path.',
  FLEETGATE_HTTP_REQUEST_INVALID:
    "The request's path, query or body does not match the route's schema.",
  FLEETGATE_HTTP_JSON_INVALID: 'The request body is not valid JSON.',
  FLEETGATE_HTTP_BODY_TOO_LARGE: 'The request body is larger than the limit.',
  FLEETGATE_HTTP_MEDIA_TYPE_UNSUPPORTED: 'The request body has an unsupported content type.',
  FLEETGATE_HTTP_INTERNAL: 'The gateway failed to answer the request.',
  FLEETGATE_AUTH_REQUIRED: 'The request carries no bearer token.',
  FLEETGATE_AUTH_INVALID: 'The bearer token is not one of the configured tokens.',
  FLEETGATE_AUTH_FORBIDDEN: "The token's role does not allow this request.",
  FLEETGATE_AUTH_RATE_LIMITED: 'Too many failed authentications from this address; wait and retry.',
  FLEETGATE_HTTP_HOST_NOT_ALLOWED: 'The request names a host the gateway does not answer to.',
  FLEETGATE_HTTP_ORIGIN_NOT_ALLOWED: 'A state-changing request came from a page of another origin.',
  FLEETGATE_HTTP_REQUEST_TIMEOUT: 'The client took too long to send its request.',
  FLEETGATE_PUSH_URL_REFUSED: 'A push-notification URL is not one the gateway may call.',
  FLEETGATE_DISPATCH_NOT_FOUND: 'No dispatch with this id exists.',
  FLEETGATE_DISPATCH_CANCELED:
    'The call was canceled at the agent because someone asked to cancel it (who and why in the message).',
  FLEETGATE_DISPATCH_NOT_CANCELABLE:
    'The dispatch cannot be canceled now: it is being sent, or its task cannot be found at the agent yet.',
  FLEETGATE_SKILL_UNKNOWN: 'No agent offers this skill.',
  FLEETGATE_SERVICE_NOT_READY: 'The gateway is starting or stopping and cannot answer yet.',
  FLEETGATE_LISTEN_UNSAFE: 'The gateway would listen beyond loopback without any token configured.',
  FLEETGATE_LISTEN_FAILED: 'The gateway could not listen on the configured address.',
  FLEETGATE_DEMO_UNAVAILABLE: 'The demo fleet cannot be started from this installation.',
  FLEETGATE_EVENTS_CLIENT_TOO_SLOW: 'A live-event client fell too far behind and was disconnected.',
  FLEETGATE_EVENTS_TOO_MANY_CLIENTS: 'The gateway serves as many live-event clients as it may.',
  FLEETGATE_GATEWAY_UNREACHABLE: 'The gateway at the given URL could not be reached.',
} as const;

/** A stable, documented error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Options for {@link FleetgateError}. */
export interface FleetgateErrorOptions {
  /** The error this one wraps; always pass it when wrapping. */
  cause?: unknown;
  /** Structured detail (paths, limits, issues) for programs and the HTTP API. */
  details?: Record<string, unknown>;
}

/**
 * The base class of every error Fleetgate throws on purpose.
 *
 * @example
 * ```ts
 * try { registry.register(ext) } catch (e) {
 *   if (isFleetgateError(e, 'FLEETGATE_EXTENSION_ALREADY_REGISTERED')) { ... }
 * }
 * ```
 */
export class FleetgateError extends Error {
  override readonly name = 'FleetgateError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, options: FleetgateErrorOptions = {}) {
    super(
      message ?? ERROR_CODES[code],
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.code = code;
    this.details = options.details;
  }
}

/** True when `error` is a {@link FleetgateError}, optionally with the given code. */
export function isFleetgateError(error: unknown, code?: ErrorCode): error is FleetgateError {
  return error instanceof FleetgateError && (code === undefined || error.code === code);
}

/**
 * True when `error` (or an error in its `cause` chain) says the store is unreachable or did not
 * answer in time (`FLEETGATE_STORE_UNAVAILABLE`, `FLEETGATE_STORE_TIMEOUT`): a failure that goes
 * away when the database is back, so work that failed on it is retried rather than dropped.
 */
export function isStoreUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; depth += 1) {
    if (
      e instanceof FleetgateError &&
      (e.code === 'FLEETGATE_STORE_UNAVAILABLE' || e.code === 'FLEETGATE_STORE_TIMEOUT')
    ) {
      return true;
    }
    e = e.cause;
  }
  return false;
}

/** Marks a branch the type checker has proven unreachable; throws if reached at run time. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`Unexpected ${what}: ${JSON.stringify(value)}`);
}
