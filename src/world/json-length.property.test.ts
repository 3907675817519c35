import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { jsonLength } from './json-length.js';

/** Text with every kind of character JSON escapes: quotes, controls, lone and paired surrogates. */
const text = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom('"', '\\', '\b', '\t', '\n', '\f', '\r', '\u0001', '\u007f') }),
  fc.string({ unit: fc.constantFrom('\ud83d', '\ude00', 'a', '\udbff', '\udc00') }),
);
const number = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(-0, 1e20, 123456789012345680000, 1e21, 2 ** 53 + 2, -(2 ** 60), 1e-7, 0.1),
);
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    number,
    fc.boolean(),
    fc.constant(null),
    tie('array'),
    tie('object'),
  ),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(text, tie('value'), { maxKeys: 5 }),
}));

describe('jsonLength of objects and arrays', () => {
  it('is the length of their JSON text', () => {
    fc.assert(
      fc.property(fc.oneof(json.array, json.object), (value) => {
        expect(jsonLength(value)).toBe(JSON.stringify(value).length);
      }),
      { numRuns: 2000 },
    );
  });

  it('asks JSON.stringify about anything that is not plain JSON', () => {
    class Point {
      x = 1;
    }
    const odd: unknown[] = [
      { a: undefined, b: 1 },
      [undefined, () => 1],
      { when: new Date(0) },
      { toJSON: () => 'short' },
      Object.assign([1, 2], { toJSON: () => 'x' }),
      { p: new Point() },
      Object.assign(Object.create(null) as object, { k: 'v' }),
      { deep: JSON.parse(`${'['.repeat(80)}1${']'.repeat(80)}`) as unknown },
    ];
    for (const value of odd) expect(jsonLength(value)).toBe(JSON.stringify(value).length);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(jsonLength(cycle)).toBe(Number.POSITIVE_INFINITY);
  });
});
