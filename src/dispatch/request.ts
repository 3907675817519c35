import { randomUUID } from 'node:crypto';

import { Message as MessageCodec, Role, type Message, type Part } from '@a2a-js/sdk';

import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import type { HeldInput } from '../protocol/index.js';
import type { CallInput, CallOptions } from './call-types.js';
import { defined } from '../protocol/fields/index.js';

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
    messageId: options.messageId ?? randomUUID(),
    contextId: options.contextId ?? '',
    taskId: options.taskId ?? '',
    role: Role.ROLE_USER,
    parts,
    metadata: options.messageMetadata,
    extensions: options.messageExtensions === undefined ? [] : [...options.messageExtensions],
    referenceTaskIds: options.referenceTaskIds === undefined ? [] : [...options.referenceTaskIds],
  };
}

/**
 * What a held input sends: its text and data, or a client's whole message (v1.0 wire JSON) with
 * the options that carry the rest of it — metadata, context, references, extensions, the id.
 *
 * @throws FleetgateError `FLEETGATE_PART_INVALID` when the message does not decode.
 */
export function heldCall(input: HeldInput): { input: CallInput; options: CallOptions } {
  const plain = defined({ text: input.text, data: input.data });
  const options: CallOptions = defined({ metadata: input.metadata, extensions: input.extensions });
  if (input.message === undefined) return { input: plain, options };
  let message: Message;
  try {
    message = MessageCodec.fromJSON(input.message);
  } catch (cause) {
    throw new FleetgateError('FLEETGATE_PART_INVALID', 'The message to forward does not decode.', {
      cause,
    });
  }
  if (message.metadata !== undefined) options.messageMetadata = message.metadata;
  if (message.contextId !== '') options.contextId = message.contextId;
  if (message.messageId !== '') options.messageId = message.messageId;
  if (message.referenceTaskIds.length > 0) options.referenceTaskIds = message.referenceTaskIds;
  if (message.extensions.length > 0) options.messageExtensions = message.extensions;
  return { input: { ...plain, parts: message.parts }, options };
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
