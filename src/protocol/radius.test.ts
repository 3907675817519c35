import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BLAST_ORDER,
  BLAST_RADII,
  compareRadius,
  compareHitlMode,
  contrastRatio,
  createOrderedScale,
  HITL_MODES,
  hitlModeAtLeast,
  isBlastRadius,
  maxHitlMode,
  maxRadius,
  parseHitlMode,
  parseRadius,
  RADIUS_PALETTE,
  radiusAtLeast,
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

describe('ordered scales', () => {
  it('compares, takes maxima, thresholds and parses on one implementation for radii and modes', () => {
    expect(radiusAtLeast('fleet', 'repo')).toBe(true);
    expect(radiusAtLeast('project', 'repo')).toBe(false);
    expect(radiusAtLeast('repo', 'repo')).toBe(true);
    expect(hitlModeAtLeast('gated', 'veto')).toBe(true);
    expect(maxHitlMode('veto', undefined, 'notification')).toBe('veto');
    expect(maxHitlMode()).toBeUndefined();
    expect(parseRadius('repo')).toBe('repo');
    expect(parseHitlMode('gated')).toBe('gated');
    for (const bad of ['__proto__', 'toString', 'constructor', 'REPO', '', 3, null, undefined]) {
      expect(parseRadius(bad)).toBeUndefined();
      expect(isBlastRadius(bad)).toBe(false);
      expect(parseHitlMode(bad)).toBeUndefined();
    }
  });

  it('atLeast agrees with compare for every pair', () => {
    const scale = createOrderedScale(['low', 'mid', 'high'] as const);
    for (const a of scale.values) {
      for (const b of scale.values) expect(scale.atLeast(a, b)).toBe(scale.compare(a, b) >= 0);
    }
    expect(scale.order).toEqual({ low: 0, mid: 1, high: 2 });
  });

  it('refuses a scale with a repeated name', () => {
    expect(() => createOrderedScale(['a', 'b', 'a'])).toThrow(TypeError);
  });
});

describe('RADIUS_PALETTE', () => {
  it('gives every radius a hex fg/bg pair meeting WCAG AA contrast (4.5:1) and distinct colours', () => {
    for (const radius of BLAST_RADII) {
      const { fg, bg, ansi } = RADIUS_PALETTE[radius];
      expect(fg).toMatch(/^#[0-9a-f]{6}$/);
      expect(bg).toMatch(/^#[0-9a-f]{6}$/);
      expect(contrastRatio(fg, bg), radius).toBeGreaterThanOrEqual(4.5);
      expect(ansi).toBeGreaterThanOrEqual(16);
      expect(ansi).toBeLessThanOrEqual(255);
    }
    expect(new Set(BLAST_RADII.map((r) => RADIUS_PALETTE[r].bg)).size).toBe(BLAST_RADII.length);
    expect(new Set(BLAST_RADII.map((r) => RADIUS_PALETTE[r].ansi)).size).toBe(BLAST_RADII.length);
  });

  it('measures contrast as WCAG does', () => {
    expect(contrastRatio('#000000', '#ffffff')).toBeCloseTo(21, 5);
    expect(contrastRatio('#777777', '#777777')).toBe(1);
  });
});
