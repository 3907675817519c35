/**
 * The proxy's store on a SQLite store's direct access: every query a prepared statement, every
 * write group-committed with the rest of the turn of the loop (`store/sqlite-access.ts`), what
 * the kysely implementation does in one transaction done in one unit. The store's SQLite
 * implementation; `task-store-kysely.ts` is its PostgreSQL one, and
 * `test/proxy-task-store.test.ts` holds both to one contract.
 */
import { Task as TaskCodec, TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { SqliteAccess, SqliteStatements } from '../../store/index.js';
import { normalizeTaskState } from '../../protocol/index.js';
import type { ProxyPushDeliveryTable, ProxyPushTable, ProxyTaskTable } from './store-tables.js';
import {
  deliveryFromRow,
  dueFromRow,
  fromRow,
  pushFromRow,
  TERMINAL_STATES,
  UNSENT_PUSH_GRACE_MS,
} from './task-rows.js';
import type { DeliveryKey, ProxyPushConfig, ProxyTask, ProxyTaskStore } from './task-types.js';
import { defined } from '../../protocol/fields/index.js';

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
const SELECT_ONE_PUSH =
  'select * from "fleetgate_proxy_push" where "task_id" = ? and "config_id" = ?';
const UPSERT_PUSH =
  'insert into "fleetgate_proxy_push" ("task_id", "config_id", "config", "protocol", "created_at") ' +
  'values (?, ?, ?, ?, ?) on conflict ("task_id", "config_id") ' +
  'do update set "config" = excluded."config", "protocol" = excluded."protocol"';
const DELETE_PUSH = 'delete from "fleetgate_proxy_push" where "task_id" = ? and "config_id" = ?';
/** A delivery recorded with a state change: not tried yet. */
const INSERT_DELIVERY =
  'insert into "fleetgate_proxy_push_delivery" ("task_id", "config_id", "state", "status", ' +
  '"attempts", "last_error", "updated_at", "next_at", "task") ' +
  "values (?, ?, ?, 'sending', 0, null, ?, ?, ?) " +
  'on conflict ("task_id", "config_id", "state") do nothing';
/** A delivery claimed with its first try taken. */
const CLAIM_DELIVERY =
  'insert into "fleetgate_proxy_push_delivery" ("task_id", "config_id", "state", "status", ' +
  '"attempts", "last_error", "updated_at", "next_at", "task") ' +
  "values (?, ?, ?, 'sending', 1, null, ?, ?, ?) " +
  'on conflict ("task_id", "config_id", "state") do nothing';
/** A delivery still `sending` after exactly so many tries (the last parameter). */
const AT_TRY =
  'where "task_id" = ? and "config_id" = ? and "state" = ? ' +
  `and "status" = 'sending' and "attempts" = ?`;
const TAKE_ATTEMPT = `update "fleetgate_proxy_push_delivery" set "attempts" = ?, "next_at" = ?, "updated_at" = ? ${AT_TRY}`;
const RETRY_AT = `update "fleetgate_proxy_push_delivery" set "next_at" = ?, "last_error" = ? ${AT_TRY}`;
const DUE_DELIVERIES =
  'select "task_id", "config_id", "state", "attempts", "task" from "fleetgate_proxy_push_delivery" ' +
  `where "status" = 'sending' and ("next_at" is null or "next_at" <= ?) order by "updated_at" limit ?`;
const END_DELIVERY =
  'update "fleetgate_proxy_push_delivery" set "status" = ?, "attempts" = ?, "last_error" = ?, ' +
  '"updated_at" = ?, "next_at" = null where "task_id" = ? and "config_id" = ? and "state" = ?';
const SELECT_DELIVERIES =
  'select * from "fleetgate_proxy_push_delivery" where "task_id" = ? order by "updated_at"';
const DELETE_TASK_DELIVERIES = 'delete from "fleetgate_proxy_push_delivery" where "task_id" = ?';
const DELETE_TASK_PUSH = 'delete from "fleetgate_proxy_push" where "task_id" = ?';
const DELETE_TASK = 'delete from "fleetgate_proxy_task" where "id" = ?';

/** `?, ?, …`: one placeholder per state. */
function placeholders(states: readonly string[]): string {
  return states.map(() => '?').join(', ');
}

/** The update of a task that has not ended (a task that ended is never changed again). */
const UPDATE_TASK =
  'update "fleetgate_proxy_task" set "state" = ?, "task" = ?, "updated_at" = ? ' +
  `where "id" = ? and "state" not in (${placeholders(TERMINAL_STATES)}) returning *`;

/** Up to a batch of the tasks that ended before a time (retention). */
const ENDED_BATCH =
  `select "id" from "fleetgate_proxy_task" where "state" in (${placeholders(TERMINAL_STATES)}) ` +
  'and "updated_at" < ? limit ?';

/** The proxy's store on `sqlite`; see the file comment. */
export function sqliteProxyTaskStore(sqlite: SqliteAccess): ProxyTaskStore {
  return {
    ...taskMethods(sqlite),
    ...pushMethods(sqlite),
    ...deliveryMethods(sqlite),
    prune: (before, batchSize) => prune(sqlite, before, batchSize),
  };
}

/** `claim`, `get` and `update`. */
function taskMethods(sqlite: SqliteAccess): Pick<ProxyTaskStore, 'claim' | 'get' | 'update'> {
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
        const after = sql.get<ProxyTaskTable>(UPDATE_TASK, [
          state,
          json,
          change.at,
          id,
          ...TERMINAL_STATES,
        ]);
        if (after === undefined || before?.state === state) return after;
        // The new state's push deliveries, in the same commit (see `ProxyTaskStore.update`).
        pushes = sql.all<ProxyPushTable>(SELECT_PUSH, [id]).map((push) => pushFromRow(push));
        for (const { configId } of pushes) {
          sql.run(INSERT_DELIVERY, [
            id,
            configId,
            state,
            change.at,
            change.at + UNSENT_PUSH_GRACE_MS,
            json,
          ]);
        }
        return after;
      });
      if (row !== undefined) {
        return { changed: true, task: fromRow(row), ...defined({ pushes }) };
      }
      return { changed: false, task: await sqlite.read((sql) => readTask(sql, id)) };
    },
  };
}

/** `setPush`, `getPush`, `listPush` and `deletePush`. */
function pushMethods(
  sqlite: SqliteAccess,
): Pick<ProxyTaskStore, 'setPush' | 'getPush' | 'listPush' | 'deletePush'> {
  return {
    async setPush(config, at) {
      const json = JSON.stringify(TaskPushNotificationConfig.toJSON(config.config));
      await sqlite.write((sql) =>
        sql.run(UPSERT_PUSH, [config.taskId, config.configId, json, config.protocol, at]),
      );
    },
    async getPush(taskId, configId) {
      const row = await sqlite.read((sql) =>
        sql.get<ProxyPushTable>(SELECT_ONE_PUSH, [taskId, configId]),
      );
      return row === undefined ? undefined : pushFromRow(row);
    },
    listPush(taskId) {
      return sqlite.read((sql) =>
        sql.all<ProxyPushTable>(SELECT_PUSH, [taskId]).map((row) => pushFromRow(row)),
      );
    },
    async deletePush(taskId, configId) {
      await sqlite.write((sql) => sql.run(DELETE_PUSH, [taskId, configId]));
    },
  };
}

/** A delivery's key as the parameters of `"task_id" = ? and "config_id" = ? and "state" = ?`. */
function keyParams(key: DeliveryKey): string[] {
  return [key.taskId, key.configId, key.state];
}

/** Takes the try after `seen` of a delivery still `sending` (compare-and-set on its tries). */
function takeTry(
  sql: SqliteStatements,
  key: DeliveryKey,
  seen: number,
  at: number,
  leaseUntil: number,
): boolean {
  return sql.run(TAKE_ATTEMPT, [seen + 1, leaseUntil, at, ...keyParams(key), seen]).changes === 1;
}

/** The deliveries' methods: claims and tries, the sweepers' due list, outcomes. */
function deliveryMethods(
  sqlite: SqliteAccess,
): Pick<
  ProxyTaskStore,
  'claimDelivery' | 'takeAttempt' | 'retryAt' | 'dueDeliveries' | 'endDelivery' | 'deliveries'
> {
  return {
    claimDelivery(key, task, at, leaseUntil) {
      const json = JSON.stringify(TaskCodec.toJSON(task));
      return sqlite.write(
        (sql) =>
          sql.run(CLAIM_DELIVERY, [...keyParams(key), at, leaseUntil, json]).changes === 1 ||
          // Recorded with the state change and not tried yet: its first try is taken here.
          takeTry(sql, key, 0, at, leaseUntil),
      );
    },
    takeAttempt(key, seen, at, leaseUntil) {
      return sqlite.write((sql) => takeTry(sql, key, seen, at, leaseUntil));
    },
    async retryAt(key, attempts, nextAt, error) {
      await sqlite.write((sql) => sql.run(RETRY_AT, [nextAt, error, ...keyParams(key), attempts]));
    },
    async dueDeliveries(now, limit) {
      type Due = Pick<
        ProxyPushDeliveryTable,
        'task_id' | 'config_id' | 'state' | 'attempts' | 'task'
      >;
      const rows = await sqlite.read((sql) => sql.all<Due>(DUE_DELIVERIES, [now, limit]));
      return rows.map(dueFromRow);
    },
    async endDelivery(key, outcome) {
      await sqlite.write((sql) =>
        sql.run(END_DELIVERY, [
          outcome.status,
          outcome.attempts,
          outcome.error ?? null,
          outcome.at,
          ...keyParams(key),
        ]),
      );
    },
    async deliveries(taskId) {
      const rows = await sqlite.read((sql) =>
        sql.all<ProxyPushDeliveryTable>(SELECT_DELIVERIES, [taskId]),
      );
      return rows.map(deliveryFromRow);
    },
  };
}

/** `prune`: a batch of ended tasks with their push rows per unit, until a batch comes up short. */
async function prune(sqlite: SqliteAccess, before: number, batchSize = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    // In batches: one huge delete would hold the connection (and grow the log) for long. The
    // batch's ids are read once and their rows deleted by id, as the kysely implementation does.
    const n = await sqlite.write((sql) => {
      const ids = sql.all<{ id: string }>(ENDED_BATCH, [...TERMINAL_STATES, before, batchSize]);
      for (const { id } of ids) {
        sql.run(DELETE_TASK_DELIVERIES, [id]);
        sql.run(DELETE_TASK_PUSH, [id]);
        sql.run(DELETE_TASK, [id]);
      }
      return ids.length;
    });
    total += n;
    if (n === 0 || n < batchSize) return total;
  }
}
