/**
 * The two events every execution publishes, without the SDK's protobuf ceremony: the task first,
 * the final status last (where a `withEffects` executor's reported effects go out).
 */
import type { Message } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import type { ExecutionEventBus } from '@a2a-js/sdk/server';
import { AgentEvent } from '@a2a-js/sdk/server';

/** How a turn of a task ends: a terminal state, or waiting on the caller. */
export type TaskEnd =
  'completed' | 'failed' | 'canceled' | 'rejected' | 'input-required' | 'auth-required';

const STATES: Readonly<Record<TaskEnd | 'working', TaskState>> = {
  working: TaskState.TASK_STATE_WORKING,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
  rejected: TaskState.TASK_STATE_REJECTED,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
};

/** The ids an event needs: a `RequestContext` has them. */
export interface TaskIds {
  readonly taskId: string;
  readonly contextId: string;
}

function agentMessage(ids: TaskIds, text: string): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: ids.contextId,
    taskId: ids.taskId,
    role: Role.ROLE_AGENT,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * Publishes the task, state `working`: the first event of every execution, follow-up turns
 * included (the SDK refuses a stream that starts otherwise).
 */
export function startTask(bus: ExecutionEventBus, ids: TaskIds): void {
  bus.publish(
    AgentEvent.task({
      id: ids.taskId,
      contextId: ids.contextId,
      status: { state: STATES.working, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [],
      metadata: undefined,
    }),
  );
}

/**
 * Publishes the final status of this turn (default `completed`, with an optional status text) and
 * finishes the bus. With a `withEffects` executor, the effects the task reported go out right
 * before a terminal status.
 */
export function endTask(
  bus: ExecutionEventBus,
  ids: TaskIds,
  state: TaskEnd = 'completed',
  text?: string,
): void {
  bus.publish(
    AgentEvent.statusUpdate({
      taskId: ids.taskId,
      contextId: ids.contextId,
      status: {
        state: STATES[state],
        message: text === undefined ? undefined : agentMessage(ids, text),
        timestamp: new Date().toISOString(),
      },
      metadata: undefined,
    }),
  );
  bus.finished();
}
