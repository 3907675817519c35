import { afterEach, describe, expect, it, vi } from 'vitest';
import { Deque } from './deque.js';
import { DuplicateWindow } from './duplicate-window.js';
import { createClock, createEventIdGenerator } from './event-stamps.js';

afterEach(() => vi.restoreAllMocks());

describe('helpers', () => {
  it('generates unique ids', () => {
    const next = createEventIdGenerator();
    const ids = new Set(Array.from({ length: 1000 }, () => next()));
    expect(ids.size).toBe(1000);
    expect(createEventIdGenerator()()).not.toBe(next());
  });

  it('generates ids that sort in the order they were made, across counter widths', () => {
    const next = createEventIdGenerator();
    // Past 36, 36^2 and 36^3 ids: the counter's base-36 text gains digits there.
    const ids = Array.from({ length: 50_000 }, () => next());
    expect([...ids].sort()).toEqual(ids);
  });

  it('formats RFC 3339 times', () => {
    expect(Number.isNaN(Date.parse(createClock()()))).toBe(false);
  });

  it('formats every millisecond as toISOString does, across seconds, years and clock steps back', () => {
    const clock = createClock();
    const times = [0, 999, 1000, 1_700_000_000_999, 1_700_000_001_000, 1_700_000_000_500];
    for (let t = -2_500; t < 2_500; t += 7) times.push(1_700_000_000_000 + t, t);
    times.push(253_402_300_799_999, 253_402_300_800_000, 1_700_000_000_001);
    const now = vi.spyOn(Date, 'now');
    for (const t of times) {
      now.mockReturnValue(t);
      expect(clock(), String(t)).toBe(new Date(t).toISOString());
    }
  });

  it('Deque keeps FIFO order across growth and wrap-around', () => {
    const q = new Deque<number>();
    const out: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      q.push(i);
      if (i % 3 === 0) out.push(q.shift()!);
    }
    while (q.length > 0) out.push(q.shift()!);
    expect(out).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(q.shift()).toBeUndefined();
  });

  it('DuplicateWindow bounds the number of ids it keeps', () => {
    const w = new DuplicateWindow(60_000, 3, () => 0);
    for (const id of ['a', 'b', 'c', 'd']) w.add(id);
    expect(w.size).toBe(3);
    expect(w.has('a')).toBe(false);
    expect(w.has('d')).toBe(true);
  });
});
