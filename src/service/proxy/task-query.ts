/**
 * Reads of the proxy's tasks for `ListTasks`: one agent's tasks that a caller may see — its own
 * (the token's name); every caller's for an admin — filtered and paged the way the A2A v1.0 spec
 * (and the SDK's own task store) does: newest update first, ties by id, a page token that is the
 * cursor of the last task of the page. Kept in one module, so the reads can move with the tasks.
 */
import { Task as TaskCodec, TaskState, type ListTasksRequest, type Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { Kysely } from 'kysely';
import type { TaskStateName } from '../../protocol/index.js';
import type { ProxyDatabase } from './store-tables.js';

/** Tasks per page when the request names none (the spec's default). */
export const DEFAULT_PAGE_SIZE = 50;
/** The largest page the spec allows. */
export const MAX_PAGE_SIZE = 100;

const STATE_NAME: Readonly<Partial<Record<TaskState, TaskStateName>>> = {
  [TaskState.TASK_STATE_SUBMITTED]: 'submitted',
  [TaskState.TASK_STATE_WORKING]: 'working',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_AUTH_REQUIRED]: 'auth-required',
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
};

/** Who asks: a caller sees its own tasks, an admin every caller's. */
export interface TaskReader {
  caller: string;
  admin: boolean;
}

/** One page of tasks. */
export interface TaskPage {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

interface Cursor {
  at: number;
  id: string;
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.at}|${cursor.id}`, 'utf8').toString('base64url');
}

function decodeCursor(token: string): Cursor {
  const text = Buffer.from(token, 'base64url').toString('utf8');
  const bar = text.indexOf('|');
  const at = Number(text.slice(0, bar));
  if (bar <= 0 || !Number.isSafeInteger(at) || text.length === bar + 1) {
    throw new RequestMalformedError(
      `pageToken: ${JSON.stringify(token)} is not a page token of this list (send the nextPageToken of the previous page).`,
    );
  }
  return { at, id: text.slice(bar + 1) };
}

/**
 * One page of `agent`'s tasks that `reader` may see.
 *
 * @throws RequestMalformedError (JSON-RPC -32602, HTTP 400) for a page size outside 1–100, an
 *   unknown state, a `statusTimestampAfter` that is not an ISO 8601 time, or a foreign page token.
 */
export async function listProxyTasks(
  database: Kysely<ProxyDatabase>,
  agent: string,
  reader: TaskReader,
  request: ListTasksRequest,
): Promise<TaskPage> {
  const pageSize = request.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw new RequestMalformedError(
      `pageSize: ${String(request.pageSize)} is outside 1–${MAX_PAGE_SIZE}.`,
    );
  }
  let state: TaskStateName | undefined;
  if (request.status !== undefined && request.status !== TaskState.TASK_STATE_UNSPECIFIED) {
    state = STATE_NAME[request.status];
    if (state === undefined) {
      throw new RequestMalformedError(`status: ${String(request.status)} is not a task state.`);
    }
  }
  let after: number | undefined;
  if (request.statusTimestampAfter !== undefined && request.statusTimestampAfter !== '') {
    after = Date.parse(request.statusTimestampAfter);
    if (Number.isNaN(after)) {
      throw new RequestMalformedError(
        `statusTimestampAfter: ${JSON.stringify(request.statusTimestampAfter)} is not an ISO 8601 time.`,
      );
    }
  }
  if (request.historyLength !== undefined && request.historyLength < 0) {
    throw new RequestMalformedError(
      `historyLength: ${request.historyLength} is negative (0 leaves the history out).`,
    );
  }
  const cursor = request.pageToken === '' ? undefined : decodeCursor(request.pageToken);

  let filtered = database.selectFrom('fleetgate_proxy_task').where('agent', '=', agent);
  if (!reader.admin) filtered = filtered.where('caller', '=', reader.caller);
  if (request.contextId !== '') filtered = filtered.where('context_id', '=', request.contextId);
  if (state !== undefined) filtered = filtered.where('state', '=', state);
  if (after !== undefined) filtered = filtered.where('updated_at', '>', after);

  const counted = await filtered
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
    .executeTakeFirst();
  let page = filtered.select(['id', 'task', 'updated_at']);
  if (cursor !== undefined) {
    page = page.where((eb) =>
      eb.or([
        eb('updated_at', '<', cursor.at),
        eb.and([eb('updated_at', '=', cursor.at), eb('id', '<', cursor.id)]),
      ]),
    );
  }
  const rows = await page
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .limit(pageSize + 1)
    .execute();
  const more = rows.length > pageSize;
  const shown = rows.slice(0, pageSize);
  const last = shown.at(-1);
  return {
    tasks: shown.map((row) => {
      const task = TaskCodec.fromJSON(JSON.parse(row.task));
      if (request.includeArtifacts !== true) task.artifacts = [];
      if (request.historyLength !== undefined) {
        task.history =
          request.historyLength === 0 ? [] : task.history.slice(-request.historyLength);
      }
      return task;
    }),
    nextPageToken:
      more && last !== undefined ? encodeCursor({ at: Number(last.updated_at), id: last.id }) : '',
    pageSize,
    totalSize: Number(counted?.n ?? 0),
  };
}
