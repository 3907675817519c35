/**
 * How many bytes a task's deltas take as JSON, against what a gateway reads of an agent's answer:
 * past `LIMITS.agentResponseBytes` (16 MiB, the gateway's default `limits.agentResponseBytes`) the
 * gateway refuses the answer and the task fails with every delta in it. A `world.state.delta`
 * over `limits.eventBytes` is no such limit: the gateway publishes it in parts, nothing dropped.
 */
import type { WorldStateDeltaEntry } from '../protocol/index.js';
import { LIMITS } from '../protocol/index.js';

/** Bytes of an answer left for what it carries besides the deltas (status, history, artifacts). */
const ANSWER_ROOM_BYTES = 1024 * 1024;

/**
 * Deltas past this many bytes as JSON draw a warning (15 MiB): with the rest of the answer they
 * reach, or come within 1 MiB of, the gateway's default `limits.agentResponseBytes`.
 */
export const DELTAS_WARNING_BYTES = LIMITS.agentResponseBytes - ANSWER_ROOM_BYTES;

/** Why deltas of `bytes` as JSON are a problem, and what to do, after the subject (`task t1 reported`). */
export function deltasTooLarge(bytes: number): string {
  return (
    `${bytes} bytes of deltas as JSON, more than ${DELTAS_WARNING_BYTES}: the answer that carries ` +
    `them nears or passes what a gateway reads of an answer by default (limits.agentResponseBytes, ` +
    `${LIMITS.agentResponseBytes} bytes); past it the gateway refuses the answer ` +
    `(FLEETGATE_AGENT_RESPONSE_TOO_LARGE) and the task fails with none of its deltas applied. ` +
    `Report fewer or smaller deltas, or raise the gateway's limits.agentResponseBytes`
  );
}

/** Bytes of one entry as JSON (UTF-8). */
export function entryBytes(entry: WorldStateDeltaEntry): number {
  return Buffer.byteLength(JSON.stringify(entry), 'utf8');
}

/** Bytes of a list of entries as JSON (UTF-8): what `JSON.stringify(entries)` takes. */
export function deltasBytes(entries: readonly WorldStateDeltaEntry[]): number {
  let total = 2;
  for (const entry of entries) total += entryBytes(entry);
  return entries.length === 0 ? total : total + entries.length - 1;
}

/**
 * What is known of a task's deltas' size as JSON without serialising them: the exact bytes of
 * those measured, an upper bound of the rest. Each entry counts a separator byte, so the list
 * takes one byte more than both together (its brackets, less the last separator).
 */
export interface DeltaBytes {
  /** Entries measured, the first of the task's list. */
  measured: number;
  /** Their bytes as JSON, a separator each. */
  exact: number;
  /** An upper bound of the bytes of the others, a separator each. */
  pending: number;
}

/** The most bytes one UTF-16 unit of a string takes in JSON (`\u001f`). */
const MAX_BYTES_PER_UNIT = 6;
/** The longest a finite number is in JSON (`-0.0000012345678901234567` is 25). */
const MAX_NUMBER_BYTES = 32;
/** An entry's JSON besides its domain, path and value text, with the longest op. */
const ENTRY_FRAME_BYTES = '{"domain":"","path":"","op":"push","value":}'.length;

/** A counter handed down a copy: adds up an upper bound of the copy's bytes as JSON. */
export interface SizeCounter {
  bytes: number;
}

/** An upper bound of an entry's bytes as JSON besides its value (counted by {@link snapshot}). */
export function entryFrameBound(domain: string, path: string): number {
  return ENTRY_FRAME_BYTES + MAX_BYTES_PER_UNIT * (domain.length + path.length);
}

/**
 * A copy of a value that passed the protocol's rule, so plain JSON at most 64 levels deep, adding
 * to `size` an upper bound of its bytes as JSON: a later change to the caller's object cannot
 * reach what is sent, nor take it past the size just checked, and the copy's size is known
 * without serialising it. A primitive is its own copy. Written by hand because, for such values,
 * it costs a fraction of `structuredClone` or a JSON round trip (0.1 µs against 0.8 / 0.5 µs for
 * a small object).
 */
export function snapshot(value: unknown, size: SizeCounter): unknown {
  if (typeof value !== 'object' || value === null) {
    // A string, or a finite number, a boolean or null: nothing else passes the rule.
    size.bytes +=
      typeof value === 'string' ? value.length * MAX_BYTES_PER_UNIT + 2 : MAX_NUMBER_BYTES;
    return value;
  }
  if (Array.isArray(value)) {
    size.bytes += 2 + value.length;
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i += 1) out[i] = snapshot(value[i], size);
    return out;
  }
  // No own `__proto__` key passes the rule, so plain assignment makes plain own properties.
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  let bytes = 2;
  for (const key of Object.keys(record)) {
    bytes += key.length * MAX_BYTES_PER_UNIT + 4;
    out[key] = snapshot(record[key], size);
  }
  size.bytes += bytes;
  return out;
}
