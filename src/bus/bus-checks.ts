/**
 * The checks both buses make before they touch a queue or the server, so that the in-memory and
 * the JetStream bus refuse the same calls with the same codes (the contract suite runs on both).
 */
import { FleetgateError } from '../protocol/index.js';
import { checkSubscriptionName } from './subscription-name.js';
import { parsePattern } from './topic-pattern.js';
import type { SubscribeOptions } from './types.js';

/**
 * Checks what `subscribe()` was given, pattern first, and returns the subscription name.
 *
 * @throws FleetgateError `FLEETGATE_TOPIC_INVALID` (pattern), `FLEETGATE_BUS_SUBSCRIPTION_INVALID` (name)
 */
export function checkSubscription(pattern: string, options: SubscribeOptions): string {
  parsePattern(pattern);
  return checkSubscriptionName(options.name);
}

/**
 * Checks the explicit event id of a `publish()`: none, or a non-empty string.
 *
 * @throws FleetgateError `FLEETGATE_BUS_PUBLISH_FAILED`
 */
export function checkEventId(id: unknown): void {
  if (id !== undefined && (typeof id !== 'string' || id.length === 0)) {
    throw new FleetgateError('FLEETGATE_BUS_PUBLISH_FAILED', 'Event id must be a non-empty string');
  }
}

/** The refusal of a bus that is closing or closed, naming the topic or pattern it was asked for. */
export function busClosed(details: { topic: string } | { pattern: string }): FleetgateError {
  return new FleetgateError('FLEETGATE_BUS_CLOSED', undefined, { details });
}
