import { describe, expect, it } from 'vitest';
import { remember } from './index.js';

describe('remember', () => {
  it('keeps a value and hands it back', () => {
    const cache = new Map<string, number[]>();
    const value = [1, 2];
    expect(remember(cache, 4, 'a', value)).toBe(value);
    expect(cache.get('a')).toBe(value);
  });

  it('starts over once the cache holds its limit, then keeps the new entry', () => {
    const cache = new Map<string, number>();
    for (const [i, key] of ['a', 'b', 'c'].entries()) remember(cache, 3, key, i);
    expect([...cache.keys()]).toEqual(['a', 'b', 'c']);
    remember(cache, 3, 'd', 3);
    expect([...cache]).toEqual([['d', 3]]);
  });

  it('replaces the value of a key it holds without starting over below the limit', () => {
    const cache = new Map([['a', 1]]);
    remember(cache, 2, 'a', 2);
    expect([...cache]).toEqual([['a', 2]]);
  });

  it('keeps false and zero, which a lookup by ?? still takes as hits', () => {
    const cache = new Map<string, boolean | number>();
    remember(cache, 8, 'no', false);
    remember(cache, 8, 'zero', 0);
    expect(cache.get('no') ?? 'miss').toBe(false);
    expect(cache.get('zero') ?? 'miss').toBe(0);
  });
});
