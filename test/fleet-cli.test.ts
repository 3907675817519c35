import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CardServer } from './support/card-server.js';
import { cardWith, startCardServer } from './support/card-server.js';
import { cliTestTimeout, runCli } from './support/cli.js';

describe('fleetgate agents / cards refresh', () => {
  let server: CardServer;
  let dir: string;
  let config: string;

  beforeAll(async () => {
    server = await startCardServer();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-'));
    config = join(dir, 'fleetgate.yaml');
    server.set('quinn', {
      type: 'card',
      card: cardWith(
        'quinn',
        { sitrep: 'self', deploy: 'public' },
        { hitl: { deploy: { mode: 'gated' } } },
      ),
    });
    server.set('down', { type: 'status', status: 503 });
    writeFileSync(
      config,
      [
        `store: sqlite:${join(dir, 'fleet.db')}`,
        'agents:',
        `  - name: quinn`,
        `    url: ${server.urlOf('quinn')}`,
        `    auth: { bearerEnv: QUINN_TOKEN }`,
        `    floors: { sitrep: repo }`,
        `  - name: down`,
        `    url: ${server.urlOf('down')}`,
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'prints the fleet table with effective radii, floors and failures, sending the agent auth',
    async () => {
      const run = await runCli(['agents', '--config', config], { QUINN_TOKEN: 's3cret' });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(1); // one agent is not fresh
      expect(run.stdout).toMatch(
        /quinn\s+fresh\s+\d+s\s+sitrep\s+repo \(declares self\)\s+-\s+repo/,
      );
      expect(run.stdout).toMatch(/deploy\s+public\s+gated/);
      expect(run.stdout).toMatch(/down\s+failed/);
      expect(run.stdout).toContain('down: http://127.0.0.1');
      expect(run.stdout).toContain('HTTP 503');
      expect(server.hits('quinn').headers.at(-1)!.authorization).toBe('Bearer s3cret');
    },
    cliTestTimeout(1),
  );

  it(
    'refreshes every card with a summary, and a second run finds the cards unchanged',
    async () => {
      const first = await runCli(['cards', 'refresh', '--config', config], {
        QUINN_TOKEN: 's3cret',
      });
      // The first test's run cached quinn's card: unchanged now, never "changed".
      expect(first.stdout).toContain('2 agents: 0 new, 0 changed, 1 unchanged, 1 failed');
      expect(first.code).toBe(1);
      const second = await runCli(['cards', 'refresh', '--config', config, '--json'], {
        QUINN_TOKEN: 's3cret',
      });
      expect(second.code).toBe(1);
      expect(JSON.parse(second.stdout)).toMatchObject({
        agents: [
          { agent: 'quinn', result: 'unchanged' },
          { agent: 'down', result: 'failed', error: { code: 'FLEETGATE_CARD_FETCH_FAILED' } },
        ],
        summary: { new: 0, changed: 0, unchanged: 1, failed: 1 },
      });
    },
    cliTestTimeout(2),
  );

  it(
    'holds a narrowed radius until `agents ack`, which persists',
    async () => {
      server.set('quinn', {
        type: 'card',
        card: cardWith(
          'quinn',
          { sitrep: 'self', deploy: 'self' },
          { hitl: { deploy: { mode: 'autonomous' } } },
        ),
      });
      const held = await runCli(['agents', '--config', config], { QUINN_TOKEN: 's3cret' });
      expect(held.stdout).toMatch(
        /deploy\s+public \(declares self\)\s+gated\s+-\s+blast public→self, hitl gated→autonomous/,
      );
      const ack = await runCli(
        ['agents', 'ack', 'quinn', 'deploy', '--config', config, '--by', 'alice'],
        {
          QUINN_TOKEN: 's3cret',
        },
      );
      expect(ack.stdout).toContain(
        'quinn/deploy: radius self and hitl mode autonomous now in effect (acknowledged by alice)',
      );
      const after = await runCli(['agents', '--config', config, '--json'], {
        QUINN_TOKEN: 's3cret',
      });
      const report = JSON.parse(after.stdout) as {
        agents: {
          name: string;
          skills: { skill: string; radius: { radius: string }; hitlMode: { mode: string } }[];
        }[];
        pendingAcknowledgements: unknown[];
      };
      const deploy = report.agents
        .find((a) => a.name === 'quinn')!
        .skills.find((s) => s.skill === 'deploy')!;
      expect(deploy.radius.radius).toBe('self');
      expect(deploy.hitlMode.mode).toBe('autonomous');
      expect(report.pendingAcknowledgements).toEqual([]);
    },
    cliTestTimeout(3),
  );

  it(
    'names the missing secret and the bad config key',
    async () => {
      const missing = await runCli(['agents', '--config', config], { QUINN_TOKEN: '' });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(
        /^FLEETGATE_CONFIG_INVALID: .*fleetgate\.yaml:5:24 agents\[0\]\.auth\.bearerEnv: QUINN_TOKEN is not set in the environment$/m,
      );
      const bad = join(dir, 'bad.yaml');
      writeFileSync(
        bad,
        'cards: { refreshInterval: often }\nagents: [{ name: x, url: "ftp://x" }]\n',
      );
      const run = await runCli(['cards', 'refresh', '--config', bad]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('cards.refreshInterval: must be a duration');
    },
    cliTestTimeout(2),
  );
});
