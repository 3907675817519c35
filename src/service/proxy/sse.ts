/**
 * A stream answered as Server-Sent Events the way the SDK's express handlers send one: the first
 * event awaited before any header (a failure before it is a plain answer in the transport's error
 * shape), then one `data:` frame per event and, for a failure after the first, one
 * `event: error` frame, to the stream's end. A client that hangs up ends the stream at the proxy
 * (`return()` on it) instead of following it unread. Shared by the JSON-RPC and v1.0 HTTP+JSON
 * fronts, which differ only in how a frame and an error read.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import {
  HTTP_EXTENSION_HEADER,
  SSE_HEADERS,
  formatSSEErrorEvent,
  formatSSEEvent,
} from '@a2a-js/sdk';

/** How one transport writes a stream's frames and failures. */
export interface SseShape {
  /** The body of one event's `data:` frame. */
  frame(value: unknown): unknown;
  /** The answer to a failure before the first event: its status and JSON body. */
  failedFirst(error: unknown): { status: number; body: unknown };
  /** The body of the `event: error` frame of a failure after the first event. */
  failedLater(error: unknown): unknown;
  /** Told when the stream fails to close after the client hung up. */
  onCloseError(error: unknown): void;
  /** The header that names the activated extensions (default `A2A-Extensions`). */
  extensionHeader?: string;
  /**
   * Send the headers before the first event (the SDK does for v0.3 `tasks/resubscribe`): a
   * failure before it is then an `event: error` frame too.
   */
  headersAtOnce?: boolean;
}

/** Sends `iterator` on `reply` as SSE, with the extensions the call activated. */
export async function sendSse(
  reply: FastifyReply,
  iterator: AsyncGenerator<unknown, void, undefined>,
  activated: readonly string[],
  shape: SseShape,
): Promise<void> {
  const raw: ServerResponse = reply.raw;
  let gone = false;
  const hangUp = (): void => {
    if (raw.writableFinished) return;
    gone = true;
    // An async generator takes `return()` at its next yield: the pending `next()` settles first.
    iterator.return(undefined).catch((error: unknown) => shape.onCloseError(error));
  };
  raw.once('close', hangUp);
  const extensionHeader = shape.extensionHeader ?? HTTP_EXTENSION_HEADER;
  const writeHead = (): void => {
    reply.hijack();
    // The gateway's own headers (x-request-id) go with the stream, as with every other answer.
    for (const [name, value] of Object.entries({ ...reply.getHeaders(), ...SSE_HEADERS })) {
      if (value !== undefined) raw.setHeader(name, value);
    }
    if (activated.length > 0) raw.setHeader(extensionHeader, activated);
    raw.writeHead(200);
  };
  let first: IteratorResult<unknown, void> | undefined;
  if (shape.headersAtOnce === true) {
    writeHead();
  } else {
    try {
      first = await iterator.next();
    } catch (error) {
      raw.off('close', hangUp);
      if (activated.length > 0) void reply.header(extensionHeader, activated);
      const answer = shape.failedFirst(error);
      void reply.code(answer.status).send(answer.body);
      return;
    }
    writeHead();
  }
  try {
    first ??= await iterator.next();
    if (!first.done && !gone) {
      raw.write(formatSSEEvent(shape.frame(first.value)));
      while (!gone) {
        const next = await iterator.next();
        if (next.done === true || gone) break;
        raw.write(formatSSEEvent(shape.frame(next.value)));
      }
    }
  } catch (error) {
    if (!raw.writableEnded) raw.write(formatSSEErrorEvent(shape.failedLater(error)));
  } finally {
    raw.off('close', hangUp);
    if (!raw.writableEnded) raw.end();
  }
}
