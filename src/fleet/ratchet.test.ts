import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { BlastRadius } from '../protocol/index.js';
import { BLAST_RADII, compareRadius, maxRadius } from '../protocol/index.js';
import type { RatchetObservation } from './ratchet.js';
import { createMemoryRatchetPersistence, DeclarationRatchet } from './ratchet.js';

describe('DeclarationRatchet', () => {
  it('accepts the first declaration and any wider one at once', async () => {
    const r = await DeclarationRatchet.open(createMemoryRatchetPersistence());
    expect(await r.observe('blast', 'a', 's', 'repo', undefined)).toBeUndefined();
    expect(r.accepted('blast', 'a', 's')).toBe('repo');
    expect(await r.observe('blast', 'a', 's', 'fleet', 'repo')).toMatchObject({
      widened: true,
      accepted: 'fleet',
    });
    expect(r.accepted('blast', 'a', 's')).toBe('fleet');
  });

  it('holds a narrower declaration until acknowledged, and reports it once', async () => {
    const r = await DeclarationRatchet.open(createMemoryRatchetPersistence());
    await r.observe('hitl', 'a', 's', 'gated', undefined);
    expect(await r.observe('hitl', 'a', 's', 'autonomous', 'gated')).toMatchObject({
      narrowed: true,
      accepted: 'gated',
    });
    expect(await r.observe('hitl', 'a', 's', 'autonomous', 'autonomous')).toBeUndefined();
    expect(r.pending('hitl', 'a', 's')).toBe('autonomous');
    expect(await r.acknowledge('hitl', 'a', 's', 'bob')).toBe('autonomous');
    expect(r.accepted('hitl', 'a', 's')).toBe('autonomous');
    expect(await r.acknowledge('hitl', 'a', 's')).toBeUndefined();
  });

  it('never lets the accepted radius fall below the declared one without an acknowledgement', async () => {
    const radius = fc.constantFrom(...BLAST_RADII);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(radius, fc.boolean()), { minLength: 1, maxLength: 12 }),
        async (steps) => {
          const r = await DeclarationRatchet.open(createMemoryRatchetPersistence());
          let floor: BlastRadius | undefined; // the narrowest level an operator has allowed so far
          let previous: BlastRadius | undefined;
          for (const [declared, ack] of steps) {
            await r.observe('blast', 'a', 's', declared, previous);
            previous = declared;
            const accepted = r.accepted('blast', 'a', 's')!;
            expect(compareRadius(accepted, declared)).toBeGreaterThanOrEqual(0);
            if (floor !== undefined)
              expect(compareRadius(accepted, maxRadius(floor, declared)!)).toBeGreaterThanOrEqual(
                0,
              );
            if (ack) {
              await r.acknowledge('blast', 'a', 's');
              expect(r.accepted('blast', 'a', 's')).toBe(declared);
              floor = undefined;
            } else floor = accepted;
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reloads its state from persistence', async () => {
    const persistence = createMemoryRatchetPersistence();
    const first = await DeclarationRatchet.open(persistence);
    await first.observe('blast', 'a', 's', 'public', undefined);
    await first.observe('blast', 'a', 's', 'self', 'public');
    const second = await DeclarationRatchet.open(persistence);
    expect(second.accepted('blast', 'a', 's')).toBe('public');
    expect(second.pending('blast', 'a', 's')).toBe('self');
    expect(second.pendingRows()).toHaveLength(1);
  });

  it('observes the declarations of a card together: the same changes as one by one, in one write', async () => {
    const radius = fc.constantFrom(...BLAST_RADII);
    const skill = fc.constantFrom('a', 'b', 'c', 'd');
    const card = fc.uniqueArray(fc.tuple(skill, radius), {
      selector: ([s]) => s,
      minLength: 1,
      maxLength: 4,
    });
    await fc.assert(
      fc.asyncProperty(fc.array(card, { minLength: 1, maxLength: 5 }), async (cards) => {
        const oneByOne = await DeclarationRatchet.open(createMemoryRatchetPersistence());
        const persistence = createMemoryRatchetPersistence();
        const saveMany = vi.spyOn(persistence, 'saveMany');
        const save = vi.spyOn(persistence, 'save');
        const together = await DeclarationRatchet.open(persistence);
        const previous = new Map<string, BlastRadius>();
        for (const declared of cards) {
          const observations: RatchetObservation<'blast'>[] = declared.map(([s, r]) => ({
            kind: 'blast' as const,
            skill: s,
            declared: r,
            previous: previous.get(s),
          }));
          const expected = [];
          for (const o of observations) {
            const change = await oneByOne.observe('blast', 'x', o.skill, o.declared, o.previous);
            if (change !== undefined) expected.push(change);
          }
          const writes = saveMany.mock.calls.length;
          expect(await together.observeAll('x', observations)).toEqual(expected);
          expect(saveMany.mock.calls.length - writes).toBeLessThanOrEqual(1);
          for (const [s, r] of declared) {
            previous.set(s, r);
            expect(together.accepted('blast', 'x', s)).toBe(oneByOne.accepted('blast', 'x', s));
            expect(together.pending('blast', 'x', s)).toBe(oneByOne.pending('blast', 'x', s));
          }
        }
        expect(save).not.toHaveBeenCalled();
      }),
      { numRuns: 100 },
    );
  });
});
