/**
 * What the client sees of a proxy task, from its dispatch: held for approval, rejected by the
 * gate, or the agent's task in the proxy's ids (read from the agent when another replica sent the
 * call).
 */
import type { Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { CANCEL_REQUESTED_CODE } from '../../calls/index.js';
import type { CallResult, DispatchRecord } from '../../dispatch/index.js';
import { normalizeTaskState } from '../../protocol/index.js';
import type { Gateway, GatewayPorts } from '../gateway-types.js';
import type { ProxyMetadata } from './proxy-task-meta.js';
import { fleetgateMeta, TASK_STATE_OF } from './proxy-task-meta.js';
import type { ProxyTask } from './task-store.js';
import { clientTask, withStatus } from './task-view.js';

/** What a view reads of the proxy (its `ProxyCore`): the agent clients, the inbox, the links. */
export interface ViewCore {
  readonly gateway: Pick<Gateway, 'approvals'>;
  readonly ports: Pick<GatewayPorts, 'agentClient'>;
  readonly options: { onError: (error: unknown, where: string) => void };
  dashboardLink(approvalId: string): string;
}

/** A task as the client sees it. */
export interface TaskView {
  task: Task;
}

/** The states of a dispatch that has reached the agent (or failed on the way). */
type SentStatus = Exclude<DispatchRecord['status'], 'awaiting-approval' | 'rejected'>;

/** The task's own metadata with the proxy's, `extra` added. */
type MetadataWith = (extra: Partial<ProxyMetadata>) => Record<string, unknown>;

/** The agent's task, read from the agent (another replica sent the call). */
async function agentTask(core: ViewCore, agent: string, taskId: string): Promise<Task | undefined> {
  try {
    const built = await core.ports.agentClient(agent);
    return await built.client.getTask(
      { tenant: '', id: taskId },
      { serviceParameters: { ...built.headers } },
    );
  } catch (error) {
    core.options.onError(error, 'proxy.agent-task');
    return undefined;
  }
}

/** The pending approval that holds a dispatch (not a question, not a follow-up), from the inbox. */
async function heldApprovalOf(core: ViewCore, dispatchId: string): Promise<string | undefined> {
  const pending = await core.gateway.approvals.list({
    status: 'pending',
    includeSnoozed: true,
    dispatchId,
  });
  return pending.find((a) => a.kind === 'dispatch' || a.kind === 'veto')?.id;
}

/** What the client sees of a task, from its dispatch (and the call's result when known). */
export async function view(
  core: ViewCore,
  current: ProxyTask,
  record: DispatchRecord,
  result?: CallResult,
): Promise<TaskView | undefined> {
  const base = current.task;
  const meta = fleetgateMeta(base);
  const ids = { id: current.id, contextId: current.contextId };
  const dashboardLink = (approvalId: string): string => core.dashboardLink(approvalId);
  const metadata: MetadataWith = (extra) => ({
    ...(base.metadata ?? {}),
    fleetgate: { ...meta, ...extra },
  });
  switch (record.status) {
    case 'awaiting-approval': {
      const reason = record.result?.error?.message ?? 'approval required';
      // The dispatching call writes the approval id on the row once `dispatch` returns; a read
      // racing it (an event, another replica) asks the inbox, so no view goes out without it.
      const approvalId = meta?.approvalId ?? (await heldApprovalOf(core, current.id));
      const text =
        `Awaiting approval${approvalId === undefined ? '' : ` ${approvalId}`}: ${reason}.` +
        (meta?.skillVia === 'widest-radius' ? ` (${meta.skillReason})` : '') +
        (approvalId === undefined ? '' : ` Decide it at ${dashboardLink(approvalId)}`);
      const task = withStatus(
        {
          ...base,
          metadata: metadata({
            reason,
            ...(approvalId === undefined
              ? {}
              : { approvalId, approvalUrl: dashboardLink(approvalId) }),
          }),
        },
        TaskState.TASK_STATE_INPUT_REQUIRED,
        text,
        {
          fleetgate: {
            awaiting: 'approval',
            ...(approvalId === undefined
              ? {}
              : { approvalId, approvalUrl: dashboardLink(approvalId) }),
            reason,
          },
        },
      );
      return { task };
    }
    case 'rejected':
      return rejectedView(base, record, metadata);
    case 'running':
    case 'awaiting-input':
    case 'completed':
    case 'failed':
    case 'canceled':
      break;
  }
  const agentTaskId = record.taskId ?? result?.task?.id;
  // A call canceled at someone's request: who and why, beside the agent's canceled task.
  const asked = record.result?.error;
  const canceled =
    record.status === 'canceled' && asked?.code === CANCEL_REQUESTED_CODE
      ? { code: asked.code, reason: asked.message }
      : {};
  if (result?.task !== undefined) {
    return { task: clientTask(result.task, ids, metadata(canceled)) };
  }
  if (agentTaskId === undefined || agentTaskId === null) {
    return viewWithoutAgentTask(current, record.status, record, result, metadata);
  }
  const fetched = await agentTask(core, current.agent, agentTaskId);
  if (fetched === undefined) {
    if (record.status === 'running') return undefined;
    const state = normalizeTaskState(
      record.result?.state ?? (record.status === 'awaiting-input' ? 'input-required' : 'failed'),
    );
    return { task: withStatus(base, TASK_STATE_OF[state], record.result?.text) };
  }
  return { task: clientTask(fetched, ids, metadata(canceled)) };
}

/** A task the gate rejected (or whose approval expired): the agent was not called. */
function rejectedView(base: Task, record: DispatchRecord, metadata: MetadataWith): TaskView {
  const error = record.result?.error;
  const expired = error?.code === 'FLEETGATE_APPROVAL_EXPIRED';
  const reason = error?.message ?? 'rejected by the policy gate';
  return {
    task: withStatus(
      { ...base, metadata: metadata({ reason }) },
      expired ? TaskState.TASK_STATE_FAILED : TaskState.TASK_STATE_REJECTED,
      `${expired ? 'The approval expired' : 'Rejected'}: ${reason}. The agent was not called.`,
      { fleetgate: { code: error?.code ?? 'FLEETGATE_DISPATCH_DENIED', reason } },
    ),
  };
}

/** A task the agent has no task of (yet, or at all: it answered with a message, or failed). */
function viewWithoutAgentTask(
  current: ProxyTask,
  status: SentStatus,
  record: DispatchRecord,
  result: CallResult | undefined,
  metadata: MetadataWith,
): TaskView {
  const base = current.task;
  const ids = { id: current.id, contextId: current.contextId };
  switch (status) {
    case 'running':
      return { task: withStatus(base, TaskState.TASK_STATE_WORKING) };
    case 'completed': {
      // The agent answered with a message, not a task.
      const reply = result?.message;
      const task = withStatus(
        { ...base, metadata: metadata({}) },
        TaskState.TASK_STATE_COMPLETED,
        reply === undefined ? (record.result?.text ?? '') : undefined,
      );
      if (reply !== undefined && task.status !== undefined) {
        task.status.message = { ...reply, taskId: ids.id, contextId: ids.contextId };
      }
      return { task };
    }
    case 'failed':
    case 'canceled':
    case 'awaiting-input': {
      const error = record.result?.error;
      return {
        task: withStatus(
          { ...base, metadata: metadata({}) },
          status === 'canceled' ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED,
          error === undefined ? 'The call failed.' : `${error.code}: ${error.message}`,
          error === undefined ? undefined : { fleetgate: { code: error.code } },
        ),
      };
    }
  }
}
