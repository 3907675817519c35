import { describe, expect, it } from 'vitest';
import { applyDelta } from './apply.js';
import type { JsonObject } from './json.js';

function domain(data: JsonObject = {}): JsonObject {
  return { data };
}

describe('applyDelta set', () => {
  it('replaces an existing value and reports the previous one', () => {
    const d = domain({ status: 'red' });
    expect(applyDelta(d, 'data.status', 'set', 'green')).toEqual({
      ok: true,
      previous: 'red',
      next: 'green',
    });
    expect(d).toEqual({ data: { status: 'green' } });
  });

  it('creates missing parents as plain objects', () => {
    const d = domain();
    const outcome = applyDelta(d, 'data.a.b.c', 'set', 1);
    expect(outcome).toEqual({ ok: true, previous: undefined, next: 1 });
    expect(d).toEqual({ data: { a: { b: { c: 1 } } } });
    expect(Object.getPrototypeOf((d.data as JsonObject).a)).toBe(Object.prototype);
  });

  it('sets an array element by index, and appends at index == length', () => {
    const d = domain({ items: ['a', 'b'] });
    expect(applyDelta(d, 'data.items.1', 'set', 'B').ok).toBe(true);
    expect(applyDelta(d, 'data.items.2', 'set', 'c').ok).toBe(true);
    expect(d).toEqual({ data: { items: ['a', 'B', 'c'] } });
  });

  it('walks through array elements (data.items.0.name)', () => {
    const d = domain({ items: [{ name: 'x' }] });
    expect(applyDelta(d, 'data.items.0.name', 'set', 'y')).toMatchObject({
      ok: true,
      previous: 'x',
    });
    expect(d).toEqual({ data: { items: [{ name: 'y' }] } });
  });

  it('creates a new element object when the missing parent is at index == length', () => {
    const d = domain({ items: [] });
    expect(applyDelta(d, 'data.items.0.name', 'set', 'first').ok).toBe(true);
    expect(d).toEqual({ data: { items: [{ name: 'first' }] } });
  });

  it('rejects an index that would leave a gap, and a non-index segment on an array', () => {
    const d = domain({ items: ['a'] });
    const gap = applyDelta(d, 'data.items.5', 'set', 'x');
    expect(gap).toEqual({ ok: false, reason: expect.stringContaining('gap') as unknown });
    const named = applyDelta(d, 'data.items.first', 'set', 'x');
    expect(named).toEqual({
      ok: false,
      reason: expect.stringContaining('not an index') as unknown,
    });
    const leadingZero = applyDelta(d, 'data.items.00', 'set', 'x');
    expect(leadingZero.ok).toBe(false);
    expect(d).toEqual({ data: { items: ['a'] } });
  });

  it('rejects a path through a scalar with the object unchanged', () => {
    const d = domain({ count: 3, label: 'x', none: null });
    const before = structuredClone(d);
    for (const path of ['data.count.x', 'data.label.length', 'data.none.x', 'data.count.x.y']) {
      const outcome = applyDelta(d, path, 'set', 1);
      expect(outcome.ok, path).toBe(false);
      if (!outcome.ok) expect(outcome.reason).toMatch(/goes through/);
    }
    expect(d).toEqual(before);
  });

  it('copies the value, so mutating the input later does not change the state', () => {
    const d = domain();
    const value = { nested: [1, 2] };
    applyDelta(d, 'data.v', 'set', value);
    value.nested.push(3);
    expect(d).toEqual({ data: { v: { nested: [1, 2] } } });
  });

  it('refuses values that are not plain JSON', () => {
    const d = domain();
    for (const value of [new Date(0), () => 1, Number.NaN, { a: undefined }, [1n], new Map()]) {
      expect(applyDelta(d, 'data.v', 'set', value).ok).toBe(false);
    }
    expect(d).toEqual(domain());
  });
});

describe('applyDelta inc', () => {
  it('adds to a number', () => {
    const d = domain({ n: 2 });
    expect(applyDelta(d, 'data.n', 'inc', -1)).toEqual({ ok: true, previous: 2, next: 1 });
  });

  it('treats an absent value as 0, creating parents', () => {
    const d = domain();
    expect(applyDelta(d, 'data.stats.runs', 'inc', 5)).toEqual({
      ok: true,
      previous: undefined,
      next: 5,
    });
    expect(d).toEqual({ data: { stats: { runs: 5 } } });
  });

  it('rejects inc on a string, an object, an array, null and a boolean', () => {
    const d = domain({ s: '1', o: {}, a: [], z: null, b: true });
    const before = structuredClone(d);
    for (const key of ['s', 'o', 'a', 'z', 'b']) {
      const outcome = applyDelta(d, `data.${key}`, 'inc', 1);
      expect(outcome.ok, key).toBe(false);
      if (!outcome.ok) expect(outcome.reason).toMatch(/inc needs a number/);
    }
    expect(d).toEqual(before);
  });

  it('rejects a non-finite operand and an overflowing sum', () => {
    const d = domain({ n: Number.MAX_VALUE });
    expect(applyDelta(d, 'data.n', 'inc', Number.POSITIVE_INFINITY).ok).toBe(false);
    expect(applyDelta(d, 'data.n', 'inc', '1').ok).toBe(false);
    const overflow = applyDelta(d, 'data.n', 'inc', Number.MAX_VALUE);
    expect(overflow).toEqual({ ok: false, reason: 'inc at data.n overflows' });
    expect(d).toEqual({ data: { n: Number.MAX_VALUE } });
  });
});

describe('applyDelta push', () => {
  it('appends to an array and reports its size before and after', () => {
    const d = domain({ list: [1] });
    const outcome = applyDelta(d, 'data.list', 'push', 2);
    expect(outcome).toEqual({
      ok: true,
      previous: { $summary: 'array', size: 1 },
      next: { $summary: 'array', size: 2 },
    });
    expect(d).toEqual({ data: { list: [1, 2] } });
  });

  it('treats an absent value as []', () => {
    const d = domain();
    expect(applyDelta(d, 'data.new.list', 'push', { id: 1 }).ok).toBe(true);
    expect(d).toEqual({ data: { new: { list: [{ id: 1 }] } } });
  });

  it('rejects push on an object, a string and a number with the object unchanged', () => {
    const d = domain({ o: { a: 1 }, s: 'x', n: 1 });
    const before = structuredClone(d);
    for (const key of ['o', 's', 'n']) {
      const outcome = applyDelta(d, `data.${key}`, 'push', 1);
      expect(outcome.ok, key).toBe(false);
      if (!outcome.ok) expect(outcome.reason).toMatch(/push needs an array/);
    }
    expect(d).toEqual(before);
  });

  it('pushes onto a nested array element (data.matrix.0)', () => {
    const d = domain({ matrix: [[1]] });
    expect(applyDelta(d, 'data.matrix.0', 'push', 2).ok).toBe(true);
    expect(d).toEqual({ data: { matrix: [[1, 2]] } });
  });
});

describe('prototype pollution', () => {
  const attempts = [
    'data.__proto__.polluted',
    '__proto__.polluted',
    'data.constructor.prototype.polluted',
    'constructor.prototype.polluted',
    'data.a.prototype',
    'data.__proto__',
  ];

  for (const op of ['set', 'inc', 'push'] as const) {
    it(`rejects forbidden segments for ${op} and leaves the object and Object.prototype unchanged`, () => {
      const d = domain({ a: {} });
      const before = structuredClone(d);
      for (const path of attempts) {
        const outcome = applyDelta(d, path, op, op === 'inc' ? 1 : { polluted: true });
        expect(outcome.ok, path).toBe(false);
      }
      expect(d).toEqual(before);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.getPrototypeOf(d.data)).toBe(Object.prototype);
    });
  }

  it('rejects a value carrying a __proto__ key (as JSON.parse produces it)', () => {
    const d = domain();
    const value: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
    const outcome = applyDelta(d, 'data.v', 'set', value);
    expect(outcome).toEqual({
      ok: false,
      reason: 'value must not contain the key "__proto__"',
    });
    expect(d).toEqual(domain());
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('does not read inherited properties (toString is absent, not a function)', () => {
    const d = domain();
    expect(applyDelta(d, 'data.toString', 'inc', 1)).toEqual({
      ok: true,
      previous: undefined,
      next: 1,
    });
    expect(applyDelta(d, 'data.hasOwnProperty', 'push', 1).ok).toBe(true);
    expect(d).toEqual({ data: { toString: 1, hasOwnProperty: [1] } });
  });
});

describe('path validation', () => {
  it('rejects empty segments, over-long and over-deep paths', () => {
    const d = domain();
    expect(applyDelta(d, 'data..x', 'set', 1).ok).toBe(false);
    expect(applyDelta(d, '', 'set', 1).ok).toBe(false);
    expect(applyDelta(d, `data.${'x'.repeat(2000)}`, 'set', 1).ok).toBe(false);
    expect(applyDelta(d, Array.from({ length: 40 }, () => 'a').join('.'), 'set', 1).ok).toBe(false);
    expect(d).toEqual(domain());
  });
});

describe('forbidden segments', () => {
  it('are all 9 or 11 characters long, as the fast path of applyDelta assumes', async () => {
    const { FORBIDDEN_PATH_SEGMENTS } = await import('../protocol/index.js');
    for (const segment of FORBIDDEN_PATH_SEGMENTS) expect([9, 11]).toContain(segment.length);
  });
});
