/** Wire format of events on NATS: the JSON envelope as the message body, the id as `Nats-Msg-Id`. */
import { FleetgateError } from '../../protocol/index.js';
import type { EventEnvelope } from '../../protocol/index.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Headers Fleetgate adds to a dead-lettered message. */
export const DEAD_LETTER_HEADERS = {
  subscription: 'Fleetgate-Dead-Letter-Subscription',
  deliveries: 'Fleetgate-Dead-Letter-Deliveries',
  error: 'Fleetgate-Dead-Letter-Error',
  streamSequence: 'Fleetgate-Dead-Letter-Stream-Seq',
} as const;

/** Encodes an envelope as UTF-8 JSON. */
export function encodeEnvelope(event: EventEnvelope): Uint8Array {
  return encoder.encode(JSON.stringify(event));
}

/**
 * Decodes and checks a message body. `topic` comes from the subject (the routing truth), so a
 * body cannot claim another topic than the one it was delivered on.
 *
 * @throws FleetgateError `FLEETGATE_BUS_EVENT_INVALID`
 */
export function decodeEnvelope(data: Uint8Array, topic: string): EventEnvelope {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(data));
  } catch (cause) {
    throw new FleetgateError('FLEETGATE_BUS_EVENT_INVALID', `Event on ${topic} is not JSON`, {
      cause,
      details: { topic },
    });
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    !('id' in parsed) ||
    typeof parsed.id !== 'string' ||
    !('time' in parsed) ||
    typeof parsed.time !== 'string' ||
    !('correlationId' in parsed) ||
    typeof parsed.correlationId !== 'string' ||
    !('payload' in parsed)
  ) {
    throw new FleetgateError(
      'FLEETGATE_BUS_EVENT_INVALID',
      `Event on ${topic} lacks a string id, time or correlationId, or a payload`,
      { details: { topic } },
    );
  }
  return {
    id: parsed.id,
    topic,
    time: parsed.time,
    correlationId: parsed.correlationId,
    payload: parsed.payload,
  };
}
