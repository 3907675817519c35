/**
 * What the proxy reads off its tasks: the metadata it adds under `fleetgate`, whether a task waits
 * for the gateway or has its answer, when two views of a task differ, and who is calling.
 */
import type { Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import type { TaskStateName } from '../../protocol/index.js';
import type { ResolvedSkill } from './skill.js';
import type { TaskReader } from './task-query.js';
import type { ClientProtocol, ProxyTask } from './task-store.js';
import { ended } from './task-store.js';

/** Metadata the proxy adds to its tasks, under `fleetgate`. */
export interface ProxyMetadata {
  agent: string;
  skill: string;
  skillVia: ResolvedSkill['via'];
  skillReason: string;
  approvalId?: string;
  approvalUrl?: string;
  /** Why the gateway held, rejected or canceled the call. */
  reason?: string;
  /** The coded error of a call the gateway ended (`FLEETGATE_DISPATCH_CANCELED`: canceled at someone's request). */
  code?: string;
  /**
   * On the answer to a follow-up the policy held: the approval it waits for. Once let go it is
   * sent on the task; GetTask, a subscription or a push show what follows.
   */
  followUp?: { approvalId: string; approvalUrl: string };
}

/** The proxy's metadata of a task, when it has some. */
export function fleetgateMeta(task: Task): ProxyMetadata | undefined {
  const meta = task.metadata?.['fleetgate'] as ProxyMetadata | undefined;
  return typeof meta === 'object' && meta !== null ? meta : undefined;
}

/** True while the task waits for the gateway's approval (not for the agent's question). */
export function awaitingApproval(task: ProxyTask): boolean {
  const meta = task.task.status?.message?.metadata?.['fleetgate'] as
    { awaiting?: unknown } | undefined;
  return task.state === 'input-required' && meta?.awaiting === 'approval';
}

/** True once a blocking call has its answer: ended, or the agent waits on its caller. */
export function answered(task: ProxyTask): boolean {
  return (
    ended(task.state) ||
    task.state === 'auth-required' ||
    (task.state === 'input-required' && !awaitingApproval(task))
  );
}

/** The A2A protocol version the client speaks. */
export function protocolOf(context: ServerCallContext): ClientProtocol {
  return context.requestedVersion.startsWith('0.') ? '0.3' : '1.0';
}

/** The caller's name (`anonymous` without one). */
export function callerOf(context: ServerCallContext): string {
  return context.user?.userName ?? 'anonymous';
}

/** Whose tasks a caller reads: its own; an admin token reads every caller's. */
export function readerOf(context: ServerCallContext): TaskReader {
  const role = (context.user as { role?: unknown } | undefined)?.role;
  return { caller: callerOf(context), admin: role === 'admin' };
}

/** True when the client would see no difference between the two views of a task. */
export function sameView(a: Task, b: Task): boolean {
  return (
    a.status?.state === b.status?.state &&
    a.artifacts.length === b.artifacts.length &&
    // A follow-up adds to the history without moving the state.
    a.history.length === b.history.length &&
    JSON.stringify(a.status?.message?.parts ?? []) ===
      JSON.stringify(b.status?.message?.parts ?? [])
  );
}

/** The A2A task state of each of the gateway's state names. */
export const TASK_STATE_OF: Readonly<Record<TaskStateName, TaskState>> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
  rejected: TaskState.TASK_STATE_REJECTED,
  unknown: TaskState.TASK_STATE_UNSPECIFIED,
};
