import { describe, expect, it } from 'vitest';
import { newRecordId } from './record-id.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newRecordId', () => {
  it('is a version 7 UUID whose leading 48 bits are the time it was made', () => {
    const before = Date.now();
    const id = newRecordId();
    const after = Date.now();
    expect(id).toMatch(V7);
    const ms = parseInt(id.replaceAll('-', '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('rises with every id, also many within one millisecond, and never repeats', () => {
    const ids = Array.from({ length: 5000 }, () => newRecordId());
    for (let i = 1; i < ids.length; i += 1) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
