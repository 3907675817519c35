/** Event ids: deterministic where a duplicate is possible, random otherwise. */
import { createHash, randomUUID } from 'node:crypto';

/**
 * A stable event id derived from `parts` (sha256, hex, 32 characters). The same parts always give
 * the same id, in every process and on every replica, so the JetStream bus drops a re-send by
 * `Nats-Msg-Id` and consumers can dedupe by id. Parts are length-prefixed, so
 * `('ab', 'c')` and `('a', 'bc')` differ.
 *
 * @example
 * ```ts
 * const id = deterministicEventId('world.state.delta', agent, taskId);
 * await bus.publish('world.state.delta', payload, { id });
 * ```
 */
export function deterministicEventId(...parts: readonly (string | number)[]): string {
  if (parts.length === 0) throw new TypeError('deterministicEventId needs at least one part');
  const hash = createHash('sha256');
  for (const part of parts) {
    const text = String(part);
    hash.update(`${Buffer.byteLength(text)}:${text};`);
  }
  return hash.digest('hex').slice(0, 32);
}

/**
 * Makes unique event ids cheaply: a random per-generator prefix plus a counter, so a bus can
 * stamp a million events a second without calling the CSPRNG for each.
 */
export function createEventIdGenerator(): () => string {
  const prefix = randomUUID();
  let counter = 0;
  return () => {
    counter += 1;
    return `${prefix}-${counter.toString(36)}`;
  };
}

/** Current time as RFC 3339, formatted at most once per millisecond (cheap on hot paths). */
export function createClock(): () => string {
  let lastMs = -1;
  let lastText = '';
  return () => {
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      lastText = new Date(now).toISOString();
    }
    return lastText;
  };
}
