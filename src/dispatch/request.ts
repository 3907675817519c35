import { randomUUID } from 'node:crypto';

import { Role, type Message, type Part } from '@a2a-js/sdk';

import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import type { CallInput, CallOptions } from './call-types.js';

/** The signal of a call nobody can abort (never passed to fetch). */
export const NEVER_ABORTED = new AbortController().signal;

function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: '',
  };
}

/** The user message of one call. */
export function buildMessage(input: CallInput, options: CallOptions): Message {
  const parts: Part[] = [];
  if (typeof input === 'string') {
    parts.push(textPart(input));
  } else {
    if (input.text !== undefined) parts.push(textPart(input.text));
    if (input.data !== undefined) {
      parts.push({
        content: { $case: 'data', value: input.data },
        metadata: undefined,
        filename: '',
        mediaType: 'application/json',
      });
    }
    if (input.parts !== undefined) parts.push(...input.parts);
  }
  return {
    messageId: randomUUID(),
    contextId: options.contextId ?? '',
    taskId: options.taskId ?? '',
    role: Role.ROLE_USER,
    parts,
    metadata: options.messageMetadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The coded error of a failed request (timeout and abort told apart by their signals). */
export function callError(
  cause: unknown,
  context: { agent: string; skill: string; timedOut: boolean; aborted: boolean; status?: number },
): FleetgateError {
  if (isFleetgateError(cause)) return cause;
  const details: Record<string, unknown> = { agent: context.agent, skill: context.skill };
  if (context.status !== undefined) details['status'] = context.status;
  const reason = cause instanceof Error ? cause.message : String(cause);
  if (context.timedOut) {
    return new FleetgateError(
      'FLEETGATE_CALL_TIMEOUT',
      `The call of ${context.skill} on ${context.agent} timed out.`,
      { cause, details },
    );
  }
  if (context.aborted) {
    return new FleetgateError(
      'FLEETGATE_CALL_ABORTED',
      `The call of ${context.skill} on ${context.agent} was aborted.`,
      { cause, details },
    );
  }
  return new FleetgateError(
    'FLEETGATE_CALL_FAILED',
    `The call of ${context.skill} on ${context.agent} failed: ${reason}`,
    { cause, details },
  );
}
