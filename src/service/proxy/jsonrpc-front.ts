/**
 * JSON-RPC at `/a2a/:agent`, answered from the gateway's fastify route with the SDK's
 * framework-free transports — `JsonRpcTransportHandler` for v1.0, `LegacyJsonRpcTransportHandler`
 * for v0.3 (no `A2A-Version`, or `0.3`): what the SDK's express `jsonRpcHandler` answers (its
 * content-type guard, the version check against the card, `A2A-Extensions` or v0.3's
 * `X-A2A-Extensions`, streams as SSE), without an express app and its router on every call.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { A2A_VERSION_HEADER, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { A2A_ERROR_CODE, ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import type { User } from '@a2a-js/sdk/server';
import { JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { sendSse } from './sse.js';
import type { TransportFrontOptions } from './transport.js';
import { LEGACY_EXTENSION_HEADER, callContext, headerOf } from './transport.js';

/** One agent's JSON-RPC endpoint (v1.0 and v0.3). */
export interface JsonRpcFront {
  /**
   * Answers one JSON-RPC `POST`: `body` is the request's JSON, already parsed (undefined
   * when the body was empty), `user` the caller the gateway checked.
   */
  serve(request: FastifyRequest, reply: FastifyReply, body: unknown, user: User): Promise<void>;
}

/** A JSON-RPC error of either version (v0.3's `data` is an object, v1.0's a list of details). */
type JsonRpcError =
  | ReturnType<typeof JsonRpcTransportHandler.mapToJSONRPCError>
  | ReturnType<typeof LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError>;

const JSON_CONTENT_TYPE = 'application/json';

/** The JSON-RPC method a body names, if any. */
function methodOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null
    ? (body as { method?: unknown }).method
    : undefined;
}

/** The error envelope the SDK answers with: `id` as the SDK takes it (`body?.id || null`). */
function errorEnvelope(body: unknown, error: JsonRpcError): Record<string, unknown> {
  const id = typeof body === 'object' && body !== null ? (body as { id?: unknown }).id : undefined;
  return { jsonrpc: '2.0', id: id || null, error };
}

/** Builds the JSON-RPC endpoint (v1.0 and v0.3) of one agent. */
export function createJsonRpcFront(options: TransportFrontOptions): JsonRpcFront {
  const { requestHandler, contextBuilder, onError } = options;
  const transports = {
    v1: new JsonRpcTransportHandler(requestHandler),
    legacy: new LegacyJsonRpcTransportHandler(requestHandler),
  };
  /** The SDK logs every failure; the gateway reports its own faults and answers the client's. */
  const mapper =
    (toRpc: (error: unknown) => JsonRpcError) =>
    (error: unknown, where: string): JsonRpcError => {
      const rpcError = toRpc(error);
      if (rpcError.code === A2A_ERROR_CODE.INTERNAL_ERROR) onError(error, where);
      return rpcError;
    };
  const mappers = {
    v1: mapper((error) => JsonRpcTransportHandler.mapToJSONRPCError(error)),
    legacy: mapper((error) => LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)),
  };

  return {
    async serve(request, reply, body, user) {
      // The SDK's `contentTypeGuard`: no content type passes, any other than JSON is refused.
      const contentType = headerOf(request, 'content-type');
      if (contentType) {
        const mediaType = contentType.split(';', 1)[0]!.trim().toLowerCase();
        if (mediaType !== JSON_CONTENT_TYPE) {
          const refused = new ContentTypeNotSupportedError(
            `Unsupported Content-Type "${contentType}"; expected application/json.`,
          );
          void reply.code(200).send({
            jsonrpc: '2.0',
            id: null,
            error: JsonRpcTransportHandler.mapToJSONRPCError(refused),
          });
          return;
        }
      }
      // v0.3 when the client names no version or names 0.3, as the SDK's handler decides.
      const legacy = (headerOf(request, A2A_VERSION_HEADER) || '0.3') === '0.3';
      const mapped = legacy ? mappers.legacy : mappers.v1;
      const extensionHeader = legacy ? LEGACY_EXTENSION_HEADER : HTTP_EXTENSION_HEADER;
      try {
        const context = callContext(contextBuilder, request, user, { legacy });
        validateVersion(context.requestedVersion, await requestHandler.getAgentCard(), 'JSONRPC');
        const transport = legacy ? transports.legacy : transports.v1;
        const answer = await transport.handle(body as Record<string, unknown>, context);
        // Read once the call has answered (a blocking call adds what the agent echoed); on a
        // stream, before its first event, as the SDK sets it.
        const activated =
          context.activatedExtensions === undefined ? [] : Array.from(context.activatedExtensions);
        if (Symbol.asyncIterator in answer) {
          await sendSse(reply, answer, activated, {
            extensionHeader,
            // v0.3 `tasks/resubscribe` is answered with SSE headers at once, as the SDK does.
            headersAtOnce: legacy && methodOf(body) === 'tasks/resubscribe',
            frame: (value) => value,
            // An error before the first event is a plain JSON-RPC error answer, status 200.
            failedFirst: (error) => ({
              status: 200,
              body: errorEnvelope(body, mapped(error, 'proxy.jsonrpc.stream')),
            }),
            failedLater: (error) => errorEnvelope(body, mapped(error, 'proxy.jsonrpc.stream')),
            onCloseError: (error) => mapped(error, 'proxy.jsonrpc.stream'),
          });
          return;
        }
        if (activated.length > 0) void reply.header(extensionHeader, activated);
        void reply.code(200).send(answer);
      } catch (error) {
        const rpcError = mapped(error, 'proxy.jsonrpc');
        if (!reply.sent) {
          const status = rpcError.code === A2A_ERROR_CODE.INTERNAL_ERROR ? 500 : 200;
          void reply.code(status).send(errorEnvelope(body, rpcError));
        } else if (!reply.raw.writableEnded) {
          reply.raw.end();
        }
      }
    },
  };
}
