/**
 * The A2A push-notification receiver behind `POST /callbacks/a2a/:taskId`, free of any HTTP
 * framework.
 *
 * ## The contract with the host (the HTTP server that mounts it)
 *
 * The host calls the handler with the task id from the URL, the request headers, and the request
 * body **as a readable stream it has not read** (a Node `IncomingMessage`, a web `ReadableStream`
 * or any `AsyncIterable` of byte chunks). The handler then, in this order:
 *
 * 1. authenticates from the headers alone — the per-task secret in `X-A2A-Notification-Token` or
 *    `Authorization: Bearer <secret>` (no other scheme), compared by hash in constant time. An
 *    unknown task id and a wrong or missing secret get the same answer, 401
 *    `FLEETGATE_PUSH_UNAUTHORIZED`, so task ids cannot be probed. Not one byte of the body is read;
 * 2. checks the content type (415) and a declared `Content-Length` against the limit (413), still
 *    without reading;
 * 3. reads the body through a byte limit (`maxBodyBytes`, default 4 MiB: reading stops at the
 *    first chunk past it, 413) and a time limit (`bodyTimeoutMs`, default 10 s, 408);
 * 4. parses it (v1.0 `StreamResponse` or v0.3 event; 400 with the reason) and hands the event on.
 *
 * When the answer says `discardBody: true` the body was not read to its end: the host should
 * close the connection after answering (`Connection: close`, then destroy the socket) rather than
 * drain what the sender still sends. The host also keeps its own header and connection timeouts.
 * A body already read into memory (`string` / `Uint8Array`) is accepted too, for hosts that buffer
 * — the checks are the same, but the host has then paid for reading it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ErrorCode } from '../protocol/index.js';
import { checkTaskId, isFleetgateError } from '../protocol/index.js';
import type { NormalizedStreamEvent } from '../protocol/index.js';
import { readStreamEvent } from '../protocol/index.js';
import type { TaskRecord, TaskRecordStore } from './task-records.js';

/** A fresh per-task push secret (256 bits, base64url). Only its hash is stored. */
export function createPushToken(): string {
  return randomBytes(32).toString('base64url');
}

/** sha256 (hex) of a push secret: what the task record keeps. */
export function hashPushToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** A hash no secret has: compared against when the task is unknown, so both cases cost the same. */
const NO_HASH = hashPushToken('');

/** A request body not read yet: a Node request, a web `ReadableStream`, any async byte source. */
export type PushBodyStream = AsyncIterable<Uint8Array | string> | ReadableStream<Uint8Array>;

/** One push notification as it arrived: the task id from the URL, the headers and the body. */
export interface PushRequest {
  taskId: string;
  /** Request headers; names in any case. */
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /**
   * The body, preferably as the unread stream (see the contract above): it is read only after
   * the push is authenticated, and never past the size limit.
   */
  body: PushBodyStream | string | Uint8Array;
}

/** The HTTP answer to a push notification. */
export interface PushResponse {
  status: 200 | 400 | 401 | 408 | 413 | 415;
  body: { ok: true } | { error: { code: string; message: string } };
  /**
   * True when the body was left unread or partly read (401, 413, 415, 408): close the connection
   * after answering instead of draining it.
   */
  discardBody?: true;
}

/** Options of {@link createPushReceiver}. */
export interface PushReceiverOptions {
  records: Pick<TaskRecordStore, 'byTaskId'>;
  /** Handles an accepted event (the tracker: a terminal task is settled through the task terminal, a status-only push triggers a `GetTask`). */
  onEvent(record: TaskRecord, event: NormalizedStreamEvent, body: unknown): Promise<void>;
  /** Largest body accepted, in bytes (default 4 MiB). */
  maxBodyBytes?: number;
  /** Most milliseconds reading the body may take once it started (default 10 s). */
  bodyTimeoutMs?: number;
}

/** Default largest push body: 4 MiB. */
export const DEFAULT_PUSH_BODY_BYTES = 4 * 1024 * 1024;
/** Default time allowed to read a push body: 10 s. */
export const DEFAULT_PUSH_BODY_TIMEOUT_MS = 10_000;

const JSON_TYPES = /^application\/(a2a\+)?json\s*(;|$)/i;

function header(headers: PushRequest['headers'], name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return typeof value === 'string' ? value : value?.[0];
  }
  return undefined;
}

/**
 * The secret a push carries: `X-A2A-Notification-Token`, or the credential of
 * `Authorization: Bearer <secret>` (the scheme in any case; any other scheme carries nothing).
 */
function presentedToken(headers: PushRequest['headers']): string | undefined {
  const token = header(headers, 'x-a2a-notification-token');
  if (token !== undefined && token !== '') return token;
  const authorization = header(headers, 'authorization');
  const match = authorization === undefined ? null : /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1];
}

const fail = (
  status: Exclude<PushResponse['status'], 200>,
  code: ErrorCode,
  message: string,
  discardBody = false,
): PushResponse => ({
  status,
  body: { error: { code, message } },
  ...(discardBody ? { discardBody: true as const } : {}),
});

/** The body read, or why it was not. */
type BodyRead = { ok: true; bytes: Buffer } | { ok: false; answer: PushResponse };

/** What the reader needs of a Node readable stream (an `IncomingMessage`). */
interface NodeReadable {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

function isNodeReadable(body: PushBodyStream): body is PushBodyStream & NodeReadable {
  const candidate = body as Partial<NodeReadable>;
  return typeof candidate.on === 'function' && typeof candidate.pause === 'function';
}

function isWebStream(body: PushBodyStream): body is ReadableStream<Uint8Array> {
  return typeof (body as ReadableStream).getReader === 'function';
}

function toBuffer(value: Uint8Array | string): Buffer {
  return typeof value === 'string'
    ? Buffer.from(value)
    : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

const tooLarge = (maxBytes: number): BodyRead => ({
  ok: false,
  answer: fail(
    413,
    'FLEETGATE_PUSH_BODY_INVALID',
    `The body is more than the limit of ${maxBytes} bytes; it was not read further.`,
    true,
  ),
});

const tooSlow = (timeoutMs: number, total: number): BodyRead => ({
  ok: false,
  answer: fail(
    408,
    'FLEETGATE_PUSH_BODY_INVALID',
    `The body was not received within ${timeoutMs} ms (${total} bytes so far).`,
    true,
  ),
});

const unreadable = (error: unknown): BodyRead => ({
  ok: false,
  answer: fail(
    400,
    'FLEETGATE_PUSH_BODY_INVALID',
    `The body could not be read: ${error instanceof Error ? error.message : String(error)}`,
    true,
  ),
});

/**
 * Reads a Node request through the limits. Past a limit it stops listening and pauses the
 * request — never destroys it, so the host can still answer on the same socket.
 */
function readNode(body: NodeReadable, maxBytes: number, timeoutMs: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const finish = (read: BodyRead): void => {
      clearTimeout(timer);
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      if (!read.ok) body.pause();
      resolve(read);
    };
    const onData = (value: Uint8Array | string): void => {
      const chunk = toBuffer(value);
      total += chunk.byteLength;
      if (total > maxBytes) finish(tooLarge(maxBytes));
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish({ ok: true, bytes: Buffer.concat(chunks, total) });
    const onError = (error: unknown): void => finish(unreadable(error));
    const onClose = (): void => finish(unreadable(new Error('the connection closed early')));
    const timer = setTimeout(() => finish(tooSlow(timeoutMs, total)), timeoutMs);
    timer.unref?.();
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
    body.on('close', onClose);
    body.resume();
  });
}

/** Reads a web stream or an async iterable through the limits; cancels it past either. */
async function readChunks(
  body: PushBodyStream,
  maxBytes: number,
  timeoutMs: number,
): Promise<BodyRead> {
  const reader = isWebStream(body) ? body.getReader() : undefined;
  const iterator =
    reader === undefined
      ? (body as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]()
      : undefined;
  const stop = async (): Promise<void> => {
    await (reader?.cancel() ?? iterator?.return?.())?.catch(() => undefined);
  };
  const chunks: Buffer[] = [];
  let total = 0;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref?.();
  });
  try {
    for (;;) {
      const next: Promise<IteratorResult<Uint8Array | string>> =
        reader !== undefined
          ? (reader.read() as Promise<IteratorResult<Uint8Array>>)
          : iterator!.next();
      const step = await Promise.race([next, deadline]);
      if (step === 'timeout') {
        next.catch(() => undefined);
        await stop();
        return tooSlow(timeoutMs, total);
      }
      if (step.done === true) break;
      const chunk = toBuffer(step.value);
      total += chunk.byteLength;
      if (total > maxBytes) {
        await stop();
        return tooLarge(maxBytes);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    return unreadable(error);
  } finally {
    clearTimeout(timer);
  }
  return { ok: true, bytes: Buffer.concat(chunks, total) };
}

function readLimited(body: PushBodyStream, maxBytes: number, timeoutMs: number): Promise<BodyRead> {
  return isNodeReadable(body)
    ? readNode(body, maxBytes, timeoutMs)
    : readChunks(body, maxBytes, timeoutMs);
}

/**
 * Creates the receiver (see the contract at the top of this file). Accepts v1.0
 * `StreamResponse` bodies (`{task}`, `{statusUpdate}`, `{artifactUpdate}`, `TASK_STATE_*`,
 * `Content-Type: application/a2a+json`) and v0.3 bodies (`kind`, lowercase states).
 *
 * @example
 * ```ts
 * const receive = createPushReceiver({ records, onEvent });
 * http.createServer(async (req, res) => {
 *   const taskId = decodeURIComponent(req.url!.slice('/callbacks/a2a/'.length));
 *   const answer = await receive({ taskId, headers: req.headers, body: req });
 *   res.writeHead(answer.status, {
 *     'content-type': 'application/json',
 *     ...(answer.discardBody ? { connection: 'close' } : {}),
 *   });
 *   res.end(JSON.stringify(answer.body));
 * });
 * ```
 */
export function createPushReceiver(
  options: PushReceiverOptions,
): (request: PushRequest) => Promise<PushResponse> {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_PUSH_BODY_BYTES;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_PUSH_BODY_TIMEOUT_MS;
  return async (request) => {
    try {
      // Before any lookup: a NUL would fail the query on PostgreSQL, not answer it.
      checkTaskId(request.taskId, 'the push URL');
    } catch (error) {
      if (!isFleetgateError(error)) throw error;
      return fail(400, 'FLEETGATE_TASK_ID_INVALID', error.message);
    }
    const token = presentedToken(request.headers);
    const hash = token === undefined ? undefined : hashPushToken(token);
    const records = (await options.records.byTaskId(request.taskId)).filter(
      (r) => r.pushTokenHash !== null,
    );
    // Check every candidate (and a dummy one for an unknown task) so the time taken does not tell
    // which task ids exist with which agents.
    let record: TaskRecord | undefined;
    for (const candidate of records.length === 0 ? [undefined] : records) {
      const matches = sameHash(hash ?? NO_HASH, candidate?.pushTokenHash ?? NO_HASH);
      if (matches && hash !== undefined && candidate !== undefined) record ??= candidate;
    }
    if (record === undefined) {
      return fail(
        401,
        'FLEETGATE_PUSH_UNAUTHORIZED',
        token === undefined
          ? 'The push carries no X-A2A-Notification-Token or Authorization: Bearer header.'
          : 'The push secret does not match a task that expects push notifications.',
        true,
      );
    }
    const contentType = header(request.headers, 'content-type');
    if (contentType !== undefined && !JSON_TYPES.test(contentType)) {
      return fail(
        415,
        'FLEETGATE_PUSH_BODY_INVALID',
        `Content-Type ${contentType} is not application/a2a+json or application/json.`,
        true,
      );
    }
    const declared = Number(header(request.headers, 'content-length') ?? Number.NaN);
    if (Number.isFinite(declared) && declared > maxBodyBytes) {
      return fail(
        413,
        'FLEETGATE_PUSH_BODY_INVALID',
        `The body is ${declared} bytes, more than the limit of ${maxBodyBytes}.`,
        true,
      );
    }
    let text: string;
    const body = request.body;
    if (typeof body === 'string' || body instanceof Uint8Array) {
      const size = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
      if (size > maxBodyBytes) {
        return fail(
          413,
          'FLEETGATE_PUSH_BODY_INVALID',
          `The body is ${size} bytes, more than the limit of ${maxBodyBytes}.`,
        );
      }
      text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
    } else {
      const read = await readLimited(body, maxBodyBytes, bodyTimeoutMs);
      if (!read.ok) return read.answer;
      text = read.bytes.toString('utf8');
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      return fail(
        400,
        'FLEETGATE_PUSH_BODY_INVALID',
        `The body is not JSON: ${(error as Error).message}`,
      );
    }
    let event: NormalizedStreamEvent;
    try {
      event = readStreamEvent(json);
    } catch (error) {
      if (!isFleetgateError(error)) throw error;
      return fail(400, 'FLEETGATE_PUSH_BODY_INVALID', error.message);
    }
    const eventTaskId =
      event.type === 'task'
        ? event.task.id
        : event.type === 'message'
          ? request.taskId
          : event.taskId;
    if (eventTaskId !== request.taskId) {
      return fail(
        400,
        'FLEETGATE_PUSH_BODY_INVALID',
        `The body is about task ${eventTaskId}, not ${request.taskId}.`,
      );
    }
    await options.onEvent(record, event, json);
    return { status: 200, body: { ok: true } };
  };
}
