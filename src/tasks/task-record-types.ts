/**
 * The task records' types, shared by the store's two implementations (`task-records-sqlite.ts`,
 * `task-records-kysely.ts`).
 */
import type { OutboxDatabase } from '../bus/index.js';
import type { SettlePath, TerminalRecords } from '../dispatch/index.js';
import type { TaskStateName } from '../protocol/index.js';
import { normalizeTaskState } from '../protocol/index.js';

/** The durable record of one task the gateway follows. */
export interface TaskRecord {
  agent: string;
  taskId: string;
  skill: string;
  correlationId: string;
  /** The last state seen. */
  state: TaskStateName;
  /** sha256 (hex) of the task's push-notification secret; never the secret itself. */
  pushTokenHash: string | null;
  createdAt: number;
  updatedAt: number;
  /** When the task was claimed terminal; null while in flight. */
  terminalAt: number | null;
  terminalVia: SettlePath | null;
}

/** The table of {@link createStoreTaskRecords} (migration `0004_tasks`). */
export interface TaskTable {
  agent: string;
  task_id: string;
  skill: string;
  correlation_id: string;
  state: string;
  push_token_hash: string | null;
  created_at: number;
  updated_at: number;
  terminal_at: number | null;
  terminal_via: string | null;
}

/** The task records' table. */
export interface TasksDatabase {
  fleetgate_task: TaskTable;
}

/** What the claim's transaction can write: the task records and the outbox. */
export type ClaimDatabase = TasksDatabase & OutboxDatabase;

/** Durable task records with the terminal claim. */
export interface TaskRecordStore extends TerminalRecords {
  /** Records a task to follow; a record that exists already is kept as it is. */
  create(record: Omit<TaskRecord, 'terminalAt' | 'terminalVia'>): Promise<void>;
  get(agent: string, taskId: string): Promise<TaskRecord | undefined>;
  /** Every record with this task id (task ids are the agents', so two agents may share one). */
  byTaskId(taskId: string): Promise<TaskRecord[]>;
  /**
   * Records not yet terminal, oldest first, one page at a time (restart recovery pages through
   * all of them): `limit` records (default 1,000) after the record `after` (the last of the
   * previous page).
   */
  inFlight(page?: {
    after?: Pick<TaskRecord, 'createdAt' | 'agent' | 'taskId'>;
    limit?: number;
  }): Promise<TaskRecord[]>;
  /**
   * Retention: deletes records claimed terminal before `before` (epoch ms), at most `batchSize`
   * per statement (default 1,000); resolves how many. Records in flight are never deleted. Keep
   * terminal records longer than any path can still see the task (the tracking time, a late
   * push): the record is what makes a late sighting a no-op.
   */
  prune(before: number, batchSize?: number): Promise<number>;
  /** Notes a non-terminal state seen; no effect on a terminal record. */
  noteState(agent: string, taskId: string, state: TaskStateName, at: number): Promise<void>;
}

/** A record from its row (either database; PostgreSQL answers `bigint` columns as strings). */
export function fromTaskRow(row: TaskTable): TaskRecord {
  return {
    agent: row.agent,
    taskId: row.task_id,
    skill: row.skill,
    correlationId: row.correlation_id,
    state: normalizeTaskState(row.state),
    pushTokenHash: row.push_token_hash,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    terminalAt: row.terminal_at === null ? null : Number(row.terminal_at),
    terminalVia: row.terminal_via as SettlePath | null,
  };
}

/** The claim {@link TaskRecordStore.claim} takes: how the task ended, and the call when known. */
export type TaskClaim = Parameters<TaskRecordStore['claim']>[2];
