import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BLAST_RADII } from '../protocol/index.js';
import { ALERT_SEVERITIES, compareSeverity, scaleSeverity } from './severity.js';

describe('scaleSeverity', () => {
  it('gives the documented severity for each base and radius', () => {
    const table = Object.fromEntries(
      ALERT_SEVERITIES.map((base) => [base, BLAST_RADII.map((r) => scaleSeverity(base, r))]),
    );
    expect(table).toEqual({
      info: ['info', 'info', 'info', 'warning', 'error'],
      warning: ['info', 'warning', 'warning', 'error', 'critical'],
      error: ['warning', 'error', 'error', 'critical', 'critical'],
      critical: ['error', 'critical', 'critical', 'critical', 'critical'],
    });
  });

  it('is monotonic in the radius, self never above the base, public at least error', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ALERT_SEVERITIES),
        fc.constantFrom(...BLAST_RADII),
        fc.constantFrom(...BLAST_RADII),
        (base, a, b) => {
          const [narrow, wide] = BLAST_RADII.indexOf(a) <= BLAST_RADII.indexOf(b) ? [a, b] : [b, a];
          expect(
            compareSeverity(scaleSeverity(base, narrow), scaleSeverity(base, wide)),
          ).toBeLessThanOrEqual(0);
          expect(compareSeverity(scaleSeverity(base, 'self'), base)).toBeLessThanOrEqual(0);
          expect(compareSeverity(scaleSeverity(base, 'public'), 'error')).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });

  it('scales an unknown radius as public unless configured otherwise', () => {
    expect(scaleSeverity('warning', 'unknown')).toBe('critical');
    expect(scaleSeverity('warning', 'unknown', { unknownRadius: 'repo' })).toBe('warning');
  });
});
