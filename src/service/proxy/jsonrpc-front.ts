/**
 * v1.0 JSON-RPC at `/a2a/:agent`, answered from the gateway's fastify route with the SDK's
 * framework-free `JsonRpcTransportHandler`: what the SDK's express `jsonRpcHandler` answers a
 * v1.0 request (its content-type guard, the version check against the card, `A2A-Extensions`,
 * streams as SSE), without an express app and its router on every call. v0.3 JSON-RPC and the
 * v0.3 card stay on the SDK's express handlers (`front.ts`): the SDK exports its v0.3 transports
 * only inside its express middleware.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { A2A_ERROR_CODE, ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import type { User } from '@a2a-js/sdk/server';
import { JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import { sendSse } from './sse.js';
import type { TransportFrontOptions } from './transport.js';
import { callContext, headerOf } from './transport.js';

/** One agent's v1.0 JSON-RPC endpoint. */
export interface JsonRpcFront {
  /**
   * Answers one v1.0 JSON-RPC `POST`: `body` is the request's JSON, already parsed (undefined
   * when the body was empty), `user` the caller the gateway checked.
   */
  serve(request: FastifyRequest, reply: FastifyReply, body: unknown, user: User): Promise<void>;
}

type JsonRpcError = ReturnType<typeof JsonRpcTransportHandler.mapToJSONRPCError>;

const JSON_CONTENT_TYPE = 'application/json';

/** The error envelope the SDK answers with: `id` as the SDK takes it (`body?.id || null`). */
function errorEnvelope(body: unknown, error: JsonRpcError): Record<string, unknown> {
  const id = typeof body === 'object' && body !== null ? (body as { id?: unknown }).id : undefined;
  return { jsonrpc: '2.0', id: id || null, error };
}

/** Builds the v1.0 JSON-RPC endpoint of one agent. */
export function createJsonRpcFront(options: TransportFrontOptions): JsonRpcFront {
  const { requestHandler, contextBuilder, onError } = options;
  const transport = new JsonRpcTransportHandler(requestHandler);
  /** The SDK logs every failure; the gateway reports its own faults and answers the client's. */
  const mapped = (error: unknown, where: string): JsonRpcError => {
    const rpcError = JsonRpcTransportHandler.mapToJSONRPCError(error);
    if (rpcError.code === A2A_ERROR_CODE.INTERNAL_ERROR) onError(error, where);
    return rpcError;
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
      try {
        const context = callContext(contextBuilder, request, user);
        validateVersion(context.requestedVersion, await requestHandler.getAgentCard(), 'JSONRPC');
        const answer = await transport.handle(body as Record<string, unknown>, context);
        // Read once the call has answered (a blocking call adds what the agent echoed); on a
        // stream, before its first event, as the SDK sets it.
        const activated =
          context.activatedExtensions === undefined ? [] : Array.from(context.activatedExtensions);
        if (Symbol.asyncIterator in answer) {
          await sendSse(reply, answer, activated, {
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
        if (activated.length > 0) void reply.header(HTTP_EXTENSION_HEADER, activated);
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
