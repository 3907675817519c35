import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tokensMatch } from './topic-pattern.js';
import { TopicTrie } from './topic-trie.js';

const token = fc.constantFrom('a', 'b', 'c', 'world', 'state', 'x-1');
const topicArb = fc.array(token, { minLength: 1, maxLength: 5 });
const patternArb = fc
  .tuple(
    fc.array(
      fc.oneof({ weight: 3, arbitrary: token }, { weight: 1, arbitrary: fc.constant('*') }),
      {
        minLength: 1,
        maxLength: 5,
      },
    ),
    fc.boolean(),
  )
  .map(([tokens, rest]) => (rest ? [...tokens.slice(0, -1), '>'] : tokens));

describe('TopicTrie', () => {
  it('finds exact, * and > subscriptions and nothing else', () => {
    const trie = new TopicTrie<string>();
    for (const p of ['a.b', 'a.*', 'a.>', '>', '*.b', 'a.b.c', 'b.>']) trie.add(p, p);
    expect(trie.match('a.b').sort()).toEqual(['*.b', '>', 'a.*', 'a.>', 'a.b'].sort());
    expect(trie.match('a.b.c').sort()).toEqual(['>', 'a.>', 'a.b.c'].sort());
    expect(trie.match('a').sort()).toEqual(['>']);
    expect(trie.match('b').sort()).toEqual(['>']);
    expect(trie.size).toBe(7);
  });

  it('removes values and prunes, and counts each (pattern, value) once', () => {
    const trie = new TopicTrie<number>();
    trie.add('a.*.c', 1);
    trie.add('a.*.c', 1);
    trie.add('a.*.c', 2);
    expect(trie.size).toBe(2);
    expect(trie.remove('a.*.c', 1)).toBe(true);
    expect(trie.remove('a.*.c', 1)).toBe(false);
    expect(trie.remove('a.b.c', 2)).toBe(false);
    expect(trie.match('a.x.c')).toEqual([2]);
    expect(trie.remove('a.*.c', 2)).toBe(true);
    expect(trie.match('a.x.c')).toEqual([]);
    expect(trie.size).toBe(0);
  });

  it('agrees with the reference matcher on random topics and patterns (property)', () => {
    fc.assert(
      fc.property(
        fc.array(patternArb, { minLength: 1, maxLength: 30 }),
        fc.array(topicArb, { maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (patterns, topics, removals) => {
          const trie = new TopicTrie<number>();
          const live = new Map<number, string[]>();
          patterns.forEach((p, i) => {
            trie.add(p.join('.'), i);
            live.set(i, p);
          });
          for (const r of removals) {
            const i = r % patterns.length;
            const p = live.get(i);
            if (p !== undefined) {
              expect(trie.remove(p.join('.'), i)).toBe(true);
              live.delete(i);
            }
          }
          for (const t of topics) {
            const expected = [...live].filter(([, p]) => tokensMatch(p, t)).map(([i]) => i);
            expect(trie.match(t.join('.')).sort((x, y) => x - y)).toEqual(expected);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('matches in time independent of the number of non-matching subscriptions', () => {
    const small = new TopicTrie<number>();
    const large = new TopicTrie<number>();
    small.add('fleet.card.refreshed', 0);
    large.add('fleet.card.refreshed', 0);
    for (let i = 1; i <= 10_000; i += 1) large.add(`fleet.t${i}.*`, i);
    const probe = (trie: TopicTrie<number>): number => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 20_000; i += 1) trie.match('fleet.card.refreshed');
      return Number(process.hrtime.bigint() - t0);
    };
    // Interleaved rounds, best of each: robust against a noisy shared machine.
    let bestSmall = Infinity;
    let bestLarge = Infinity;
    for (let round = 0; round < 7; round += 1) {
      bestSmall = Math.min(bestSmall, probe(small));
      bestLarge = Math.min(bestLarge, probe(large));
    }
    expect(large.match('fleet.card.refreshed')).toEqual([0]);
    // A linear scan over 10,000 patterns would be thousands of times slower; allow noise.
    expect(bestLarge).toBeLessThan(bestSmall * 5);
  });
});
