/**
 * What the proxy's store holds and answers: its tasks, the clients' push configurations and their
 * deliveries (`task-store.ts` builds it on SQLite or PostgreSQL).
 */
import type { Task, TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { TaskStateName } from '../../protocol/index.js';

/** The protocol of a client: push bodies and stream frames follow it. */
export type ClientProtocol = '1.0' | '0.3';

/** One task of the proxy. */
export interface ProxyTask {
  /** The proxy's task id (the dispatch's id): the id the client knows. */
  id: string;
  agent: string;
  caller: string;
  messageId: string;
  contextId: string;
  state: TaskStateName;
  /** The task as the client sees it (ids are the proxy's). */
  task: Task;
  protocol: ClientProtocol;
  createdAt: number;
  updatedAt: number;
}

/** A client's push configuration of a proxy task. */
export interface ProxyPushConfig {
  taskId: string;
  configId: string;
  config: TaskPushNotificationConfig;
  protocol: ClientProtocol;
}

/** One delivery: one state of a task to one configuration. */
export interface DeliveryKey {
  taskId: string;
  configId: string;
  state: string;
}

/** The proxy's store. */
export interface ProxyTaskStore {
  /**
   * Records a new task, or finds the one the same caller's message id made before: `created`
   * says which (only a created task is dispatched).
   */
  claim(task: Omit<ProxyTask, 'updatedAt'>): Promise<{ created: boolean; task: ProxyTask }>;
  get(id: string): Promise<ProxyTask | undefined>;
  /**
   * Moves a task on; a task that ended is never changed again. Resolves the task as stored
   * afterwards and whether this call changed it. When the state changes, the new state's
   * delivery to each push configuration of the task is recorded in the same transaction, due at
   * `at` + `UNSENT_PUSH_GRACE_MS`: the replica that made the change takes it at once
   * (`claimDelivery`); one that stopped before leaves it to the sweepers. `pushes` are the
   * configurations those deliveries were recorded for (as `listPush` lists them), when this call
   * recorded them.
   */
  update(
    id: string,
    change: { task: Task; at: number },
  ): Promise<{ changed: boolean; task: ProxyTask | undefined; pushes?: ProxyPushConfig[] }>;
  setPush(config: ProxyPushConfig, at: number): Promise<void>;
  getPush(taskId: string, configId: string): Promise<ProxyPushConfig | undefined>;
  listPush(taskId: string): Promise<ProxyPushConfig[]>;
  deletePush(taskId: string, configId: string): Promise<void>;
  /**
   * Claims the delivery of one state to one configuration with its first try taken, leased until
   * `leaseUntil` — recording it, or taking the one `update` recorded: true for the first
   * caller only.
   */
  claimDelivery(key: DeliveryKey, task: Task, at: number, leaseUntil: number): Promise<boolean>;
  /**
   * Takes the next try of a delivery still `sending` after `seen` tries, leased until
   * `leaseUntil`: true for one caller only (the others saw it taken).
   */
  takeAttempt(key: DeliveryKey, seen: number, at: number, leaseUntil: number): Promise<boolean>;
  /** A try failed: the next one is due at `nextAt` (unless someone took it since). */
  retryAt(key: DeliveryKey, attempts: number, nextAt: number, error: string): Promise<void>;
  /** Deliveries still `sending` whose lease or next try is due at `now`, oldest first. */
  dueDeliveries(
    now: number,
    limit: number,
  ): Promise<(DeliveryKey & { attempts: number; task: Task | undefined })[]>;
  /** Records how a delivery ended (`delivered`, or `dead` after its last try). */
  endDelivery(
    key: DeliveryKey,
    outcome: { status: 'delivered' | 'dead'; attempts: number; error?: string; at: number },
  ): Promise<void>;
  /**
   * Retention: deletes the tasks that ended (completed, failed, canceled, rejected) and last moved
   * before `before` (epoch ms), with their push configurations and deliveries, at most
   * `batchSize` tasks per transaction (default 1,000); resolves how many tasks. A task that has
   * not ended is never deleted.
   */
  prune(before: number, batchSize?: number): Promise<number>;
  /** Deliveries by task (tests and operators: what reached a client, what went dead). */
  deliveries(
    taskId: string,
  ): Promise<
    { configId: string; state: string; status: string; attempts: number; error: string | null }[]
  >;
}
