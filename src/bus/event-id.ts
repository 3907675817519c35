/** Event ids: deterministic where a duplicate is possible, random otherwise. */
import { hash, randomUUID } from 'node:crypto';

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
  // One string hashed in one call: the same bytes as updating a hash part by part, a fraction
  // of the cost (no Hash object, one crossing into the runtime).
  let input = '';
  for (const part of parts) {
    const text = String(part);
    input += `${Buffer.byteLength(text)}:${text};`;
  }
  return hash('sha256', input, 'hex').slice(0, 32);
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

/**
 * Current time as RFC 3339 (`toISOString`), cheap on hot paths: the same text within a
 * millisecond, and within a second only the milliseconds are rewritten — a `Date` and its
 * formatting cost several microseconds on a cold path, once per event.
 */
export function createClock(): () => string {
  let lastMs = Number.NaN;
  let lastText = '';
  /** Start of the second `prefix` formats, and `YYYY-MM-DDTHH:mm:ss.` of it. */
  let secondStart = Number.NaN;
  let prefix = '';
  return () => {
    const now = Date.now();
    if (now === lastMs) return lastText;
    lastMs = now;
    const ms = now - secondStart;
    if (ms >= 0 && ms < 1000) {
      lastText = `${prefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
    } else {
      lastText = new Date(now).toISOString();
      // `….mmmZ`: everything before the milliseconds, whatever the year's width.
      prefix = lastText.slice(0, -4);
      secondStart = now - Number(lastText.slice(-4, -1));
    }
    return lastText;
  };
}
