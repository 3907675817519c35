/**
 * What the proxy's v1.0 fronts (JSON-RPC in `jsonrpc-front.ts`, HTTP+JSON in `rest-front.ts`)
 * share: their options, and the call's context read from the request's headers the way the SDK's
 * express handlers read it.
 */
import type { FastifyRequest } from 'fastify';
import { A2A_VERSION_HEADER, Extensions, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import type {
  A2ARequestHandler,
  ServerCallContext,
  ServerCallContextBuilder,
  User,
} from '@a2a-js/sdk/server';

/** Options of a v1.0 front of one agent. */
export interface TransportFrontOptions {
  /** The agent's request handler (the proxy's, measured). */
  requestHandler: A2ARequestHandler;
  /** Builds each call's context (activates the requested extensions). */
  contextBuilder: ServerCallContextBuilder;
  /** Told of the failures that are the gateway's or the agent's, not the client's. */
  onError: (error: unknown, where: string) => void;
}

/** One header's value as express's `req.header()` reads it (the first of repeated ones). */
export function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** The extensions header of v0.3 (v1.0's `A2A-Extensions` is read when it is missing). */
export const LEGACY_EXTENSION_HEADER = 'X-A2A-Extensions';

/**
 * The call's context: the extensions the client asks for (`A2A-Extensions`, or v0.3's
 * `X-A2A-Extensions` first when `legacy`), the version it speaks (`A2A-Version`), the caller the
 * gateway checked and, on HTTP+JSON, the path's tenant.
 */
export function callContext(
  builder: ServerCallContextBuilder,
  request: FastifyRequest,
  user: User,
  options: { tenant?: string; legacy?: boolean } = {},
): ServerCallContext {
  const requestedVersion = headerOf(request, A2A_VERSION_HEADER);
  const { tenant = '', legacy = false } = options;
  const extensions =
    (legacy ? headerOf(request, LEGACY_EXTENSION_HEADER) : undefined) ??
    headerOf(request, HTTP_EXTENSION_HEADER);
  return builder({
    extensions: Extensions.parseServiceParameter(extensions),
    user,
    headers: request.headers,
    ...(requestedVersion ? { requestedVersion } : {}),
    ...(tenant === '' ? {} : { tenant }),
  });
}
