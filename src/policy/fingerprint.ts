/**
 * Binds an approval to the exact call: SHA-256 over the canonical JSON (RFC 8785 style) of the
 * agent, the skill, the normalised input parts, the effective radius and the policy version.
 */
import { createHash } from 'node:crypto';
import { FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { BlastRadius } from '../protocol/index.js';
import type { PolicyRules } from './types.js';

/**
 * Canonical JSON in the manner of RFC 8785 (JCS): object keys sorted by UTF-16 code units, no
 * whitespace, numbers in their shortest round-trip form (ECMAScript `Number#toString`, which JCS
 * adopts), strings escaped as `JSON.stringify` does. `undefined` members are left out, as in JSON.
 *
 * @throws FleetgateError `FLEETGATE_LIMIT_EXCEEDED` for values JSON cannot carry (NaN, Infinity,
 *   bigint, functions, cycles).
 */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const write = (v: unknown): string => {
    switch (typeof v) {
      case 'string':
        return JSON.stringify(v);
      case 'number':
        if (!Number.isFinite(v)) throw notJson(`number ${String(v)}`);
        // -0 serialises as 0 (JCS); JSON.stringify already prints the shortest round-trip form.
        return JSON.stringify(v);
      case 'boolean':
        return v ? 'true' : 'false';
      case 'object': {
        if (v === null) return 'null';
        if (seen.has(v)) throw notJson('a cycle');
        seen.add(v);
        let out: string;
        if (Array.isArray(v)) {
          out = `[${v.map((item: unknown) => (item === undefined ? 'null' : write(item))).join(',')}]`;
        } else {
          const record = v as Record<string, unknown>;
          const keys = Object.keys(record)
            .filter((k) => record[k] !== undefined)
            .sort();
          out = `{${keys.map((k) => `${JSON.stringify(k)}:${write(record[k])}`).join(',')}}`;
        }
        seen.delete(v);
        return out;
      }
      case 'undefined':
      case 'bigint':
      case 'function':
      case 'symbol':
        throw notJson(typeof v);
    }
  };
  return write(value);
}

function notJson(what: string): FleetgateError {
  return new FleetgateError('FLEETGATE_LIMIT_EXCEEDED', `Cannot fingerprint ${what}: not JSON.`);
}

/** The input of a call as the fingerprint sees it: one entry per part, in order. */
export type NormalisedPart =
  | { kind: 'text'; text: string }
  | { kind: 'data'; data: unknown }
  | { kind: 'message'; message: unknown; metadata?: unknown; extensions?: unknown };

/**
 * Normalises a dispatch input (`text` and/or `data`, or a client's whole message) into parts. An
 * input without a message normalises as it always did, so earlier approvals keep their
 * fingerprints.
 */
export function normaliseInput(input: {
  text?: string;
  data?: unknown;
  message?: unknown;
  metadata?: unknown;
  extensions?: unknown;
}): NormalisedPart[] {
  const parts: NormalisedPart[] = [];
  if (input.text !== undefined) parts.push({ kind: 'text', text: input.text.normalize('NFC') });
  if (input.data !== undefined) parts.push({ kind: 'data', data: input.data });
  if (input.message !== undefined) {
    // The message id is left out: a client's retry of the same call is the same call.
    const { messageId: _id, ...message } = input.message as Record<string, unknown>;
    parts.push({
      kind: 'message',
      message,
      ...defined({ metadata: input.metadata, extensions: input.extensions }),
    });
  }
  return parts;
}

/** SHA-256 hex of a string. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The version of a rule set: a short hash of its canonical JSON, so any change of the rules voids
 * approvals given under the old ones.
 */
export function policyVersion(rules: PolicyRules): string {
  return sha256Hex(canonicalJson(rules)).slice(0, 16);
}

/** The fingerprint of one call. */
export function callFingerprint(call: {
  agent: string;
  skill: string;
  input: readonly NormalisedPart[];
  radius: BlastRadius | null;
  policyVersion: string;
}): string {
  return sha256Hex(
    canonicalJson({
      v: 1,
      agent: call.agent,
      skill: call.skill,
      input: call.input,
      radius: call.radius ?? 'unknown',
      policy: call.policyVersion,
    }),
  );
}
