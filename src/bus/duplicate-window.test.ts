import { describe, expect, it } from 'vitest';
import { DuplicateWindow } from './duplicate-window.js';

describe('DuplicateWindow', () => {
  it('forgets ids after the window and keeps at most maxIds, oldest out first', () => {
    let now = 0;
    const w = new DuplicateWindow(100, 3, () => now);
    for (const id of ['a', 'b', 'c', 'd']) w.add(id);
    expect(['a', 'b', 'c', 'd'].map((id) => w.has(id))).toEqual([false, true, true, true]);
    expect(w.size).toBe(3);
    now = 150;
    w.add('e');
    expect(['b', 'c', 'd', 'e'].map((id) => w.has(id))).toEqual([false, false, false, true]);
    expect(w.size).toBe(1);
  });

  it('keeps the newer expiry of an id added again', () => {
    let now = 0;
    const w = new DuplicateWindow(100, 10, () => now);
    w.add('x');
    now = 80;
    w.add('x');
    now = 120;
    w.add('y'); // evicts the first addition of x, not x itself
    expect(w.has('x')).toBe(true);
    now = 181;
    expect(w.has('x')).toBe(false);
  });

  it('stays bounded at maxIds after many more adds', () => {
    const w = new DuplicateWindow(3_600_000, 1000);
    for (let i = 0; i < 200_000; i += 1) w.add(`id-${i}`);
    expect(w.size).toBe(1000);
    expect(w.has('id-199999')).toBe(true);
    expect(w.has('id-198999')).toBe(false);
  });
});
