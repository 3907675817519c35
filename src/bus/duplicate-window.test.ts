import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DuplicateWindow } from './duplicate-window.js';

/**
 * The window's rules written the plain way, to hold the table-based window to: a ring of the last
 * `capacity` additions with their expiries, and for each id the sequence number of its latest one.
 */
/** Ids of three kinds: text, lowercase hex (kept as words) and the same digits in capitals. */
function idOf(n: number): string {
  const digits = (n * 0x9e3779b1).toString(16).padStart(32, '0').slice(-32);
  if (n % 3 === 0) return `e${n}`;
  return n % 3 === 1 ? digits : digits.toUpperCase();
}

class ReferenceWindow {
  readonly #seqOf = new Map<string, number>();
  readonly #ring: { id: string; expiry: number }[] = [];
  #head = 0;

  constructor(
    readonly windowMs: number,
    readonly capacity: number,
  ) {}

  has(id: string, now: number): boolean {
    const seq = this.#seqOf.get(id);
    if (seq === undefined) return false;
    if (this.#ring[seq]!.expiry <= now) {
      this.#seqOf.delete(id);
      return false;
    }
    return true;
  }

  add(id: string, now: number): void {
    while (this.#head < this.#ring.length && this.#ring[this.#head]!.expiry <= now) this.#evict();
    if (this.#ring.length - this.#head >= this.capacity) this.#evict();
    this.#seqOf.set(id, this.#ring.length);
    this.#ring.push({ id, expiry: now + this.windowMs });
  }

  admit(id: string, now: number): boolean {
    if (this.has(id, now)) return false;
    this.add(id, now);
    return true;
  }

  get size(): number {
    return this.#seqOf.size;
  }

  #evict(): void {
    const seq = this.#head;
    this.#head += 1;
    const { id } = this.#ring[seq]!;
    if (this.#seqOf.get(id) === seq) this.#seqOf.delete(id);
  }
}

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

  it('tells apart two ids whose fingerprints are equal', () => {
    // `id-149599` and `id-312382` share one 32-bit fingerprint: only comparing the ids tells them apart.
    const w = new DuplicateWindow(60_000, 100, () => 0);
    w.add('id-149599');
    expect(w.has('id-312382')).toBe(false);
    expect(w.admit('id-312382')).toBe(true);
    expect([w.has('id-149599'), w.has('id-312382'), w.size]).toEqual([true, true, 2]);
    w.add('id-0');
    for (let i = 1; i < 100; i += 1) w.add(`other-${i}`); // evicts id-149599, then id-312382
    expect([w.has('id-149599'), w.has('id-312382'), w.has('id-0')]).toEqual([false, false, true]);
  });

  it('tells apart two hex ids whose fingerprints are equal, and a hex id from its other spellings', () => {
    // Both are kept as words; their fingerprints are equal, their words are not.
    const a = 'f7c128b049d00512d26959b588965f5b';
    const b = 'd3dc384f26b2f030ded356ceb6b4480c';
    const w = new DuplicateWindow(60_000, 100, () => 0);
    w.add(a);
    expect(w.has(b)).toBe(false);
    expect(w.admit(b)).toBe(true);
    expect([w.has(a), w.has(b), w.size]).toEqual([true, true, 2]);
    // Kept as text, so never equal to the hex id they resemble.
    // `\u0162` is not a digit, though its low byte is the code of `b`, the last digit of the id.
    const spellings = [
      a.toUpperCase(),
      `${a}0`,
      a.slice(1),
      `x${a.slice(1)}`,
      `${a.slice(0, 31)}\u0162`,
    ];
    for (const other of spellings) {
      expect(w.has(other)).toBe(false);
    }
    for (let i = 0; i < 98; i += 1) w.add(`other-${i}`); // evicts a, then b
    expect([w.has(a), w.has(b)]).toEqual([true, true]);
    w.add('other-98');
    expect([w.has(a), w.has(b)]).toEqual([false, true]);
    w.add('other-99');
    expect([w.has(a), w.has(b), w.size]).toEqual([false, false, 100]);
  });

  it('answers like the plain ring-and-map rules for any sequence of checks, records and time', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), id: fc.integer({ min: 0, max: 120 }) }),
      fc.record({ kind: fc.constant('has' as const), id: fc.integer({ min: 0, max: 120 }) }),
      fc.record({ kind: fc.constant('admit' as const), id: fc.integer({ min: 0, max: 120 }) }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 60 }) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.oneof(fc.integer({ min: 1, max: 200 }), fc.constant(1e9)),
        fc.array(op, { maxLength: 400 }),
        (capacity, windowMs, ops) => {
          let now = 0;
          const w = new DuplicateWindow(windowMs, capacity, () => now);
          const ref = new ReferenceWindow(windowMs, capacity);
          for (const o of ops) {
            if (o.kind === 'tick') now += o.ms;
            else if (o.kind === 'add') {
              w.add(idOf(o.id));
              ref.add(idOf(o.id), now);
            } else if (o.kind === 'has') {
              if (w.has(idOf(o.id)) !== ref.has(idOf(o.id), now)) return false;
            } else if (w.admit(idOf(o.id)) !== ref.admit(idOf(o.id), now)) return false;
            if (w.size !== ref.size) return false;
          }
          for (let id = 0; id <= 120; id += 1) {
            if (w.has(idOf(id)) !== ref.has(idOf(id), now)) return false;
          }
          return true;
        },
      ),
      { numRuns: 500 },
    );
  });

  it('answers like the plain rules while its ring and table grow past their first size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1025, max: 5000 }), fc.integer(), (capacity, seed) => {
        let now = 0;
        let state = seed;
        const w = new DuplicateWindow(4000, capacity, () => now);
        const ref = new ReferenceWindow(4000, capacity);
        for (let i = 0; i < 9000; i += 1) {
          now += 1;
          state = (Math.imul(state, 1103515245) + 12345) | 0;
          const id = idOf((state >>> 8) % 6000);
          if (w.admit(id) !== ref.admit(id, now)) return false;
        }
        return w.size === ref.size;
      }),
      { numRuns: 10 },
    );
  });
});
