import { describe, expect, it } from 'vitest';
import { tooDeepAt } from './index.js';

/** An array nested `depth` levels: `[[…[]…]]`. */
function nested(depth: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < depth; i += 1) value = [value];
  return value;
}

describe('tooDeepAt', () => {
  it('passes values within the limit, scalars and empty containers included', () => {
    expect(tooDeepAt(nested(64), 64)).toBeUndefined();
    expect(tooDeepAt({ a: { b: [1, 'x', null] } }, 3)).toBeUndefined();
    expect(tooDeepAt('text', 0)).toBeUndefined();
    expect(tooDeepAt(null, 0)).toBeUndefined();
  });

  it('names the first container past the limit', () => {
    expect(tooDeepAt(nested(65), 64)).toBe('[0]'.repeat(64));
    expect(tooDeepAt({ a: [1, { b: {} }] }, 3)).toBe('.a[1].b');
    expect(tooDeepAt({ 'a key': { '0': [] } }, 2)).toBe('["a key"]["0"]');
    expect(tooDeepAt([], 0)).toBe('');
  });

  it('answers for a value nested far past the stack without descending it', () => {
    expect(tooDeepAt(nested(1_000_000), 64)).toBe('[0]'.repeat(64));
  });
});
