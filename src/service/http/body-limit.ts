/**
 * Bodies over the limit are read to their end before the 413 is sent. Fastify answers as soon as
 * it sees the size and closes the connection while the client is still writing; most clients
 * (undici's `fetch`, the SDK's) then fail with EPIPE or ECONNRESET and never read the answer
 * that says what was wrong. Reading the rest (discarding it) lets them read the 413. Bodies far
 * beyond the limit are not read: those connections are closed as before.
 */
import { pipeline, Transform, type TransformCallback } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';

/** How much past the limit is read to let the client see its 413: 8 limits, at least 16 MiB. */
export function drainCapOf(limit: number): number {
  return Math.max(8 * limit, 16 * 1024 * 1024);
}

function tooLarge(limit: number, size: number | undefined): FleetgateError {
  const what = size === undefined ? 'The request body' : `The request body (${size} bytes)`;
  return new FleetgateError(
    'FLEETGATE_HTTP_BODY_TOO_LARGE',
    `${what} exceeds the gateway's limit of ${limit} bytes (listen.bodyLimit); nothing was processed.`,
    { details: { limit, ...defined({ size }) } },
  );
}

/**
 * Passes bytes through up to the limit; past it, discards the rest and fails at the end of the
 * body (or at once past the drain cap), so the client has finished writing when the 413 goes out.
 */
class LimitedBody extends Transform {
  private seen = 0;

  constructor(
    private readonly limit: number,
    private readonly cap: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen <= this.limit) {
      done(null, chunk);
      return;
    }
    done(this.seen > this.cap ? tooLarge(this.limit, undefined) : null);
  }

  override _flush(done: TransformCallback): void {
    done(this.seen > this.limit ? tooLarge(this.limit, this.seen) : null);
  }
}

async function discard(payload: NodeJS.ReadableStream): Promise<void> {
  for await (const chunk of payload) void chunk;
}

/**
 * Installs the rule on an app (and its child scopes): a declared `content-length` over the limit
 * is read and discarded, then answered 413; a body without one is counted as it streams.
 * `limit` is the app's body limit; a route with its own limit uses that, and a route that reads its
 * body itself (`config.rawBody`) is left to its own limit.
 */
export function limitBodies(app: FastifyInstance, limit: number): void {
  app.addHook('preParsing', async (request, reply, payload) => {
    // Push callbacks read their own bodies, under `limits.pushBodyBytes`.
    if (request.routeOptions.config.rawBody === true) return payload;
    const own = request.routeOptions.bodyLimit ?? limit;
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > own) {
      if (declared > drainCapOf(own)) void reply.header('connection', 'close');
      else await discard(payload);
      throw tooLarge(own, declared);
    }
    if (request.headers['transfer-encoding'] === undefined) return payload;
    // A client that goes away mid-body fails the counted stream too (pipeline destroys it).
    return pipeline(payload, new LimitedBody(own, drainCapOf(own)), () => undefined);
  });
}
