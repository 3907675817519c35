/**
 * A follow-up message to a proxy task the agent is still working on (not ended, not asking for
 * input, not held for approval): the A2A way of adding to a task. The message is a call of the
 * task's skill, so the policy decides it as one — the same radius rules, standing approvals and
 * denials — before anything reaches the agent. Let go at once, it is sent to the agent on the
 * agent's own task through the fleet client (the stamps, the merged extensions, the agent's
 * credential, the task terminal that settles the task once, whichever call sees its end). Held
 * (`veto`, `gated`, `compound`), it waits in the inbox as a `follow-up` approval of the task's
 * dispatch, with the message as it will be sent; once approved (or its veto window ended) the
 * gateway sends it on the task, once, from whichever replica moves it on.
 */
import type { Message, StreamResponse } from '@a2a-js/sdk';
import { Message as MessageCodec } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { CallResult } from '../../dispatch/index.js';
import type { Gateway } from '../gateway-types.js';
import { defined } from '../../protocol/fields/index.js';

/** What is sent: the client's message on the agent's task. */
export interface FollowUp {
  agent: string;
  skill: string;
  /** The proxy's task id: the id of the dispatch that carries the task. */
  taskId: string;
  agentTaskId: string;
  contextId: string;
  message: Message;
  /** The request's metadata (the stamps win over its keys). */
  metadata?: Record<string, unknown> | undefined;
  /** Extension URIs the client asked for. */
  extensions: readonly string[];
  streaming: boolean;
  onEvent?: (event: StreamResponse) => void;
}

/** How the policy took a follow-up: to send now, or held for `approvalId`. */
export type FollowUpAdmission = { held: false } | { held: true; approvalId: string };

/**
 * Decides a follow-up to `call.taskId` as a call of its skill; a follow-up the policy holds is
 * recorded in the inbox with the message it will send.
 *
 * @throws UnsupportedOperationError when the policy refuses it.
 */
export async function admitFollowUp(
  gateway: Gateway,
  call: Omit<FollowUp, 'streaming' | 'onEvent'> & { requestedBy: string },
): Promise<FollowUpAdmission> {
  const { message } = call;
  const verdict = await gateway.decideFollowUp({
    dispatchId: call.taskId,
    taskId: call.agentTaskId,
    contextId: call.contextId,
    requestedBy: call.requestedBy,
    input: {
      message: MessageCodec.toJSON({
        ...message,
        taskId: call.agentTaskId,
        contextId: call.contextId,
      }) as Record<string, unknown>,
      ...defined({ metadata: call.metadata }),
      ...(call.extensions.length === 0 ? {} : { extensions: [...call.extensions] }),
    },
  });
  switch (verdict.action) {
    case 'allow':
      return { held: false };
    case 'deny':
      throw new UnsupportedOperationError(
        `The follow-up to task ${call.taskId} is refused by the policy (skill ${call.skill}): ${verdict.reason}. Nothing was sent to the agent.`,
      );
    case 'hold':
      if (verdict.approvalId === undefined) {
        throw new UnsupportedOperationError(
          `The follow-up to task ${call.taskId} was held without an approval to wait for (skill ${call.skill}): ${verdict.reason}. Nothing was sent to the agent.`,
        );
      }
      return { held: true, approvalId: verdict.approvalId };
  }
}

/** Sends a follow-up the policy let go at once ({@link admitFollowUp}) to the agent's task. */
export function sendFollowUp(gateway: Gateway, call: FollowUp): Promise<CallResult> {
  const message = call.message;
  return gateway.call(
    call.agent,
    call.skill,
    { parts: message.parts },
    {
      mode: call.streaming ? 'streaming' : 'blocking',
      taskId: call.agentTaskId,
      contextId: call.contextId,
      ...(message.messageId === '' ? {} : { messageId: message.messageId }),
      ...defined({ messageMetadata: message.metadata }),
      ...(message.referenceTaskIds.length === 0
        ? {}
        : { referenceTaskIds: message.referenceTaskIds }),
      ...(message.extensions.length === 0 ? {} : { messageExtensions: message.extensions }),
      ...defined({ metadata: call.metadata }),
      ...(call.extensions.length === 0 ? {} : { extensions: call.extensions }),
      ...defined({ onEvent: call.onEvent }),
    },
  );
}
