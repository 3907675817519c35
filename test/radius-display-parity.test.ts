/**
 * `fleetgate agents` shows a skill's radius the same whether it reads the fleet itself
 * (`--config`) or asks a running gateway (`--url`): a skill whose card gives no radius the policy
 * trusts — none declared, an invalid one (`"galaxy"`), a stale card — shows what the gate counts
 * it as (`policy.unknownRadius`, never below the floor), then why. A real gateway in its own
 * process, real card servers, the CLI in child processes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CardServer } from './support/card-server.js';
import { cardWith, startCardServer } from './support/card-server.js';
import { cliTestTimeout, runCli, type CliRun } from './support/cli.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, startServiceProcess } from './support/gateway-service.js';

/** A card declaring `declared: repo` and `galaxy: "galaxy"`, and listing `bare` undeclared. */
function labCard(): unknown {
  const card = cardWith('lab', { declared: 'repo', galaxy: 'galaxy' }) as {
    skills: unknown[];
  };
  card.skills.push({ id: 'bare', name: 'bare', description: 'bare', tags: [] });
  return card;
}

/** The table with the card-age column (seconds since each side last fetched) blanked. */
function withoutAges(run: CliRun): string {
  return run.stdout.replace(/^(\S+\s+\S+\s+)\d+[smh](?=\s)/gm, '$1AGE');
}

/** The radius cell of every row of the fleet table, by `agent/skill` (columns cut at the rule line). */
function radiusCells(table: string): Record<string, string> {
  const lines = table.split('\n');
  const rule = lines[1] ?? '';
  const starts = [...rule.matchAll(/-+/g)].map((m) => m.index);
  const cell = (line: string, i: number): string =>
    line.slice(starts[i], starts[i + 1] ?? line.length).trim();
  const cells: Record<string, string> = {};
  let agent = '';
  for (const line of lines.slice(2)) {
    if (line === '' || line.startsWith('!')) break;
    agent = cell(line, 0) || agent;
    cells[`${agent}/${cell(line, 3)}`] = cell(line, 4);
  }
  return cells;
}

interface Case {
  title: string;
  /** Extra lines of the gateway configuration (a `policy:` section). */
  policy: string[];
  /** Floors of the agent `lab`. */
  floors: string;
  /** The radius cell each of lab's skills and gone's `deploy` must show. */
  cells: Record<'declared' | 'galaxy' | 'bare' | 'deploy', string>;
}

const CASES: Case[] = [
  {
    title: 'policy.unknownRadius public (the default)',
    policy: [],
    floors: '{}',
    cells: {
      declared: 'repo',
      galaxy: 'public (unknown)',
      bare: 'public (unknown)',
      deploy: 'public (stale)',
    },
  },
  {
    title: 'policy.unknownRadius proceed, with a floor',
    policy: ['policy: { unknownRadius: proceed }'],
    floors: '{ bare: project }',
    cells: {
      declared: 'repo',
      galaxy: 'proceed (unknown)',
      bare: 'project (unknown)',
      // A stale card's radius is never lowered by the rule: what was known still counts.
      deploy: 'fleet (stale)',
    },
  },
];

describe.each(CASES)('fleetgate agents radius column, --config and --url: $title', (c) => {
  let server: CardServer;
  let dir: string;
  let config: string;
  let gw: ServiceProcess;

  beforeAll(async () => {
    server = await startCardServer();
    server.set('lab', { type: 'card', card: labCard() });
    server.set('gone', { type: 'card', card: cardWith('gone', { deploy: 'fleet' }) });
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-radius-display-'));
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'cards: { staleAfterFailures: 1 }',
        'agents:',
        `  - { name: lab, url: "${server.urlOf('lab')}", floors: ${c.floors} }`,
        `  - { name: gone, url: "${server.urlOf('gone')}" }`,
        ...c.policy,
        '',
      ].join('\n'),
    );
    gw = await startServiceProcess({ args: ['--config', config] });
    // gone's card stops answering: one failed refresh makes it stale, its last card kept.
    server.set('gone', { type: 'status', status: 503 });
    const refreshed = await api<{ agent: { status: string } }>(gw.url, '/api/agents/gone/refresh', {
      method: 'POST',
    });
    expect(refreshed.body.agent.status).toBe('stale');
  }, 90_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'shows what the gate counts a radius it does not take from the card as, the same both ways',
    async () => {
      const [remote, local] = await Promise.all([
        runCli(['agents', '--url', gw.url]),
        runCli(['agents', '--config', config], { FLEETGATE_URL: '' }),
      ]);
      for (const run of [remote, local]) {
        expect(run).toMatchObject({ code: 1, stderr: '' }); // gone is not fresh
        expect(radiusCells(run.stdout)).toEqual({
          'lab/declared': c.cells.declared,
          'lab/galaxy': c.cells.galaxy,
          'lab/bare': c.cells.bare,
          'gone/deploy': c.cells.deploy,
        });
      }
      expect(withoutAges(remote)).toBe(withoutAges(local));
    },
    cliTestTimeout(1),
  );
});
