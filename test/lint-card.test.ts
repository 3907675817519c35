import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentCard } from '@a2a-js/sdk';
import { AgentCard as AgentCardCodec } from '@a2a-js/sdk';
import type { AgentExecutor } from '@a2a-js/sdk/server';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LintReport } from '../src/cli/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';

const SEED = 'test/fixtures/cards/seed-blast.json';

const noopExecutor: AgentExecutor = {
  execute: () => Promise.resolve(),
  cancelTask: () => Promise.resolve(),
};

/** A real @a2a-js/sdk agent on 127.0.0.1 serving the given card. */
async function startAgent(cardJson: unknown): Promise<{ url: string; close: () => Promise<void> }> {
  const card: AgentCard = AgentCardCodec.fromJSON(cardJson);
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), noopExecutor);
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('fleetgate lint-card', () => {
  let agent: Awaited<ReturnType<typeof startAgent>>;
  beforeAll(async () => {
    agent = await startAgent(JSON.parse(readFileSync(SEED, 'utf8')));
  });
  afterAll(() => agent.close());

  it(
    'prints the seed card radii and exits 0',
    async () => {
      const run = await runCli(['lint-card', SEED]);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      for (const line of [
        /sitrep\s+self\s+autonomous/,
        /pr_review\s+repo\s+notification\s+ci, github_issues/,
        /bulk_migration\s+fleet\s+veto \(60000 ms\)\s+ci, board/,
        /production_deploy\s+public\s+gated\s+deploy/,
      ]) {
        expect(run.stdout).toMatch(line);
      }
      expect(run.stdout).toContain('0 errors, 0 warnings');
    },
    cliTestTimeout(1),
  );

  it(
    'colours radii when colour is forced',
    async () => {
      const run = await runCli(['lint-card', SEED], { NO_COLOR: undefined, FORCE_COLOR: '1' });
      expect(run.stdout).toContain('\x1b[38;5;');
    },
    cliTestTimeout(1),
  );

  it(
    'exits 1 on a card with errors (it ran and found problems) and names the paths',
    async () => {
      const run = await runCli(['lint-card', 'test/fixtures/broken-cards/bad-hitl.json']);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain('capabilities.extensions[0].params.skills.a.vetoTtlMs');
      expect(run.stdout).toContain('capabilities.extensions[0].params.skills.c.mode');
      expect(run.stdout).toMatch(/b\s+-\s+gated/);
    },
    cliTestTimeout(1),
  );

  it(
    'exits 1 on warnings only with --strict',
    async () => {
      const card = 'test/fixtures/broken-cards/unknown-skill-and-duplicate.json';
      expect((await runCli(['lint-card', card])).code).toBe(0);
      expect((await runCli(['lint-card', card, '--strict'])).code).toBe(1);
    },
    cliTestTimeout(2),
  );

  it(
    'fetches the card from a real SDK agent and prints a JSON report',
    async () => {
      const run = await runCli(['lint-card', agent.url, '--json']);
      expect(run.code).toBe(0);
      const report = JSON.parse(run.stdout) as LintReport;
      expect(report.source).toBe(`${agent.url}/.well-known/agent-card.json`);
      expect(report.ok).toBe(true);
      expect(report.summary).toEqual({ errors: 0, warnings: 0 });
      expect(report.skills.map((s) => [s.id, s.radius])).toEqual([
        ['sitrep', 'self'],
        ['pr_review', 'repo'],
        ['bulk_migration', 'fleet'],
        ['production_deploy', 'public'],
      ]);
      expect(report.extensions.map((e) => e.canonicalUri)).toHaveLength(4);
    },
    cliTestTimeout(1),
  );

  it(
    'reports a JSON report with diagnostics for a broken card',
    async () => {
      const run = await runCli([
        'lint-card',
        'test/fixtures/broken-cards/skills-array.json',
        '--json',
      ]);
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout) as LintReport;
      expect(report.ok).toBe(false);
      expect(report.diagnostics).toEqual([
        expect.objectContaining({
          severity: 'error',
          path: 'capabilities.extensions[0].params.skills',
        }),
      ]);
      expect(report.skills).toEqual([{ id: 'deploy', inCard: true, hitlMode: 'gated' }]);
    },
    cliTestTimeout(1),
  );

  it(
    'exits 2 with a clear message when the agent cannot be reached or the file is missing',
    async () => {
      const refused = await runCli(['lint-card', 'http://127.0.0.1:9', '--timeout', '2000']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        /FLEETGATE_CARD_FETCH_FAILED: http:\/\/127\.0\.0\.1:9\/\.well-known\/agent-card\.json/,
      );
      const missing = await runCli(['lint-card', 'no/such/card.json']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(
        'FLEETGATE_FILE_ACCESS_FAILED: Cannot read the card file no/such/card.json',
      );
      // A 404 names both card URLs tried, not only the legacy one.
      const absent = await runCli(['lint-card', `${agent.url}/nobody`]);
      expect(absent.code).toBe(2);
      expect(absent.stderr).toContain(
        `FLEETGATE_CARD_FETCH_FAILED: ${agent.url}/nobody/.well-known/agent.json: HTTP 404 Not Found (also tried ${agent.url}/nobody/.well-known/agent-card.json)`,
      );
      const notJson = await runCli(['lint-card', 'README.md']);
      expect(notJson.code).toBe(2);
      expect(notJson.stderr).toContain('FLEETGATE_CARD_INVALID: README.md: not valid JSON');
    },
    cliTestTimeout(4),
  );
});
