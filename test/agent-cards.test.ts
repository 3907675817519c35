/**
 * The kit's card helpers against the gateway's own readers: every card they can produce passes
 * `lint-card` and reads back, through `readDeclarations`, as exactly what was declared — as a JSON
 * card and as an SDK `AgentCard` sent over the wire.
 */
import { AgentCard } from '@a2a-js/sdk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CardLike } from '../src/agent/index.js';
import {
  declareBlast,
  declareCost,
  declareEffectDomain,
  declareHitlMode,
} from '../src/agent/index.js';
import { lintCard } from '../src/cli/index.js';
import type {
  BlastDeclaration,
  EffectDomainDeclaration,
  HitlModeDeclaration,
} from '../src/protocol/index.js';
import {
  BLAST_RADII,
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODES,
  WORLDSTATE_DELTA_V1_URI,
  isFleetgateError,
  readDeclarations,
} from '../src/protocol/index.js';

type Step =
  | { type: 'blast'; skills: Record<string, BlastDeclaration> }
  | { type: 'hitl'; skills: Record<string, HitlModeDeclaration> }
  | { type: 'domains'; skills: Record<string, EffectDomainDeclaration> }
  | { type: 'cost' };

const note = fc.option(fc.string({ maxLength: 40 }), { nil: undefined });
const blast = fc
  .record({ radius: fc.constantFrom(...BLAST_RADII), note })
  .map(({ radius, note: n }): BlastDeclaration =>
    n === undefined ? { radius } : { radius, note: n },
  );
const hitl = fc
  .record({
    mode: fc.constantFrom(...HITL_MODES),
    vetoTtlMs: fc.option(fc.integer({ min: 1, max: 86_400_000 }), { nil: undefined }),
    reviewer: fc.option(fc.constant('operator' as const), { nil: undefined }),
    note,
  })
  .map((h): HitlModeDeclaration => {
    const out: HitlModeDeclaration = { mode: h.mode };
    if (h.vetoTtlMs !== undefined) out.vetoTtlMs = h.vetoTtlMs;
    if (h.reviewer !== undefined) out.reviewer = h.reviewer;
    if (h.note !== undefined) out.note = h.note;
    return out;
  });
const domains = fc
  .array(fc.stringMatching(/^[a-z][a-z0-9_-]{0,15}$/), { minLength: 0, maxLength: 4 })
  .map((list): EffectDomainDeclaration => ({ domains: list }));

/** Skill ids: identifiers, dotted and spaced names, and the prototype-reaching ones. */
const skillId = fc.oneof(
  fc.stringMatching(/^[a-z_][a-z0-9_]{0,12}$/),
  fc.string({ minLength: 1, maxLength: 12 }),
  fc.constantFrom('__proto__', 'constructor', 'a.b', 'has space'),
);

const scenario = fc.uniqueArray(skillId, { minLength: 1, maxLength: 5 }).chain((ids) => {
  const subset = <T>(value: fc.Arbitrary<T>) =>
    fc
      .subarray(ids, { minLength: 1 })
      .chain((chosen) => fc.tuple(...chosen.map((id) => value.map((v) => [id, v] as const))))
      .map((pairs) => Object.fromEntries(pairs));
  const step: fc.Arbitrary<Step> = fc.oneof(
    subset(blast).map((skills): Step => ({ type: 'blast', skills })),
    subset(hitl).map((skills): Step => ({ type: 'hitl', skills })),
    subset(domains).map((skills): Step => ({ type: 'domains', skills })),
    fc.constant<Step>({ type: 'cost' }),
  );
  return fc.record({
    ids: fc.constant(ids),
    steps: fc.array(step, { minLength: 1, maxLength: 6 }),
    sdk: fc.boolean(),
  });
});

function apply<C extends CardLike>(card: C, steps: readonly Step[]): C {
  let out = card;
  for (const step of steps) {
    switch (step.type) {
      case 'blast':
        out = declareBlast(out, step.skills as never);
        break;
      case 'hitl':
        out = declareHitlMode(out, step.skills as never);
        break;
      case 'domains':
        out = declareEffectDomain(out, step.skills as never);
        break;
      case 'cost':
        out = declareCost(out);
        break;
    }
  }
  return out;
}

/** What the steps declare: the last declaration of each skill wins. */
function expected(steps: readonly Step[]) {
  const model = {
    blast: {} as Record<string, BlastDeclaration>,
    hitlMode: {} as Record<string, HitlModeDeclaration>,
    effectDomain: {} as Record<string, EffectDomainDeclaration>,
    extensions: [] as string[],
  };
  const uri = {
    blast: BLAST_V1_URI,
    hitl: HITL_MODE_URI,
    domains: EFFECT_DOMAIN_V1_URI,
    cost: COST_V1_URI,
  };
  for (const step of steps) {
    if (!model.extensions.includes(uri[step.type])) model.extensions.push(uri[step.type]);
    if (step.type === 'cost') continue;
    const target = { blast: model.blast, hitl: model.hitlMode, domains: model.effectDomain }[
      step.type
    ];
    for (const [id, value] of Object.entries(step.skills)) {
      Object.defineProperty(target, id, {
        value:
          step.type === 'domains'
            ? { domains: [...new Set((value as EffectDomainDeclaration).domains)] }
            : value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return model;
}
const HITL_MODE_URI = 'https://proto-labs.ai/a2a/ext/hitl-mode-v1';

function plain(value: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value));
}

function baseCard(ids: readonly string[], sdk: boolean): CardLike {
  const skills = ids.map((id) => ({ id, name: id, description: id, tags: [] }));
  const json = {
    name: 'prop',
    description: 'property card',
    version: '1.0.0',
    supportedInterfaces: [
      { url: 'http://127.0.0.1:1/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills,
  };
  return sdk ? AgentCard.fromJSON(json) : json;
}

describe('card helpers (property)', () => {
  it('produce cards that pass lint-card and read back as declared, on the wire too', () => {
    fc.assert(
      fc.property(scenario, ({ ids, steps, sdk }) => {
        const base = baseCard(ids, sdk);
        const before = JSON.stringify(base);
        const card = apply(base, steps);
        // The input is never changed.
        expect(JSON.stringify(base)).toBe(before);
        const wire: unknown = JSON.parse(
          JSON.stringify(sdk ? AgentCard.toJSON(card as AgentCard) : card),
        );

        const report = lintCard(wire, 'property');
        expect(report.diagnostics).toEqual([]);
        expect(report.summary).toEqual({ errors: 0, warnings: 0 });

        const model = expected(steps);
        for (const read of [readDeclarations(card), readDeclarations(wire)]) {
          expect(read.extensions).toEqual(model.extensions);
          expect(plain(read.blast)).toEqual(plain(model.blast));
          expect(plain(read.hitlMode)).toEqual(plain(model.hitlMode));
          expect(plain(read.effectDomain)).toEqual(plain(model.effectDomain));
        }
        // Idempotent: the same declarations again change nothing.
        expect(apply(card, steps)).toEqual(card);
      }),
      { numRuns: 300 },
    );
  });
});

describe('card helpers', () => {
  const card = {
    name: 'helpers',
    skills: [{ id: 'sitrep' }, { id: 'pr_review' }, { id: 'triage' }],
  } as const;

  it('declare the example of the docs', () => {
    const out = declareCost(
      declareEffectDomain(
        declareHitlMode(
          declareBlast(card, {
            sitrep: 'self',
            pr_review: { radius: 'repo', note: 'Comments on pull requests' },
          }),
          { pr_review: { mode: 'veto', vetoTtlMs: 60_000 } },
        ),
        { triage: { domains: ['board'] } },
      ),
    );
    expect(out.capabilities.extensions).toEqual([
      {
        uri: BLAST_V1_URI,
        description: expect.any(String),
        required: false,
        params: {
          skills: {
            sitrep: { radius: 'self' },
            pr_review: { radius: 'repo', note: 'Comments on pull requests' },
          },
        },
      },
      expect.objectContaining({
        uri: HITL_MODE_URI,
        params: { skills: { pr_review: { mode: 'veto', vetoTtlMs: 60_000 } } },
      }),
      expect.objectContaining({
        uri: EFFECT_DOMAIN_V1_URI,
        params: { skills: { triage: { domains: ['board'] } } },
      }),
      expect.objectContaining({ uri: COST_V1_URI, params: undefined }),
    ]);
  });

  it('refuse a skill missing from card.skills with a coded error naming it', () => {
    try {
      // @ts-expect-error -- "deploy" is not a skill of this card: a compile error where the type knows.
      declareBlast(card, { deploy: 'public' });
      expect.unreachable();
    } catch (error) {
      expect(isFleetgateError(error, 'FLEETGATE_DECLARATION_INVALID')).toBe(true);
      expect((error as Error).message).toBe(
        'declareBlast: "deploy" is not in card.skills (sitrep, pr_review, triage)',
      );
    }
    expect(() => declareEffectDomain({ name: 'no skills' }, { x: ['board'] })).toThrow(
      /the card has no skills list/,
    );
  });

  it('refuse an invalid radius, mode, veto window or domain with a coded error', () => {
    // @ts-expect-error -- not a radius: a compile error.
    const radius = () => declareBlast(card, { sitrep: 'galaxy' });
    // @ts-expect-error -- not a mode: a compile error.
    const mode = () => declareHitlMode(card, { sitrep: 'maybe' });
    const cases: [() => unknown, RegExp][] = [
      [radius, /skills\.sitrep\.radius unknown radius "galaxy"/],
      [mode, /skills\.sitrep\.mode unknown mode "maybe"/],
      [
        () => declareHitlMode(card, { sitrep: { mode: 'veto', vetoTtlMs: -5 } }),
        /vetoTtlMs must be a positive integer/,
      ],
      [
        () => declareBlast(card, { sitrep: { radius: 'self', note: 'x'.repeat(2001) } }),
        /note is longer/,
      ],
      [
        () => declareEffectDomain(card, { triage: ['the board'] }),
        /domain "the board" must not contain whitespace/,
      ],
    ];
    for (const [call, message] of cases) {
      expect(call).toThrow(message);
      expect(call).toThrow(expect.objectContaining({ code: 'FLEETGATE_DECLARATION_INVALID' }));
    }
  });

  it('keep other entries, merge skills, and rename the older effect-domain URI', () => {
    const old = {
      skills: [{ id: 'a' }, { id: 'b' }],
      capabilities: {
        streaming: true,
        extensions: [
          { uri: 'https://example.com/ext/other', params: { keep: true } },
          {
            uri: WORLDSTATE_DELTA_V1_URI,
            description: 'mine',
            params: { skills: { a: { domains: ['x'] } } },
          },
        ],
      },
    };
    const out = declareEffectDomain(old, { b: ['y'] });
    expect(out.capabilities).toEqual({
      streaming: true,
      extensions: [
        { uri: 'https://example.com/ext/other', params: { keep: true } },
        {
          uri: EFFECT_DOMAIN_V1_URI,
          description: 'mine',
          required: false,
          params: { skills: { a: { domains: ['x'] }, b: { domains: ['y'] } } },
        },
      ],
    });
    expect(old.capabilities.extensions[1]!.uri).toBe(WORLDSTATE_DELTA_V1_URI);
  });
});
