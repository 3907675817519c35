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

/** One push notification as it arrived: the task id from the URL, the headers and the raw body. */
export interface PushRequest {
  taskId: string;
  /** Request headers; names in any case. */
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  body: string | Uint8Array;
}

/** The HTTP answer to a push notification. */
export interface PushResponse {
  status: 200 | 400 | 401 | 404 | 413 | 415;
  body: { ok: true } | { error: { code: string; message: string } };
}

/** Options of {@link createPushReceiver}. */
export interface PushReceiverOptions {
  records: Pick<TaskRecordStore, 'byTaskId'>;
  /** Handles an accepted event (the tracker: a terminal task is settled through the task terminal, a status-only push triggers a `GetTask`). */
  onEvent(record: TaskRecord, event: NormalizedStreamEvent, body: unknown): Promise<void>;
  /** Largest body accepted, in bytes (default 4 MiB). */
  maxBodyBytes?: number;
}

const JSON_TYPES = /^application\/(a2a\+)?json\s*(;|$)/i;

function header(headers: PushRequest['headers'], name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return typeof value === 'string' ? value : value?.[0];
  }
  return undefined;
}

/** The secret a push carries: `X-A2A-Notification-Token`, or the credential of `Authorization`. */
function presentedToken(headers: PushRequest['headers']): string | undefined {
  const token = header(headers, 'x-a2a-notification-token');
  if (token !== undefined && token !== '') return token;
  const authorization = header(headers, 'authorization');
  const match = authorization === undefined ? null : /^\s*\S+\s+(\S+)\s*$/.exec(authorization);
  return match?.[1];
}

const fail = (status: PushResponse['status'], code: ErrorCode, message: string): PushResponse => ({
  status,
  body: { error: { code, message } },
});

/**
 * The A2A push-notification receiver behind `POST /callbacks/a2a/:taskId`, free of any HTTP
 * framework. Accepts v1.0 `StreamResponse` bodies (`{task}`, `{statusUpdate}`,
 * `{artifactUpdate}`, `TASK_STATE_*`, `Content-Type: application/a2a+json`) and v0.3 bodies
 * (`kind`, lowercase states), authenticated by the per-task secret in `X-A2A-Notification-Token`
 * or `Authorization: <scheme> <secret>`, compared by hash in constant time. Unknown task 404, bad
 * secret 401, bad body 400 with the reason.
 */
export function createPushReceiver(
  options: PushReceiverOptions,
): (request: PushRequest) => Promise<PushResponse> {
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  return async (request) => {
    try {
      // Before any lookup: a NUL would fail the query on PostgreSQL, not answer it.
      checkTaskId(request.taskId, 'the push URL');
    } catch (error) {
      if (!isFleetgateError(error)) throw error;
      return fail(400, 'FLEETGATE_TASK_ID_INVALID', error.message);
    }
    const records = (await options.records.byTaskId(request.taskId)).filter(
      (r) => r.pushTokenHash !== null,
    );
    if (records.length === 0) {
      return fail(
        404,
        'FLEETGATE_PUSH_UNKNOWN_TASK',
        `No push notifications are expected for task ${request.taskId}.`,
      );
    }
    const token = presentedToken(request.headers);
    const hash = token === undefined ? undefined : hashPushToken(token);
    // Check every candidate so the time taken does not tell which task ids exist with which agents.
    let record: TaskRecord | undefined;
    for (const candidate of records) {
      if (hash !== undefined && sameHash(hash, candidate.pushTokenHash!)) record ??= candidate;
    }
    if (record === undefined) {
      return fail(
        401,
        'FLEETGATE_PUSH_UNAUTHORIZED',
        token === undefined
          ? 'The push carries no X-A2A-Notification-Token or Authorization header.'
          : 'The push secret does not match this task.',
      );
    }
    const contentType = header(request.headers, 'content-type');
    if (contentType !== undefined && !JSON_TYPES.test(contentType)) {
      return fail(
        415,
        'FLEETGATE_PUSH_BODY_INVALID',
        `Content-Type ${contentType} is not application/a2a+json or application/json.`,
      );
    }
    const size =
      typeof request.body === 'string' ? Buffer.byteLength(request.body) : request.body.byteLength;
    if (size > maxBodyBytes) {
      return fail(
        413,
        'FLEETGATE_PUSH_BODY_INVALID',
        `The body is ${size} bytes, more than the limit of ${maxBodyBytes}.`,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(
        typeof request.body === 'string'
          ? request.body
          : Buffer.from(request.body).toString('utf8'),
      );
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
