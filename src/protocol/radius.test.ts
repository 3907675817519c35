import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BLAST_ORDER,
  BLAST_RADII,
  compareRadius,
  compareHitlMode,
  HITL_MODES,
  maxRadius,
} from './index.js';

describe('blast radius order', () => {
  it('orders self < project < repo < fleet < public', () => {
    expect([...BLAST_RADII].sort(compareRadius)).toEqual([
      'self',
      'project',
      'repo',
      'fleet',
      'public',
    ]);
    expect(BLAST_RADII.map((r) => BLAST_ORDER[r])).toEqual([0, 1, 2, 3, 4]);
    expect([...HITL_MODES].reverse().sort(compareHitlMode)).toEqual([...HITL_MODES]);
  });

  it('maxRadius is the widest given radius and ignores undefined', () => {
    const radius = fc.option(fc.constantFrom(...BLAST_RADII), { nil: undefined });
    fc.assert(
      fc.property(fc.array(radius), (radii) => {
        const widest = maxRadius(...radii);
        const defined = radii.filter((r) => r !== undefined);
        if (defined.length === 0) return widest === undefined;
        return defined.every((r) => compareRadius(r, widest!) <= 0) && defined.includes(widest!);
      }),
    );
    expect(maxRadius('self', undefined, 'repo')).toBe('repo');
  });
});
