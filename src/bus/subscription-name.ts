import { FleetgateError } from '../protocol/index.js';

const NAME = /^[A-Za-z0-9_-]{1,64}$/u;

/**
 * Checks a subscription name (also a JetStream consumer name): letters, digits, `-`, `_`, 1–64.
 *
 * @throws FleetgateError `FLEETGATE_BUS_SUBSCRIPTION_INVALID`
 */
export function checkSubscriptionName(name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new FleetgateError(
      'FLEETGATE_BUS_SUBSCRIPTION_INVALID',
      `Invalid subscription name ${JSON.stringify(name)}: use 1-64 letters, digits, '-' or '_'`,
      { details: { name } },
    );
  }
  return name;
}

/** A short, loggable message of any thrown value. */
export function errorMessage(error: unknown): string {
  if (error instanceof FleetgateError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}
