/**
 * Parking: what the outbox relay does with a row no bus will ever take (larger than the relay's
 * or the bus's limit, a payload that is not JSON, an invalid topic). The row leaves
 * `fleetgate_outbox` for `fleetgate_outbox_parked` with the reason, so the rows after it go on.
 */
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import { errorMessage } from './subscription-name.js';
import { defined } from '../protocol/fields/index.js';

/** A row set aside in a round, with the error that says why. */
export interface ParkedRow {
  id: string;
  topic: string;
  bytes: number;
  payload: string;
  error: FleetgateError;
}

/** Errors no retry can fix: the bus refuses this event every time. */
export function isPoisonError(error: unknown): boolean {
  return (
    isFleetgateError(error, 'FLEETGATE_EVENT_TOO_LARGE') ||
    isFleetgateError(error, 'FLEETGATE_TOPIC_INVALID')
  );
}

/** The parked form of a row, with the coded error (`FLEETGATE_OUTBOX_EVENT_PARKED`) saying why. */
export function parkedRow(
  row: { id: string; topic: string; payload: string },
  error: unknown,
): ParkedRow {
  const reason = errorMessage(error);
  return {
    id: row.id,
    topic: row.topic,
    bytes: Buffer.byteLength(row.payload, 'utf8'),
    payload: row.payload,
    error: new FleetgateError(
      'FLEETGATE_OUTBOX_EVENT_PARKED',
      `Outbox event ${row.id} (${row.topic}) can never be published and was parked: ${reason}`,
      { cause: error, details: { eventId: row.id, topic: row.topic, reason } },
    ),
  };
}

/** The payload of a row, or why no bus will take it whatever it does: too large, not JSON. */
export function readRow(
  row: { id: string; topic: string; payload: string },
  maxPayloadBytes: number | undefined,
): { payload: unknown } | { parked: ParkedRow } {
  if (maxPayloadBytes !== undefined && row.payload.length > maxPayloadBytes / 3) {
    // A string of n UTF-16 units is at most 3n UTF-8 bytes: only a long one is measured.
    const bytes = Buffer.byteLength(row.payload, 'utf8');
    if (bytes > maxPayloadBytes) {
      return {
        parked: parkedRow(
          row,
          new FleetgateError(
            'FLEETGATE_EVENT_TOO_LARGE',
            `The payload is ${bytes} bytes, more than the limit of ${maxPayloadBytes}.`,
            { details: { bytes, limit: maxPayloadBytes } },
          ),
        ),
      };
    }
  }
  try {
    return { payload: JSON.parse(row.payload) as unknown };
  } catch (error) {
    return { parked: parkedRow(row, error) };
  }
}

/** The agent, skill and task of a payload, read from its first bytes (it may be huge). */
export function describePayload(payload: string): {
  agent: string;
  skill: string;
  taskId?: string;
} {
  const head = payload.slice(0, 65_536);
  const field = (name: string): string | undefined => {
    const match = new RegExp(`"${name}":"([^"\\\\]{1,256})"`).exec(head);
    return match?.[1];
  };
  const taskId = field('taskId');
  return {
    agent: field('source') ?? field('agent') ?? '',
    skill: field('skill') ?? '',
    ...defined({ taskId }),
  };
}
