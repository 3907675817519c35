import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { DELTA_OPS, LIMITS, parseDeltaEntry } from '../protocol/index.js';
import { parseEvent, type WorldStateDeltaEnvelope } from './parse-event.js';

/** A value with an own `__proto__` key somewhere inside, as `JSON.parse` builds it. */
const protoValue = fc
  .tuple(
    fc.jsonValue({ maxDepth: 1 }),
    fc.array(fc.oneof(fc.constant(0), fc.stringMatching(/^[a-z]{1,3}$/)), { maxLength: 3 }),
  )
  .map(([inner, trail]) => {
    let json = `{"__proto__": ${JSON.stringify(inner)}, "k": 1}`;
    for (const step of trail)
      json = typeof step === 'number' ? `[${json}]` : `{"${step}": ${json}}`;
    return JSON.parse(json) as unknown;
  });
const deepValue = fc
  .integer({ min: LIMITS.deltaValueDepth - 2, max: LIMITS.deltaValueDepth + 2 })
  .map((n) => JSON.parse(`${'['.repeat(n)}1${']'.repeat(n)}`) as unknown);
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  protoValue,
  deepValue,
  fc.constantFrom(undefined, NaN, 'x'.repeat(LIMITS.deltaValueBytes)),
  fc.double(),
);
const name = fc.oneof(
  fc.stringMatching(/^[a-z][a-z_]{0,8}$/),
  fc.constantFrom('__proto__', 'constructor', 'prototype', '', 'a.b', 'a b', 'c\u0000i', 7),
  fc.string({ maxLength: 6 }),
);
const path = fc.oneof(
  fc.array(name, { minLength: 1, maxLength: 4 }).map((s) => s.map(String).join('.')),
  fc.constantFrom('data.x\u0000', 'data..x', Array.from({ length: 33 }, () => 'a').join('.')),
  fc.string({ maxLength: 8 }),
);
const entry = fc.record(
  { domain: name, path, op: fc.oneof(fc.constantFrom(...DELTA_OPS), fc.constant('del')), value },
  { requiredKeys: [] },
);

function envelope(deltas: unknown[]): WorldStateDeltaEnvelope {
  return {
    id: 'evt-1',
    topic: 'world.state.delta',
    time: '2026-12-01T00:00:00.000Z',
    correlationId: 'c',
    payload: { source: 'ops', skill: 'review', taskId: 't', correlationId: 'c', deltas } as never,
  };
}

describe('one rule for delta entries', () => {
  it('the protocol parser and the world state accept and reject the same entries, for the same reason', () => {
    fc.assert(
      fc.property(fc.oneof(entry, fc.anything()), (candidate) => {
        const protocol = parseDeltaEntry(candidate);
        const world = parseEvent(envelope([candidate]));
        if (protocol.ok) {
          expect(world.rejected).toEqual([]);
          const { domain, path: p, op, value: v } = world.entries[0]!;
          expect({ domain, path: p, op, value: v }).toStrictEqual(protocol.entry);
        } else {
          expect(world.entries).toEqual([]);
          expect(world.rejected.map((r) => r.reason)).toEqual([protocol.reason]);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
