import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isFleetgateError } from './errors.js';
import type { WorldStateDeltaEntry } from './index.js';
import {
  checkDeltaDomain,
  checkDeltaValue,
  BLAST_V1_URI,
  DELTA_OPS,
  EFFECT_DOMAIN_V1_URI,
  extractWorldStateDeltas,
  HITL_MODE_V1_URI,
  parseDeltaPayload,
  readDeclarations,
  readPart,
  readStreamEvent,
  WORLDSTATE_DELTA_MIME,
} from './index.js';

const segment = fc
  .stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,8}$/)
  .filter((s) => !['__proto__', 'constructor', 'prototype'].includes(s));
const validEntry: fc.Arbitrary<WorldStateDeltaEntry> = fc
  .record({
    domain: fc.stringMatching(/^[a-z][a-z_]{0,15}$/),
    path: fc.array(segment, { minLength: 1, maxLength: 5 }).map((s) => s.join('.')),
    op: fc.constantFrom(...DELTA_OPS),
    value: fc.jsonValue({ maxDepth: 2 }),
    inc: fc.double({ noNaN: true, noDefaultInfinity: true }),
  })
  .map(({ inc, ...e }) => ({ ...e, value: e.op === 'inc' ? inc : e.value === null ? 0 : e.value }))
  // The generators can spell a forbidden domain (`constructor`) or an own `__proto__` key.
  .filter(
    (e) => checkDeltaDomain(e.domain) === undefined && checkDeltaValue(e.value) === undefined,
  );

/** JSON values and JSON values shaped a little like what the parsers expect. */
const anyJson = fc.oneof(
  fc.jsonValue(),
  fc.record({ deltas: fc.array(fc.jsonValue(), { maxLength: 5 }) }),
  fc.record({
    capabilities: fc.record({
      extensions: fc.array(
        fc.record({
          uri: fc.constantFrom(BLAST_V1_URI, HITL_MODE_V1_URI, EFFECT_DOMAIN_V1_URI, 'x'),
          params: fc.oneof(
            fc.jsonValue(),
            fc.record({ skills: fc.dictionary(fc.string(), fc.jsonValue()) }),
          ),
        }),
      ),
    }),
    skills: fc.jsonValue(),
  }),
);

describe('parsers on arbitrary JSON', () => {
  it('readDeclarations, readPart and parseDeltaPayload never throw', () => {
    fc.assert(
      fc.property(anyJson, (value) => {
        readDeclarations(value);
        readPart(value);
        parseDeltaPayload(value);
      }),
      { numRuns: 500 },
    );
  });

  it('task and stream decoders either decode or throw a coded error', () => {
    fc.assert(
      fc.property(anyJson, (value) => {
        for (const decode of [extractWorldStateDeltas, readStreamEvent]) {
          try {
            decode(value);
          } catch (error) {
            if (!isFleetgateError(error, 'FLEETGATE_TASK_INVALID')) throw error;
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('valid entries always survive, whatever invalid entries surround them', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), validEntry, fc.jsonValue()), { maxLength: 20 }),
        (rows) => {
          const deltas = rows.map(([valid, entry, junk]) => (valid ? entry : { junk }));
          const task = {
            id: 't',
            status: { state: 'TASK_STATE_COMPLETED' },
            artifacts: [
              {
                artifactId: 'a',
                parts: [{ data: { deltas }, metadata: { mimeType: WORLDSTATE_DELTA_MIME } }],
              },
            ],
          };
          const result = extractWorldStateDeltas(task);
          expect(result.entries).toEqual(rows.filter(([v]) => v).map(([, e]) => e));
          expect(result.rejected.map((r) => r.index)).toEqual(
            rows.flatMap(([v], i) => (v ? [] : [i])),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
