/**
 * `fleetgate lint-card` on a card that lists one skill id more than once: A2A requires skill ids
 * unique within a card, and a gateway keys declarations by skill id, so one entry would silently
 * win.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LintReport } from '../src/cli/index.js';
import { lintCard } from '../src/cli/index.js';
import { BLAST_V1_URI } from '../src/protocol/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';

const skill = (id: string, name = id) => ({ id, name, description: name, tags: [] });

const card = (skills: unknown[]) => ({
  name: 'twins',
  description: 'lists a skill twice',
  version: '1.0.0',
  capabilities: {
    extensions: [{ uri: BLAST_V1_URI, params: { skills: { a: { radius: 'self' } } } }],
  },
  skills,
});

describe('lint-card on repeated skill ids', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lint-card-skill-ids-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('flags every repeat of a skill id as an error naming the first index and its own', () => {
    const report = lintCard(
      card([skill('a', 'Triage'), skill('b'), skill('a', 'Triage again'), skill('a')]),
      'twins.json',
    );
    expect(report.ok).toBe(false);
    expect(report.diagnostics).toEqual([
      {
        path: 'skills[2].id',
        severity: 'error',
        message: expect.stringMatching(
          /^skill id "a" is listed twice \(skills\[0\] and skills\[2\]\); skill ids must be unique within a card/,
        ) as string,
      },
      expect.objectContaining({
        path: 'skills[3].id',
        message: expect.stringContaining('(skills[0] and skills[3])') as string,
      }),
    ]);
    expect(report.skills.map((s) => s.id)).toEqual(['a', 'b']);
    expect(lintCard(card([skill('a'), skill('b')]), 'ok.json').diagnostics).toEqual([]);
  });

  it(
    'exits 1 on a card that lists a skill id twice, without --strict',
    async () => {
      const path = join(dir, 'twins.json');
      writeFileSync(path, JSON.stringify(card([skill('a'), skill('a', 'A again')])));
      const run = await runCli(['lint-card', path]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(
        /^error {3}skills\[1\]\.id: skill id "a" is listed twice \(skills\[0\] and skills\[1\]\)/mu,
      );
      expect(run.stdout).toContain('1 error, 0 warnings');
      const json = await runCli(['lint-card', path, '--json', '--strict']);
      expect(json.code).toBe(1);
      expect((JSON.parse(json.stdout) as LintReport).summary).toEqual({ errors: 1, warnings: 0 });
    },
    cliTestTimeout(2),
  );
});
