/**
 * The proxy store's rows as both implementations read them (`task-store-sqlite.ts`,
 * `task-store-kysely.ts`), and the constants they share.
 */
import { Task as TaskCodec, TaskPushNotificationConfig } from '@a2a-js/sdk';
import { normalizeTaskState } from '../../protocol/index.js';
import type { ProxyPushDeliveryTable, ProxyTaskTable } from './store-tables.js';
import type { ProxyPushConfig, ProxyTask, ProxyTaskStore } from './task-types.js';

/** The states a task never leaves. */
export const TERMINAL_STATES = ['completed', 'failed', 'canceled', 'rejected'];

/**
 * How long a delivery recorded with a state change waits for the replica that made the change
 * before the sweepers send it (that replica stopped between the change and its first try).
 */
export const UNSENT_PUSH_GRACE_MS = 5_000;

/** A task as stored, decoded. */
export function fromRow(row: ProxyTaskTable): ProxyTask {
  return {
    id: row.id,
    agent: row.agent,
    caller: row.caller,
    messageId: row.message_id,
    contextId: row.context_id,
    state: normalizeTaskState(row.state),
    task: TaskCodec.fromJSON(JSON.parse(row.task)),
    protocol: row.protocol === '0.3' ? '0.3' : '1.0',
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** A push configuration as stored, decoded. */
export function pushFromRow(row: {
  task_id: string;
  config_id: string;
  config: string;
  protocol: string;
}): ProxyPushConfig {
  return {
    taskId: row.task_id,
    configId: row.config_id,
    config: TaskPushNotificationConfig.fromJSON(JSON.parse(row.config)),
    protocol: row.protocol === '0.3' ? '0.3' : '1.0',
  };
}

/** A delivery as {@link ProxyTaskStore.deliveries} reports it. */
export function deliveryFromRow(
  r: ProxyPushDeliveryTable,
): Awaited<ReturnType<ProxyTaskStore['deliveries']>>[number] {
  return {
    configId: r.config_id,
    state: r.state,
    status: r.status,
    attempts: Number(r.attempts),
    error: r.last_error,
  };
}

/** A delivery due, as {@link ProxyTaskStore.dueDeliveries} hands it to a sweeper. */
export function dueFromRow(
  r: Pick<ProxyPushDeliveryTable, 'task_id' | 'config_id' | 'state' | 'attempts' | 'task'>,
): Awaited<ReturnType<ProxyTaskStore['dueDeliveries']>>[number] {
  return {
    taskId: r.task_id,
    configId: r.config_id,
    state: r.state,
    attempts: Number(r.attempts),
    task: r.task === null ? undefined : TaskCodec.fromJSON(JSON.parse(r.task)),
  };
}
