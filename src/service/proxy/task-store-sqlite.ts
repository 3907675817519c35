/**
 * The proxy store's per-call work on a SQLite store's direct access: a call's task is opened and
 * moved on as prepared statements in group-committed units (one commit with the other writes of
 * the turn), and read without the SQL builder. Each proxied call opens its task once and moves it
 * a few times; through kysely each of those was its own transaction and commit, and cost more
 * than SQLite itself. The same statements and outcomes as the kysely path of `task-store.ts`.
 */
import { Task as TaskCodec } from '@a2a-js/sdk';
import type { SqliteAccess, SqliteStatements } from '../../store/index.js';
import { normalizeTaskState } from '../../protocol/index.js';
import type { ProxyPushTable, ProxyTaskTable } from './store-tables.js';
import type { ProxyPushConfig, ProxyTask, ProxyTaskStore } from './task-types.js';
import { defined } from '../../protocol/fields/index.js';

/** The kysely path's pieces the direct path shares (row decoding, the grace of a delivery). */
export interface ProxyRowCodecs {
  fromRow: (row: ProxyTaskTable) => ProxyTask;
  pushFromRow: (row: ProxyPushTable) => ProxyPushConfig;
  terminalStates: readonly string[];
  graceMs: number;
}

const INSERT_TASK =
  'insert into "fleetgate_proxy_task" ("id", "agent", "caller", "message_id", "context_id", ' +
  '"state", "task", "protocol", "created_at", "updated_at") ' +
  'values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
  'on conflict ("agent", "caller", "message_id") do nothing';
const SELECT_BY_MESSAGE =
  'select * from "fleetgate_proxy_task" where "agent" = ? and "caller" = ? and "message_id" = ?';
const SELECT_BY_ID = 'select * from "fleetgate_proxy_task" where "id" = ?';
const SELECT_STATE = 'select "state" from "fleetgate_proxy_task" where "id" = ?';
const SELECT_PUSH =
  'select * from "fleetgate_proxy_push" where "task_id" = ? order by "created_at", "config_id"';
const INSERT_DELIVERY =
  'insert into "fleetgate_proxy_push_delivery" ("task_id", "config_id", "state", "status", ' +
  '"attempts", "last_error", "updated_at", "next_at", "task") ' +
  "values (?, ?, ?, 'sending', 0, null, ?, ?, ?) " +
  'on conflict ("task_id", "config_id", "state") do nothing';

/** The update of a task that has not ended (a task that ended is never changed again). */
function updateTask(terminalStates: readonly string[]): string {
  return (
    'update "fleetgate_proxy_task" set "state" = ?, "task" = ?, "updated_at" = ? ' +
    `where "id" = ? and "state" not in (${terminalStates.map(() => '?').join(', ')}) returning *`
  );
}

/** `claim`, `get`, `update` and `listPush` of the proxy store, on `sqlite`. */
export function directProxyTaskStore(
  sqlite: SqliteAccess,
  codecs: ProxyRowCodecs,
): Pick<ProxyTaskStore, 'claim' | 'get' | 'update' | 'listPush'> {
  const { fromRow, pushFromRow, terminalStates, graceMs } = codecs;
  const update = updateTask(terminalStates);
  const readTask = (sql: SqliteStatements, id: string): ProxyTask | undefined => {
    const row = sql.get<ProxyTaskTable>(SELECT_BY_ID, [id]);
    return row === undefined ? undefined : fromRow(row);
  };
  return {
    async claim(task) {
      const json = JSON.stringify(TaskCodec.toJSON(task.task));
      const created = await sqlite.write(
        (sql) =>
          sql.run(INSERT_TASK, [
            task.id,
            task.agent,
            task.caller,
            task.messageId,
            task.contextId,
            task.state,
            json,
            task.protocol,
            task.createdAt,
            task.createdAt,
          ]).changes === 1,
      );
      if (created) return { created, task: { ...task, updatedAt: task.createdAt } };
      const row = await sqlite.read((sql) =>
        sql.get<ProxyTaskTable>(SELECT_BY_MESSAGE, [task.agent, task.caller, task.messageId]),
      );
      if (row === undefined) {
        throw new Error(`Proxy task of message ${task.messageId} neither inserted nor found`);
      }
      return { created, task: fromRow(row) };
    },
    get(id) {
      return sqlite.read((sql) => readTask(sql, id));
    },
    async update(id, change) {
      const state = normalizeTaskState(change.task.status?.state);
      const json = JSON.stringify(TaskCodec.toJSON(change.task));
      let pushes: ProxyPushConfig[] | undefined;
      const row = await sqlite.write((sql) => {
        const before = sql.get<{ state: string }>(SELECT_STATE, [id]);
        // The row as it stands after the update, or nothing when it had ended.
        const after = sql.get<ProxyTaskTable>(update, [
          state,
          json,
          change.at,
          id,
          ...terminalStates,
        ]);
        if (after === undefined || before?.state === state) return after;
        // The new state's push deliveries, in the same commit (see `ProxyTaskStore.update`).
        pushes = sql.all<ProxyPushTable>(SELECT_PUSH, [id]).map((push) => pushFromRow(push));
        for (const { configId } of pushes) {
          sql.run(INSERT_DELIVERY, [id, configId, state, change.at, change.at + graceMs, json]);
        }
        return after;
      });
      if (row !== undefined) {
        return { changed: true, task: fromRow(row), ...defined({ pushes }) };
      }
      return { changed: false, task: await sqlite.read((sql) => readTask(sql, id)) };
    },
    listPush(taskId) {
      return sqlite.read((sql) =>
        sql.all<ProxyPushTable>(SELECT_PUSH, [taskId]).map((row) => pushFromRow(row)),
      );
    },
  };
}
