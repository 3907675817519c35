import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BlastRadius, HitlMode } from '../protocol/index.js';
import { BLAST_ORDER, BLAST_RADII, HITL_MODES, HITL_ORDER } from '../protocol/index.js';
import { decide } from './decide.js';
import type { DecisionInput, HitlFacts, PolicyRules, RadiusFacts } from './types.js';
import { DEFAULT_POLICY_RULES } from './types.js';

function radius(over: Partial<RadiusFacts> = {}): RadiusFacts {
  const declared = 'declared' in over ? over.declared : 'self';
  return {
    radius: declared,
    declared,
    accepted: declared,
    pending: undefined,
    floor: undefined,
    stale: false,
    ...over,
  };
}

function hitl(mode: HitlMode | undefined, over: Partial<HitlFacts> = {}): HitlFacts {
  return { mode, declared: mode, pending: undefined, vetoTtlMs: undefined, stale: false, ...over };
}

function call(r: Partial<RadiusFacts>, mode?: HitlMode, h: Partial<HitlFacts> = {}): DecisionInput {
  return { agent: 'ops', skill: 'pr_review', radius: radius(r), hitl: hitl(mode, h) };
}

const rules = (over: Partial<PolicyRules> = {}): PolicyRules => ({
  ...DEFAULT_POLICY_RULES,
  ...over,
});

describe('decide', () => {
  it.each<[string, DecisionInput, Partial<PolicyRules>, HitlMode, BlastRadius | null]>([
    ['self, nothing declared → autonomous', call({ declared: 'self' }), {}, 'autonomous', 'self'],
    ['project stays autonomous', call({ declared: 'project' }), {}, 'autonomous', 'project'],
    ['repo ≥ approvalAtOrAbove → gated', call({ declared: 'repo' }), {}, 'gated', 'repo'],
    ['public → gated', call({ declared: 'public' }), {}, 'gated', 'public'],
    ['declared veto on self stays veto', call({ declared: 'self' }, 'veto'), {}, 'veto', 'self'],
    [
      'declared compound is never lowered',
      call({ declared: 'repo' }, 'compound'),
      {},
      'compound',
      'repo',
    ],
    ['unknown radius → public (default)', call({ declared: undefined }), {}, 'gated', 'public'],
    [
      'unknown radius proceeds when configured',
      call({ declared: undefined }),
      { unknownRadius: 'proceed' },
      'autonomous',
      null,
    ],
    [
      'stale card falls back to the unknown rule',
      call({ declared: 'self', stale: true }),
      {},
      'gated',
      'public',
    ],
    [
      'stale card with proceed keeps the last known radius',
      call({ declared: 'repo', stale: true }),
      { unknownRadius: 'proceed' },
      'gated',
      'repo',
    ],
    [
      'operator floor raises self to fleet',
      call({ declared: 'self', radius: 'fleet', floor: 'fleet' }),
      {},
      'gated',
      'fleet',
    ],
    [
      'unacknowledged narrowing keeps the wider radius',
      call({ declared: 'self', accepted: 'repo', radius: 'repo', pending: 'self' }),
      {},
      'gated',
      'repo',
    ],
    [
      'vetoAtOrAbove project → veto',
      call({ declared: 'project' }),
      { vetoAtOrAbove: 'project' },
      'veto',
      'project',
    ],
    [
      'notifyAtOrAbove self → notification',
      call({ declared: 'self' }),
      { notifyAtOrAbove: 'self' },
      'notification',
      'self',
    ],
    [
      'override allow waives the thresholds, not the declared mode',
      call({ declared: 'fleet' }, 'veto'),
      { overrides: [{ agent: 'ops', skill: 'pr_review', action: 'allow' }] },
      'veto',
      'fleet',
    ],
    [
      'override minMode raises',
      call({ declared: 'self' }),
      { overrides: [{ agent: '*', skill: 'pr_review', minMode: 'notification' }] },
      'notification',
      'self',
    ],
  ])('%s', (_name, input, over, mode, effective) => {
    const d = decide(input, rules(over));
    expect(d.mode).toBe(mode);
    expect(d.effectiveRadius).toBe(effective);
    expect(d.deny).toBeUndefined();
  });

  it('names every fact as a structured reason', () => {
    const d = decide(
      call(
        {
          declared: 'self',
          radius: 'fleet',
          floor: 'fleet',
          floorSource: { reason: 'violation', at: Date.UTC(2026, 0, 1, 10, 42) },
        },
        'notification',
      ),
      rules(),
    );
    expect(d.reasons.map((r) => r.kind)).toEqual([
      'declared-radius',
      'floor',
      'declared-mode',
      'threshold',
    ]);
    expect(d.reasons[1]!.detail).toBe('floor raised to fleet after violation at 10:42');
    expect(d.approvers).toBe(1);
  });

  it('says how stale a card is', () => {
    const d = decide(call({ declared: 'self', stale: true, failures: 3 }), rules());
    expect(d.reasons[0]).toEqual({
      kind: 'card-stale',
      detail: 'card stale 3 refreshes: declarations not trusted',
    });
  });

  it('tells a radius declared but refused by the card reader from none declared', () => {
    const none = decide(call({ declared: undefined }), rules());
    expect(none.reasons[0]).toEqual({
      kind: 'radius-unknown',
      detail: 'no blast-v1 radius declared',
    });
    const refused = {
      path: 'capabilities.extensions[0].params.skills.pr_review.radius',
      message: 'unknown radius "galaxy"; expected one of self, project, repo, fleet, public',
    };
    const d = decide(call({ declared: undefined, refused }), rules());
    expect(d.reasons[0]).toEqual({
      kind: 'radius-unknown',
      detail:
        'blast-v1 radius declared but refused (capabilities.extensions[0].params.skills.pr_review.radius: unknown radius "galaxy"; expected one of self, project, repo, fleet, public)',
    });
    // Counted as any unknown radius.
    expect(d.effectiveRadius).toBe('public');
  });

  it('needs N distinct approvers for fleet and public', () => {
    const r = rules({ approvers: { fleet: 2, public: 3 } });
    expect(decide(call({ declared: 'repo' }), r).approvers).toBe(1);
    expect(decide(call({ declared: 'fleet' }), r).approvers).toBe(2);
    expect(decide(call({ declared: 'public' }), r).approvers).toBe(3);
    expect(decide(call({ declared: 'public' }), r).reasons.at(-1)?.kind).toBe('approvers');
  });

  it('denies what an override denies', () => {
    const d = decide(
      call({ declared: 'self' }),
      rules({ overrides: [{ agent: 'ops', skill: '*', action: 'deny', note: 'frozen' }] }),
    );
    expect(d.deny).toEqual({ reason: 'frozen' });
    expect(d.reasons.at(-1)).toEqual({ kind: 'override-deny', detail: 'frozen' });
  });

  it('takes the veto window from the declaration, else the config', () => {
    expect(decide(call({}, 'veto', { vetoTtlMs: 5000 }), rules()).vetoTtlMs).toBe(5000);
    expect(decide(call({}, 'veto'), rules({ vetoWindowMs: 7000 })).vetoTtlMs).toBe(7000);
  });

  it('names a standing approval that covers the call, unless a human must decide', () => {
    const grant = {
      id: 'g1',
      agent: 'ops',
      skill: 'pr_review',
      maxRadius: 'repo' as const,
      grantedBy: 'alice',
      expiresAt: 2000,
      usesLeft: 2,
    };
    const input = { ...call({ declared: 'repo' }), standing: [grant], now: 1000 };
    const d = decide(input, rules());
    expect(d).toMatchObject({ mode: 'gated', standing: 'g1' });
    expect(d.reasons.at(-1)?.kind).toBe('standing-approval');
    // Too narrow, expired, used up, or an operator reviewer: no standing approval applies.
    expect(decide({ ...input, ...call({ declared: 'fleet' }) }, rules()).standing).toBeUndefined();
    expect(decide({ ...input, now: 2000 }, rules()).standing).toBeUndefined();
    expect(
      decide({ ...input, standing: [{ ...grant, usesLeft: 0 }] }, rules()).standing,
    ).toBeUndefined();
    const operator = { ...input, hitl: hitl(undefined, { reviewer: 'operator' }) };
    expect(decide(operator, rules()).standing).toBeUndefined();
    expect(decide(operator, rules()).reviewer).toBe('operator');
  });

  it('is monotonic in radius and never below the declared mode (property)', () => {
    const radiusArb = fc.constantFrom(...BLAST_RADII);
    const optRadius = fc.option(radiusArb, { nil: undefined });
    const modeArb = fc.option(fc.constantFrom(...HITL_MODES), { nil: undefined });
    const rulesArb = fc.record({
      unknownRadius: fc.constantFrom<BlastRadius | 'proceed'>(...BLAST_RADII, 'proceed'),
      approvalAtOrAbove: radiusArb,
      vetoAtOrAbove: optRadius,
      notifyAtOrAbove: optRadius,
    });
    fc.assert(
      fc.property(
        radiusArb,
        radiusArb,
        modeArb,
        optRadius,
        fc.boolean(),
        rulesArb,
        (a, b, mode, floor, stale, partial) => {
          const [low, high] = BLAST_ORDER[a] <= BLAST_ORDER[b] ? [a, b] : [b, a];
          const r = rules(partial);
          const facts = (declared: BlastRadius): DecisionInput =>
            call({ declared, accepted: declared, radius: declared, floor, stale }, mode);
          const dLow = decide(facts(low), r);
          const dHigh = decide(facts(high), r);
          expect(HITL_ORDER[dHigh.mode]).toBeGreaterThanOrEqual(HITL_ORDER[dLow.mode]);
          if (mode !== undefined) {
            expect(HITL_ORDER[dLow.mode]).toBeGreaterThanOrEqual(HITL_ORDER[mode]);
          }
          // Pure: the same facts give the same decision.
          expect(decide(facts(low), r)).toEqual(dLow);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
