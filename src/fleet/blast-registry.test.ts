import { describe, expect, it } from 'vitest';

import { BlastRegistry } from './blast-registry.js';

describe('BlastRegistry', () => {
  it('answers (agent, skill) → declaration and unknown as undefined', () => {
    const blast = new BlastRegistry();
    blast.declare('quinn', 'pr_review', { radius: 'repo' });
    expect(blast.get('quinn', 'pr_review')).toEqual({ radius: 'repo' });
    expect(blast.get('quinn', 'other')).toBeUndefined();
    expect(blast.get('other', 'pr_review')).toBeUndefined();
  });

  it('replaces an agent’s declarations from its card and forgets skills no longer declared', () => {
    const blast = new BlastRegistry();
    blast.declareFromCard('quinn', { blast: { a: { radius: 'self' }, b: { radius: 'fleet' } } });
    blast.declareFromCard('quinn', { blast: { a: { radius: 'repo', note: 'widened' } } });
    expect(blast.all()).toEqual([
      { agent: 'quinn', skill: 'a', declaration: { radius: 'repo', note: 'widened' } },
    ]);
  });

  it('keeps a frozen copy of each declaration, own keys only, `__proto__` included', () => {
    const blast = new BlastRegistry();
    const declared = { radius: 'repo' as const, note: 'n' };
    const odd = JSON.parse('{"radius":"self","__proto__":{"radius":"public"}}') as {
      radius: 'self';
    };
    blast.declareFromCard('quinn', { blast: { a: declared, b: odd } });
    declared.note = 'changed after';
    const a = blast.get('quinn', 'a')!;
    expect(a).toEqual({ radius: 'repo', note: 'n' });
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.getPrototypeOf(a)).toBe(Object.prototype);
    const b = blast.get('quinn', 'b')!;
    expect(Object.keys(b)).toEqual(['radius', '__proto__']);
    expect(Object.getPrototypeOf(b)).toBe(Object.prototype);
    expect(Object.isFrozen(b)).toBe(true);
  });

  it('clears an agent', () => {
    const blast = new BlastRegistry();
    blast.declare('a', 's', { radius: 'self' });
    blast.declare('b', 's', { radius: 'self' });
    blast.clearAgent('a');
    expect(blast.all().map((e) => e.agent)).toEqual(['b']);
  });

  it('compares skills by radius, unknown as public by default', () => {
    const blast = new BlastRegistry();
    blast.declare('a', 'narrow', { radius: 'self' });
    blast.declare('a', 'wide', { radius: 'fleet' });
    const narrow = { agent: 'a', skill: 'narrow' };
    const wide = { agent: 'a', skill: 'wide' };
    const unknown = { agent: 'a', skill: 'unknown' };
    expect(blast.compare(narrow, wide)).toBeLessThan(0);
    expect(blast.compare(unknown, wide)).toBeGreaterThan(0);
    expect(blast.compare(unknown, narrow, 'self')).toBe(0);
    expect([wide, unknown, narrow].sort((x, y) => blast.compare(x, y))).toEqual([
      narrow,
      wide,
      unknown,
    ]);
  });
});
