/**
 * The proxy's store through kysely: its PostgreSQL implementation (it runs on SQLite too, for a
 * caller that holds no direct access). `task-store-sqlite.ts` is the SQLite one, and
 * `test/proxy-task-store.test.ts` holds both to one contract.
 */
import { Task as TaskCodec, TaskPushNotificationConfig, type Task } from '@a2a-js/sdk';
import type { Kysely } from 'kysely';
import type { TaskStateName } from '../../protocol/index.js';
import { normalizeTaskState } from '../../protocol/index.js';
import type { ProxyDatabase } from './store-tables.js';
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

/** The proxy's store on `db`, a kysely database holding {@link ProxyDatabase}. */
export function kyselyProxyTaskStore(db: Kysely<ProxyDatabase>): ProxyTaskStore {
  return {
    claim: (task) => claimTask(db, task),
    get: (id) => getTask(db, id),
    update: (id, change) => updateTask(db, id, change),
    setPush: (config, at) => setPush(db, config, at),
    getPush: (taskId, configId) => getPush(db, taskId, configId),
    listPush: (taskId) => listPush(db, taskId),
    deletePush: (taskId, configId) => deletePush(db, taskId, configId),
    claimDelivery: (key, task, at, leaseUntil) => claimDelivery(db, key, task, at, leaseUntil),
    takeAttempt: (key, seen, at, leaseUntil) => takeAttempt(db, key, seen, at, leaseUntil),
    retryAt: (key, attempts, nextAt, error) => retryAt(db, key, attempts, nextAt, error),
    dueDeliveries: (now, limit) => dueDeliveries(db, now, limit),
    endDelivery: (key, outcome) => endDelivery(db, key, outcome),
    deliveries: (taskId) => deliveries(db, taskId),
    prune: (before, batchSize) => prune(db, before, batchSize),
  };
}

/**
 * The proxy's tables through kysely. The functions below are the store's methods on them, one each
 * ({@link ProxyTaskStore} says what each does).
 */
type ProxyDb = Kysely<ProxyDatabase>;

async function getTask(db: ProxyDb, id: string): Promise<ProxyTask | undefined> {
  const row = await db
    .selectFrom('fleetgate_proxy_task')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst();
  return row === undefined ? undefined : fromRow(row);
}

async function claimTask(
  db: ProxyDb,
  task: Omit<ProxyTask, 'updatedAt'>,
): Promise<{ created: boolean; task: ProxyTask }> {
  const inserted = await db
    .insertInto('fleetgate_proxy_task')
    .values({
      id: task.id,
      agent: task.agent,
      caller: task.caller,
      message_id: task.messageId,
      context_id: task.contextId,
      state: task.state,
      task: JSON.stringify(TaskCodec.toJSON(task.task)),
      protocol: task.protocol,
      created_at: task.createdAt,
      updated_at: task.createdAt,
    })
    .onConflict((oc) => oc.columns(['agent', 'caller', 'message_id']).doNothing())
    .executeTakeFirst();
  const created = Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1;
  if (created) return { created, task: { ...task, updatedAt: task.createdAt } };
  const row = await db
    .selectFrom('fleetgate_proxy_task')
    .selectAll()
    .where('agent', '=', task.agent)
    .where('caller', '=', task.caller)
    .where('message_id', '=', task.messageId)
    .executeTakeFirstOrThrow();
  return { created, task: fromRow(row) };
}

async function updateTask(
  db: ProxyDb,
  id: string,
  change: { task: Task; at: number },
): Promise<{ changed: boolean; task: ProxyTask | undefined; pushes?: ProxyPushConfig[] }> {
  const state = normalizeTaskState(change.task.status?.state);
  const json = JSON.stringify(TaskCodec.toJSON(change.task));
  let pushes: ProxyPushConfig[] | undefined;
  const row = await db.transaction().execute(async (trx) => {
    const before = await trx
      .selectFrom('fleetgate_proxy_task')
      .select('state')
      .where('id', '=', id)
      .executeTakeFirst();
    // The row as it stands after the update, or nothing when it had ended.
    const after = await trx
      .updateTable('fleetgate_proxy_task')
      .set({
        state,
        task: json,
        updated_at: change.at,
      })
      .where('id', '=', id)
      .where('state', 'not in', TERMINAL_STATES)
      .returningAll()
      .executeTakeFirst();
    if (after === undefined || before?.state === state) return after;
    pushes = await recordDeliveries(trx, id, state, json, change.at);
    return after;
  });
  if (row !== undefined) {
    return { changed: true, task: fromRow(row), ...defined({ pushes }) };
  }
  return { changed: false, task: await getTask(db, id) };
}

/**
 * Records, in the transaction of a task's change to `state`, that state's delivery to each push
 * configuration of the task, not tried yet and due after {@link UNSENT_PUSH_GRACE_MS}. Resolves
 * the configurations (the change's notification sends to them without reading them again).
 */
async function recordDeliveries(
  trx: ProxyDb,
  id: string,
  state: TaskStateName,
  json: string,
  at: number,
): Promise<ProxyPushConfig[]> {
  const configs = await listPush(trx, id);
  if (configs.length === 0) return configs;
  await trx
    .insertInto('fleetgate_proxy_push_delivery')
    .values(
      configs.map((c) => ({
        task_id: id,
        config_id: c.configId,
        state,
        status: 'sending' as const,
        attempts: 0,
        last_error: null,
        updated_at: at,
        next_at: at + UNSENT_PUSH_GRACE_MS,
        task: json,
      })),
    )
    .onConflict((oc) => oc.columns(['task_id', 'config_id', 'state']).doNothing())
    .execute();
  return configs;
}

async function setPush(db: ProxyDb, config: ProxyPushConfig, at: number): Promise<void> {
  const json = JSON.stringify(TaskPushNotificationConfig.toJSON(config.config));
  await db
    .insertInto('fleetgate_proxy_push')
    .values({
      task_id: config.taskId,
      config_id: config.configId,
      config: json,
      protocol: config.protocol,
      created_at: at,
    })
    .onConflict((oc) =>
      oc.columns(['task_id', 'config_id']).doUpdateSet({ config: json, protocol: config.protocol }),
    )
    .execute();
}

async function getPush(
  db: ProxyDb,
  taskId: string,
  configId: string,
): Promise<ProxyPushConfig | undefined> {
  const row = await db
    .selectFrom('fleetgate_proxy_push')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('config_id', '=', configId)
    .executeTakeFirst();
  return row === undefined ? undefined : pushFromRow(row);
}

async function listPush(db: ProxyDb, taskId: string): Promise<ProxyPushConfig[]> {
  const rows = await db
    .selectFrom('fleetgate_proxy_push')
    .selectAll()
    .where('task_id', '=', taskId)
    .orderBy('created_at')
    .orderBy('config_id')
    .execute();
  return rows.map(pushFromRow);
}

async function deletePush(db: ProxyDb, taskId: string, configId: string): Promise<void> {
  await db
    .deleteFrom('fleetgate_proxy_push')
    .where('task_id', '=', taskId)
    .where('config_id', '=', configId)
    .execute();
}

/** An update of a delivery still `sending` after exactly `attempts` tries. */
function atTry(db: ProxyDb, key: DeliveryKey, attempts: number) {
  return db
    .updateTable('fleetgate_proxy_push_delivery')
    .where('task_id', '=', key.taskId)
    .where('config_id', '=', key.configId)
    .where('state', '=', key.state)
    .where('status', '=', 'sending')
    .where('attempts', '=', attempts);
}

async function takeAttempt(
  db: ProxyDb,
  key: DeliveryKey,
  seen: number,
  at: number,
  leaseUntil: number,
): Promise<boolean> {
  const updated = await atTry(db, key, seen)
    .set({ attempts: seen + 1, next_at: leaseUntil, updated_at: at })
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
}

async function claimDelivery(
  db: ProxyDb,
  key: DeliveryKey,
  task: Task,
  at: number,
  leaseUntil: number,
): Promise<boolean> {
  const inserted = await db
    .insertInto('fleetgate_proxy_push_delivery')
    .values({
      task_id: key.taskId,
      config_id: key.configId,
      state: key.state,
      status: 'sending',
      attempts: 1,
      last_error: null,
      updated_at: at,
      next_at: leaseUntil,
      task: JSON.stringify(TaskCodec.toJSON(task)),
    })
    .onConflict((oc) => oc.columns(['task_id', 'config_id', 'state']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1) return true;
  // Recorded with the state change and not tried yet: its first try is taken here.
  return takeAttempt(db, key, 0, at, leaseUntil);
}

async function retryAt(
  db: ProxyDb,
  key: DeliveryKey,
  attempts: number,
  nextAt: number,
  error: string,
): Promise<void> {
  await atTry(db, key, attempts).set({ next_at: nextAt, last_error: error }).execute();
}

async function dueDeliveries(
  db: ProxyDb,
  now: number,
  limit: number,
): Promise<(DeliveryKey & { attempts: number; task: Task | undefined })[]> {
  const rows = await db
    .selectFrom('fleetgate_proxy_push_delivery')
    .select(['task_id', 'config_id', 'state', 'attempts', 'task'])
    .where('status', '=', 'sending')
    .where((eb) => eb.or([eb('next_at', 'is', null), eb('next_at', '<=', now)]))
    .orderBy('updated_at')
    .limit(limit)
    .execute();
  return rows.map(dueFromRow);
}

async function endDelivery(
  db: ProxyDb,
  key: DeliveryKey,
  outcome: { status: 'delivered' | 'dead'; attempts: number; error?: string; at: number },
): Promise<void> {
  await db
    .updateTable('fleetgate_proxy_push_delivery')
    .set({
      status: outcome.status,
      attempts: outcome.attempts,
      last_error: outcome.error ?? null,
      updated_at: outcome.at,
      next_at: null,
    })
    .where('task_id', '=', key.taskId)
    .where('config_id', '=', key.configId)
    .where('state', '=', key.state)
    .execute();
}

async function deliveries(db: ProxyDb, taskId: string): ReturnType<ProxyTaskStore['deliveries']> {
  const rows = await db
    .selectFrom('fleetgate_proxy_push_delivery')
    .selectAll()
    .where('task_id', '=', taskId)
    .orderBy('updated_at')
    .execute();
  return rows.map(deliveryFromRow);
}

async function prune(db: ProxyDb, before: number, batchSize = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    // In batches: one huge delete would hold its locks (and grow the log) for long.
    const ids = (
      await db
        .selectFrom('fleetgate_proxy_task')
        .select('id')
        .where('state', 'in', TERMINAL_STATES)
        .where('updated_at', '<', before)
        .limit(batchSize)
        .execute()
    ).map((row) => row.id);
    if (ids.length === 0) return total;
    await db.transaction().execute(async (trx) => {
      await trx.deleteFrom('fleetgate_proxy_push_delivery').where('task_id', 'in', ids).execute();
      await trx.deleteFrom('fleetgate_proxy_push').where('task_id', 'in', ids).execute();
      await trx.deleteFrom('fleetgate_proxy_task').where('id', 'in', ids).execute();
    });
    total += ids.length;
    if (ids.length < batchSize) return total;
  }
}
