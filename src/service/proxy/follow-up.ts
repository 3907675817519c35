/**
 * A follow-up message to a proxy task the agent is still working on (not ended, not asking for
 * input, not held for approval): the A2A way of adding to a task. The message is a call of the
 * task's skill, so the policy decides it as one — the same radius rules, standing approvals and
 * denials — before anything reaches the agent; let go, it is sent to the agent on the agent's own
 * task through the fleet client (the stamps, the merged extensions, the agent's credential, the
 * task terminal that settles the task once, whichever call sees its end).
 *
 * A follow-up the policy would hold for a person (`veto`, `gated`, `compound`) is refused, saying
 * so: the task's dispatch was approved for the message that started it, and a held follow-up needs
 * a record of its own that the dispatch path does not keep.
 */
import type { Message, StreamResponse } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { CallResult } from '../../dispatch/index.js';
import type { Gateway } from '../gateway.js';

/** What is sent: the client's message on the agent's task. */
export interface FollowUp {
  agent: string;
  skill: string;
  /** The proxy's task id (for errors). */
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

/**
 * Decides a follow-up to `taskId` as a call of `skill` on `agent`.
 *
 * @throws UnsupportedOperationError when the policy refuses it or would hold it for a person.
 */
export async function admitFollowUp(
  gateway: Gateway,
  call: Pick<FollowUp, 'agent' | 'skill' | 'taskId'>,
): Promise<void> {
  const { decision } = await gateway.approvals.explain(call.agent, call.skill);
  if (decision.deny !== undefined) {
    throw new UnsupportedOperationError(
      `The follow-up to task ${call.taskId} is refused by the policy (skill ${call.skill}): ${decision.deny.reason}. Nothing was sent to the agent.`,
    );
  }
  if (
    decision.standing === undefined &&
    decision.mode !== 'autonomous' &&
    decision.mode !== 'notification'
  ) {
    throw new UnsupportedOperationError(
      `A follow-up to task ${call.taskId} is a call of skill ${call.skill}, which needs approval (${decision.mode}); follow-ups are not held for approval. Send a new message (without taskId) to start a gated call.`,
    );
  }
}

/** Sends an admitted follow-up ({@link admitFollowUp}) to the agent's task. */
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
      ...(message.metadata === undefined ? {} : { messageMetadata: message.metadata }),
      ...(message.referenceTaskIds.length === 0
        ? {}
        : { referenceTaskIds: message.referenceTaskIds }),
      ...(message.extensions.length === 0 ? {} : { messageExtensions: message.extensions }),
      ...(call.metadata === undefined ? {} : { metadata: call.metadata }),
      ...(call.extensions.length === 0 ? {} : { extensions: call.extensions }),
      ...(call.onEvent === undefined ? {} : { onEvent: call.onEvent }),
    },
  );
}
