/**
 * `fleetgate lint-card --mcp tools.json`: declared radii against what the MCP tool annotations
 * imply (tool name = skill id).
 */
import { describe, expect, it } from 'vitest';
import type { LintReport } from '../src/cli/index.js';
import { runCli } from './support/cli.js';

const SEED = 'test/fixtures/cards/seed-blast.json';

describe('fleetgate lint-card --mcp', () => {
  it('warns where a declared radius is narrower than the annotations imply', async () => {
    const run = await runCli(['lint-card', SEED, '--mcp', 'test/fixtures/mcp/seed-tools.json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      'capabilities.extensions[0].params.skills.pr_review.radius: declared radius repo is narrower than the MCP tool annotations imply: public (pr_review: mutating and open world (openWorldHint not given))',
    );
    expect(run.stdout).toContain('skills: MCP tool "send_email" names no skill in card.skills');
    expect(run.stdout).toContain('0 errors, 2 warnings');
    const strict = await runCli([
      'lint-card',
      SEED,
      '--strict',
      '--mcp',
      'test/fixtures/mcp/seed-tools.json',
    ]);
    expect(strict.code).toBe(1);
  });

  it('is quiet when every radius is at least what the annotations imply', async () => {
    const run = await runCli([
      'lint-card',
      SEED,
      '--strict',
      '--json',
      '--mcp',
      'test/fixtures/mcp/seed-tools-clean.json',
    ]);
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as LintReport).summary).toEqual({ errors: 0, warnings: 0 });
  });

  it('exits 2 with a coded error naming the bad tool', async () => {
    const run = await runCli(['lint-card', SEED, '--mcp', 'test/fixtures/mcp/bad-tools.json']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'FLEETGATE_MCP_TOOLS_INVALID: test/fixtures/mcp/bad-tools.json[0].name: must be a non-empty string',
    );
  });
});
