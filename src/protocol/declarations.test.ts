import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  BLAST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  LIMITS,
  readDeclarations,
  WORLDSTATE_DELTA_V1_URI,
} from './index.js';

const dir = new URL('../../test/fixtures/broken-cards/', import.meta.url);
const load = (url: URL): unknown => JSON.parse(readFileSync(url, 'utf8'));

interface Expected {
  diagnostics: [string, string][];
  blast?: Record<string, string>;
  hitlMode?: Record<string, string>;
  effectDomain?: Record<string, string[]>;
}

describe('readDeclarations', () => {
  it('reads the seed blast example with every skill', () => {
    const d = readDeclarations(load(new URL('../cards/seed-blast.json', dir)));
    expect(d.diagnostics).toEqual([]);
    expect(Object.fromEntries(Object.entries(d.blast).map(([k, v]) => [k, v.radius]))).toEqual({
      sitrep: 'self',
      pr_review: 'repo',
      bulk_migration: 'fleet',
      production_deploy: 'public',
    });
    expect(d.blast.bulk_migration?.note).toBe('Rewrites every repo in the org');
    expect(d.hitlMode.bulk_migration).toEqual({ mode: 'veto', vetoTtlMs: 60000 });
    expect(d.hitlMode.production_deploy).toEqual({ mode: 'gated', reviewer: 'operator' });
    expect(d.effectDomain.pr_review).toEqual({ domains: ['ci', 'github_issues'] });
    expect(d.extensions).toHaveLength(4);
  });

  const expected = load(new URL('expected.json', dir)) as Record<string, Expected>;
  const files = readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'expected.json');

  it('has an expectation for every card of the broken corpus', () => {
    expect(files.sort()).toEqual(Object.keys(expected).sort());
  });

  for (const file of files) {
    it(`reports the problems of ${file} with paths and keeps its good declarations`, () => {
      const want = expected[file]!;
      const d = readDeclarations(load(new URL(file, dir)));
      expect(d.diagnostics.map((x) => [x.severity, x.path])).toEqual(want.diagnostics);
      for (const diagnostic of d.diagnostics) expect(diagnostic.message.length).toBeGreaterThan(5);
      const radii = Object.fromEntries(Object.entries(d.blast).map(([k, v]) => [k, v.radius]));
      expect(radii).toEqual(want.blast ?? {});
      const modes = Object.fromEntries(Object.entries(d.hitlMode).map(([k, v]) => [k, v.mode]));
      expect(modes).toEqual(want.hitlMode ?? {});
      const domains = Object.fromEntries(
        Object.entries(d.effectDomain).map(([k, v]) => [k, v.domains]),
      );
      expect(domains).toEqual(want.effectDomain ?? {});
    });
  }

  it('treats the worldstate-delta-v1 URI as effect-domain-v1, with a warning', () => {
    const d = readDeclarations(load(new URL('../cards/legacy-alias.json', dir)));
    expect(d.extensions).toEqual([EFFECT_DOMAIN_V1_URI]);
    expect(d.declared[0]).toMatchObject({
      uri: WORLDSTATE_DELTA_V1_URI,
      canonicalUri: EFFECT_DOMAIN_V1_URI,
    });
    expect(d.effectDomain.triage).toEqual({ domains: ['board'] });
    expect(d.diagnostics).toEqual([
      expect.objectContaining({ severity: 'warning', path: 'capabilities.extensions[0].uri' }),
    ]);
  });

  it('quotes skill ids that are not identifiers in paths', () => {
    const d = readDeclarations({
      skills: [{ id: 'a.b' }],
      capabilities: {
        extensions: [{ uri: BLAST_V1_URI, params: { skills: { 'a.b': { radius: 'x' } } } }],
      },
    });
    expect(d.diagnostics[0]!.path).toBe('capabilities.extensions[0].params.skills["a.b"].radius');
  });

  it('enforces the extension-count limit and still reads the first entries', () => {
    const extensions = Array.from({ length: LIMITS.cardExtensions + 5 }, (_, i) =>
      i === 0
        ? { uri: BLAST_V1_URI, params: { skills: { s: { radius: 'repo' } } } }
        : { uri: `https://example.com/ext/${i}` },
    );
    const d = readDeclarations({ skills: [{ id: 's' }], capabilities: { extensions } });
    expect(d.blast.s?.radius).toBe('repo');
    expect(d.extensions).toHaveLength(LIMITS.cardExtensions);
    expect(d.diagnostics[0]).toMatchObject({ severity: 'error', path: 'capabilities.extensions' });
    expect(d.diagnostics[0]!.message).toContain(`limit of ${LIMITS.cardExtensions}`);
  });

  it('says clearly, with a code, when card.skills is over the limit, and warns about no listed skill', () => {
    const count = LIMITS.cardSkills + 200;
    const ids = Array.from({ length: count }, (_, i) => `k${i}`);
    // Declarations for the last skills of the list, past the limit, and one truly unlisted skill.
    const declared = [...ids.slice(-50), 'ghost'];
    const d = readDeclarations({
      skills: ids.map((id) => ({ id })),
      capabilities: {
        extensions: [
          {
            uri: BLAST_V1_URI,
            params: { skills: Object.fromEntries(declared.map((id) => [id, { radius: 'repo' }])) },
          },
        ],
      },
    });
    expect(d.skills).toHaveLength(LIMITS.cardSkills);
    const limit = d.diagnostics.filter((x) => x.code === 'FLEETGATE_LIMIT_EXCEEDED');
    expect(limit).toEqual([
      {
        path: 'skills',
        severity: 'error',
        code: 'FLEETGATE_LIMIT_EXCEEDED',
        message: `lists ${count} skills, more than the limit of ${LIMITS.cardSkills}; only the first ${LIMITS.cardSkills} are read`,
      },
    ]);
    // Only the skill that is not listed at all is warned about.
    const unlisted = d.diagnostics.filter((x) => x.message.includes('not in card.skills'));
    expect(unlisted.map((x) => x.path)).toEqual([`capabilities.extensions[0].params.skills.ghost`]);
    expect(d.blast[ids[count - 1]!]?.radius).toBe('repo');
  });

  it('gives the skill-declaration limit a code and says what was read', () => {
    const many = Object.fromEntries(
      Array.from({ length: LIMITS.cardSkills + 1 }, (_, i) => [`s${i}`, { radius: 'self' }]),
    );
    const d = readDeclarations({
      capabilities: { extensions: [{ uri: BLAST_V1_URI, params: { skills: many } }] },
    });
    expect(Object.keys(d.blast)).toHaveLength(LIMITS.cardSkills);
    expect(d.diagnostics[0]).toMatchObject({
      path: 'capabilities.extensions[0].params.skills',
      code: 'FLEETGATE_LIMIT_EXCEEDED',
    });
    expect(d.diagnostics[0]!.message).toContain(`only the first ${LIMITS.cardSkills} are read`);
  });

  it('never lets a skill id reach the prototype', () => {
    const d = readDeclarations({
      capabilities: {
        extensions: [
          {
            uri: BLAST_V1_URI,
            params: { skills: JSON.parse('{"__proto__": {"radius": "self"}}') },
          },
        ],
      },
    });
    expect(({} as Record<string, unknown>).radius).toBeUndefined();
    expect(Object.getPrototypeOf(d.blast)).toBeNull();
  });

  it('warns when effect-domain-v1 names no domains for any skill, and not when one has them', () => {
    const card = (params?: unknown): unknown => ({
      skills: [{ id: 'triage' }, { id: 'sitrep' }],
      capabilities: { extensions: [{ uri: EFFECT_DOMAIN_V1_URI, params }] },
    });
    for (const params of [undefined, {}, { skills: {} }]) {
      expect(readDeclarations(card(params)).diagnostics).toEqual([
        expect.objectContaining({
          severity: 'warning',
          path: 'capabilities.extensions[0].params.skills',
          message: expect.stringContaining('raises ops.alert.undeclared_effect') as unknown,
        }),
      ]);
    }
    const some = readDeclarations(card({ skills: { triage: { domains: ['board'] } } }));
    expect(some.diagnostics).toEqual([]);
  });

  it('names an older alias declared beside its canonical URI, instead of "declared twice"', () => {
    const entry = { params: { skills: { triage: { domains: ['board'] } } } };
    const d = readDeclarations({
      skills: [{ id: 'triage' }],
      capabilities: {
        extensions: [
          { uri: EFFECT_DOMAIN_V1_URI, ...entry },
          { uri: WORLDSTATE_DELTA_V1_URI, ...entry },
        ],
      },
    });
    expect(d.diagnostics).toEqual([
      expect.objectContaining({ severity: 'warning', path: 'capabilities.extensions[1].uri' }),
    ]);
    expect(d.diagnostics[0]!.message).toBe(
      `${WORLDSTATE_DELTA_V1_URI} is the older name of ${EFFECT_DOMAIN_V1_URI}, which is declared under both names; the declaration at capabilities.extensions[0] is used (keep one entry, under ${EFFECT_DOMAIN_V1_URI})`,
    );
    expect(d.diagnostics[0]!.message).not.toContain('declared twice');
  });
});
