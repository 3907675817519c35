/**
 * A message to a task the proxy already has (`message.taskId`): the answer to the agent's
 * question, through the dispatch's checkpoint, or a follow-up to a task the agent is working on.
 */
import type { Message, SendMessageRequest, StreamResponse } from '@a2a-js/sdk';
import {
  RequestMalformedError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { FLEETGATE_GATEWAY_V1_URI } from '../../protocol/index.js';
import type { FollowUp } from './follow-up.js';
import { admitFollowUp, sendFollowUp } from './follow-up.js';
import type { ProxyCore } from './proxy-core.js';
import { agentReferences } from './proxy-send.js';
import { awaitingApproval, callerOf, fleetgateMeta } from './proxy-task-meta.js';
import type { ProxyTask } from './task-store.js';
import { ended } from './task-store.js';
import { clientEvent, clientTask } from './task-view.js';

/** A task a message continues, and how to send the message. */
export interface ContinuedTask {
  task: ProxyTask;
  /** True for a follow-up to a working task, false for the answer to the agent's question. */
  followUp: boolean;
  /** Sends the message; resolves the task once the agent answered it. */
  answer: (params: SendMessageRequest, streaming: boolean) => Promise<ProxyTask | undefined>;
}

/**
 * A message that continues a task (`message.taskId`, the proxy's id): the answer to the
 * question the agent asked. It goes the way every answer to a task's question goes — the
 * dispatch's checkpoint in the approvals inbox, answered by the caller — so the dispatcher sends
 * it to the agent on the agent's own task, with the task's skill, stamps and extensions, and the
 * tracker follows the task to its end (deltas once, on the single terminal). The answer is not
 * gated again: the call was admitted (and approved, when it had to be) when the task started.
 * A `compound` skill is the exception: its checkpoints need an approver, not the caller.
 * Resolves once the agent answered (the task ended or asks again). A message to a task the agent
 * is working on (not asking) is a follow-up instead, decided by the policy as a call of the
 * task's skill (`follow-up.ts`).
 */
export async function continueTask(
  core: ProxyCore,
  agent: string,
  params: SendMessageRequest & { message: Message },
  context: ServerCallContext,
): Promise<ContinuedTask> {
  const { message } = params;
  const { gateway, store, local } = core;
  if (message.messageId === '') {
    throw new RequestMalformedError('message.messageId is required');
  }
  const known = await store.get(message.taskId);
  if (known === undefined || known.agent !== agent || known.caller !== callerOf(context)) {
    throw new TaskNotFoundError(`Task not found: ${message.taskId}`);
  }
  const task = (await core.sync(known.id)) ?? known;
  if (ended(task.state)) {
    throw new UnsupportedOperationError(
      `Task ${task.id} already ended ${task.state}; send a message without taskId to start a new one.`,
    );
  }
  if (awaitingApproval(task)) {
    const approvalId = fleetgateMeta(task.task)?.approvalId;
    throw new UnsupportedOperationError(
      `Task ${task.id} waits for the gateway's approval${approvalId === undefined ? '' : ` ${approvalId}`}; it takes a message once the agent asks for one.`,
    );
  }
  if (task.state !== 'input-required') {
    // A message to a task the agent is working on: a follow-up, decided as a call of the
    // task's skill before anything is sent.
    const skill = fleetgateMeta(task.task)?.skill;
    const agentTaskId = await core.agentTaskId(task.id);
    if (agentTaskId === null || skill === undefined) {
      throw new UnsupportedOperationError(
        `Task ${task.id} is still being sent to the agent; send the follow-up once GetTask shows it working.`,
      );
    }
    const call = {
      agent,
      skill,
      taskId: task.id,
      agentTaskId,
      contextId: task.contextId,
      message: { ...message, referenceTaskIds: await agentReferences(core, agent, message) },
      extensions: (context.requestedExtensions ?? []).filter(
        (uri) => uri !== FLEETGATE_GATEWAY_V1_URI,
      ),
    };
    const admitted = await admitFollowUp(gateway, {
      ...call,
      metadata: params.metadata,
      requestedBy: callerOf(context),
    });
    if (admitted.held) {
      const held = heldFollowUp(core, task, admitted.approvalId);
      return { task: held, followUp: true, answer: () => Promise.resolve(held) };
    }
    return {
      task,
      followUp: true,
      answer: (_params, streaming) =>
        followUp(core, task, { ...call, metadata: params.metadata, streaming }, context),
    };
  }
  const text = message.parts
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter((t) => t !== '')
    .join('\n');
  if (text === '') {
    throw new RequestMalformedError(
      `message.parts: the answer to task ${task.id}'s question needs a text part.`,
    );
  }
  // The dispatcher opens the question's checkpoint as it sees it: wait for it briefly.
  let checkpoint: { id: string; mode: string } | undefined;
  const deadline = Date.now() + 5000;
  for (;;) {
    checkpoint = (await gateway.approvals.list({ status: 'pending', includeSnoozed: true })).find(
      (a) => a.dispatchId === task.id && a.kind === 'checkpoint',
    );
    if (checkpoint !== undefined || Date.now() > deadline || core.closed) break;
    await core.nap(task.id, 200);
  }
  if (checkpoint === undefined) {
    throw new UnsupportedOperationError(
      `Task ${task.id} has no open question to answer; read it again with GetTask.`,
    );
  }
  if (checkpoint.mode === 'compound') {
    throw new UnsupportedOperationError(
      `The skill of task ${task.id} is compound: an approver answers its question (approval ${checkpoint.id}, ${core.dashboardLink(checkpoint.id)}), not the caller.`,
    );
  }
  const approvalId = checkpoint.id;
  return {
    task,
    followUp: false,
    answer: async () => {
      local.add(task.id);
      try {
        await gateway.approvals.answer(
          approvalId,
          callerOf(context),
          text,
          'answered through the A2A proxy',
        );
      } finally {
        local.delete(task.id);
      }
      return core.sync(task.id);
    },
  };
}

/**
 * The task with the newest of its follow-ups still waiting for approval under
 * `metadata.fleetgate.followUp` (as the answer to that follow-up showed it), or as it is when none
 * waits: what `GetTask` shows of a task that has not ended.
 */
export async function withPendingFollowUp(core: ProxyCore, task: ProxyTask): Promise<ProxyTask> {
  const pending = await core.gateway.approvals.list({
    status: 'pending',
    includeSnoozed: true,
    dispatchId: task.id,
  });
  let newest: (typeof pending)[number] | undefined;
  for (const approval of pending) {
    if (approval.kind !== 'follow-up') continue;
    if (newest === undefined || approval.createdAt >= newest.createdAt) newest = approval;
  }
  return newest === undefined ? task : heldFollowUp(core, task, newest.id);
}

/**
 * The answer to a follow-up the policy held: the task as it is (the agent goes on working), with
 * the approval the follow-up waits for under `metadata.fleetgate.followUp`.
 */
function heldFollowUp(core: ProxyCore, task: ProxyTask, approvalId: string): ProxyTask {
  const base = task.task;
  const followUp = { approvalId, approvalUrl: core.dashboardLink(approvalId) };
  return {
    ...task,
    task: {
      ...base,
      metadata: {
        ...(base.metadata ?? {}),
        fleetgate: { ...fleetgateMeta(base), followUp },
      },
    },
  };
}

/**
 * Sends an admitted follow-up to the agent's task (`follow-up.ts`); a streaming one publishes
 * the agent's events to the task's subscribers here. Resolves the task with the agent's answer.
 */
async function followUp(
  core: ProxyCore,
  task: ProxyTask,
  call: Omit<FollowUp, 'onEvent'>,
  context: ServerCallContext,
): Promise<ProxyTask | undefined> {
  const { gateway, feed } = core;
  const ids = { id: task.id, contextId: task.contextId };
  const result = await sendFollowUp(gateway, {
    ...call,
    ...(call.streaming
      ? { onEvent: (event: StreamResponse) => feed.publish(task.id, clientEvent(event, ids)) }
      : {}),
  });
  if (!call.streaming) {
    for (const uri of result.echoedExtensions ?? []) context.addActivatedExtension(uri);
  }
  const record = await gateway.dispatchRecord(task.id);
  const synced = record === undefined ? undefined : await core.sync(task.id, { record, result });
  const now = synced ?? task;
  // The agent's task as it answered (its history has the follow-up), in the proxy's ids.
  return result.task === undefined || ended(now.state)
    ? now
    : { ...now, task: clientTask(result.task, ids, now.task.metadata) };
}
