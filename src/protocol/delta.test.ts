import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  acceptDeltaEntry,
  checkDeltaDomain,
  checkDeltaPath,
  checkDeltaValue,
  parseDeltaEntry,
} from './delta.js';
import { FORBIDDEN_PATH_SEGMENTS } from './limits.js';

describe('delta domain and path rules', () => {
  it('refuse every prototype-reaching name, as a domain and as any segment of a path', () => {
    for (const name of FORBIDDEN_PATH_SEGMENTS) {
      expect(checkDeltaDomain(name)).toBe(`must not be ${JSON.stringify(name)}`);
      for (const path of [name, `data.${name}`, `${name}.x`, `a.${name}.b`]) {
        expect(checkDeltaPath(path)).toBe(`must not contain the segment ${JSON.stringify(name)}`);
      }
    }
  });

  it('accept names that only resemble them', () => {
    for (const name of [
      '__proto_',
      '_proto__',
      'constructors',
      'Prototype',
      'proto',
      'construct',
    ]) {
      expect(checkDeltaDomain(name)).toBeUndefined();
      expect(checkDeltaPath(`data.${name}`)).toBeUndefined();
    }
  });
});

describe('delta value rule: plain JSON only', () => {
  class Point {
    x = 1;
  }
  const refused: [string, unknown, string][] = [
    ['a function', () => 1, 'must be plain JSON, not a function'],
    ['a symbol', Symbol('s'), 'must be plain JSON, not a symbol'],
    ['a bigint', 1n, 'must be plain JSON, not a bigint'],
    ['NaN', Number.NaN, 'must be plain JSON, not NaN'],
    ['Infinity', Infinity, 'must be plain JSON, not Infinity'],
    ['undefined', undefined, 'must be plain JSON, not undefined'],
    ['a nested Infinity', { x: Infinity }, 'must be plain JSON, not Infinity (at value.x)'],
    ['a nested bigint', { n: [1n] }, 'must be plain JSON, not a bigint (at value.n[0])'],
    ['a Map', new Map(), 'must be plain JSON, not an instance of Map'],
    ['a Date', new Date(0), 'must be plain JSON, not an instance of Date'],
    [
      'a class instance',
      [new Point()],
      'must be plain JSON, not an instance of Point (at value[0])',
    ],
    [
      'an object whose prototype has no constructor',
      Object.create(Object.create(null) as object) as unknown,
      'must be plain JSON, not an object with a prototype other than Object.prototype',
    ],
    ['an undefined property', { a: undefined }, 'must be plain JSON, not undefined (at value.a)'],
    [
      'an own toJSON',
      { toJSON: () => 'x' },
      'must be plain JSON, not a function (at value.toJSON)',
    ],
  ];

  it.each(refused)('refuses %s, saying where it is', (_, value, reason) => {
    expect(checkDeltaValue(value)).toBe(reason);
  });

  it.each(refused)(
    'parseDeltaEntry refuses %s as a set value, fast path or not',
    (_, value, reason) => {
      const entry = { domain: 'ci', path: 'data.v', op: 'set', value };
      expect(acceptDeltaEntry(entry)).toBeUndefined();
      expect(parseDeltaEntry(entry)).toEqual({
        ok: false,
        reason: value === undefined ? 'value is required' : `value ${reason}`,
      });
    },
  );

  it('words a non-finite inc as the number it is, once', () => {
    expect(parseDeltaEntry({ domain: 'ci', path: 'data.n', op: 'inc', value: -Infinity })).toEqual({
      ok: false,
      reason: 'value must be a finite number for op "inc" (got -Infinity)',
    });
  });

  it('accepts everything JSON text can carry: the wire path is unaffected', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (generated) => {
        // What a gateway reads arrives as JSON text.
        const value = JSON.parse(JSON.stringify(generated)) as unknown;
        const problem = checkDeltaValue(value);
        if (problem !== undefined) expect(problem).toMatch(/__proto__/);
      }),
      { numRuns: 2000 },
    );
  });
});
