/**
 * The task as the proxy's client sees it: the gateway's task id in place of the agent's (the
 * context, parts, artifacts and metadata as the agent sent them), and the tasks the proxy makes
 * itself while a call waits for approval or after the gate refused it.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import type { Message, StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';

/** The ids a client knows a proxy task by. */
export interface ProxyIds {
  id: string;
  contextId: string;
}

function retagMessage(message: Message | undefined, ids: ProxyIds): Message | undefined {
  if (message === undefined) return undefined;
  return { ...message, taskId: message.taskId === '' ? '' : ids.id };
}

function retagStatus(status: TaskStatus | undefined, ids: ProxyIds): TaskStatus | undefined {
  if (status === undefined) return undefined;
  return { ...status, message: retagMessage(status.message, ids) };
}

/** The agent's task under the proxy's id. */
export function clientTask(
  agentTask: Task,
  ids: ProxyIds,
  metadata?: Record<string, unknown>,
): Task {
  return {
    ...agentTask,
    id: ids.id,
    contextId: agentTask.contextId === '' ? ids.contextId : agentTask.contextId,
    status: retagStatus(agentTask.status, ids),
    history: agentTask.history.map((m) => retagMessage(m, ids)!),
    metadata:
      metadata === undefined ? agentTask.metadata : { ...(agentTask.metadata ?? {}), ...metadata },
  };
}

/** One stream event of the agent under the proxy's id. */
export function clientEvent(event: StreamResponse, ids: ProxyIds): StreamResponse {
  const payload = event.payload;
  switch (payload?.$case) {
    case undefined:
      return event;
    case 'task':
      return { payload: { $case: 'task', value: clientTask(payload.value, ids) } };
    case 'message':
      return { payload: { $case: 'message', value: retagMessage(payload.value, ids)! } };
    case 'statusUpdate':
      return {
        payload: {
          $case: 'statusUpdate',
          value: {
            ...payload.value,
            taskId: ids.id,
            status: retagStatus(payload.value.status, ids),
          },
        },
      };
    case 'artifactUpdate':
      return { payload: { $case: 'artifactUpdate', value: { ...payload.value, taskId: ids.id } } };
  }
}

/** An agent-role message with one text part (and metadata). */
export function statusMessage(
  ids: ProxyIds,
  text: string,
  metadata?: Record<string, unknown>,
): Message {
  return {
    messageId: randomUUID(),
    contextId: ids.contextId,
    taskId: ids.id,
    role: Role.ROLE_AGENT,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The task with a new status (the proxy's own: waiting, refused, failed before the agent). */
export function withStatus(
  task: Task,
  state: TaskState,
  text?: string,
  messageMetadata?: Record<string, unknown>,
): Task {
  const ids = { id: task.id, contextId: task.contextId };
  return {
    ...task,
    status: {
      state,
      message: text === undefined ? undefined : statusMessage(ids, text, messageMetadata),
      timestamp: new Date().toISOString(),
    },
  };
}

/** The first task of a call: submitted, the client's message in its history. */
export function submittedTask(
  ids: ProxyIds,
  message: Message,
  metadata: Record<string, unknown>,
): Task {
  return {
    id: ids.id,
    contextId: ids.contextId,
    status: {
      state: TaskState.TASK_STATE_SUBMITTED,
      message: undefined,
      timestamp: new Date().toISOString(),
    },
    artifacts: [],
    history: [{ ...message, taskId: ids.id, contextId: ids.contextId }],
    metadata,
  };
}

/**
 * The events that tell a subscriber a task moved from what it saw to `task`: the artifacts it
 * has not seen, then the new status.
 */
export function progressEvents(task: Task, seenArtifacts: number): StreamResponse[] {
  const events: StreamResponse[] = task.artifacts.slice(seenArtifacts).map((artifact) => ({
    payload: {
      $case: 'artifactUpdate' as const,
      value: {
        taskId: task.id,
        contextId: task.contextId,
        artifact,
        append: false,
        lastChunk: true,
        metadata: undefined,
      },
    },
  }));
  events.push({
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: task.id,
        contextId: task.contextId,
        status: task.status,
        metadata: undefined,
      },
    },
  });
  return events;
}

/** Trims a task's history as `historyLength` asks (undefined: all, 0: none, N: the last N). */
export function withHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };
}
