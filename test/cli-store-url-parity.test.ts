/**
 * `fleetgate world` and `fleetgate approvals` print the same thing whether they read the store
 * (`--store`, `--config`) or ask the running gateway over that store (`--url`): the same columns
 * in the same order, the same cells, the same JSON. A real gateway in its own process, a real
 * SQLite file, the CLI in child processes.
 *
 * The rows are made to print the same at any moment of the test: the world state is seeded (into
 * the gateway's store, before it starts) three days in the past, so "3d ago" holds for the whole
 * run, and approvals live ten hours, so their time left reads "10h" throughout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { createInMemoryEventBus, OUTBOX_WRITERS } from '../src/bus/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';
import { cliTestTimeout, runCli, type CliRun } from './support/cli.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { startServiceProcess } from './support/gateway-service.js';
import { deltaEvent } from './world-store-contract.js';

const ADMIN = 'parity-admin-token-0123456789abcd';
const OPERATOR = 'parity-operator-token-0123456789';
const DAY_MS = 86_400_000;

/** Seeds the world state the way a gateway records it, as of three days ago. */
async function seedWorld(url: string): Promise<void> {
  const store = await openGatewayStore(url);
  const bus = createInMemoryEventBus();
  const then = Date.now() - 3 * DAY_MS;
  const world = createWorldMaterialiser({
    store: createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
    bus,
    now: () => then,
  });
  try {
    await world.apply(
      deltaEvent(
        [
          { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: 3 },
          { domain: 'ci', path: 'data.label', op: 'set', value: 'x' },
          // Rejected: its audit record carries the reason instead of a value.
          { domain: 'ci', path: 'data.label', op: 'inc', value: 1 },
          { domain: 'board', path: 'data.untriaged', op: 'set', value: 7 },
        ],
        { source: 'quinn', skill: 'pr_review', taskId: 'task-parity-1' },
      ),
    );
    await world.apply(
      deltaEvent([{ domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 }], {
        source: 'quinn',
        skill: 'pr_review',
        taskId: 'task-parity-2',
        time: '2026-11-30T06:00:00.000Z',
      }),
    );
  } finally {
    await bus.close();
    await store.close();
  }
}

describe('fleetgate world and approvals: --store and --url print the same', () => {
  let dir: string;
  let store: string;
  let config: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let held: string;
  let snoozed: string;

  /** Runs `args` against the gateway (`--url`) and against its store (`--store`), side by side. */
  async function bothWays(
    args: readonly string[],
    local: readonly string[] = ['--store', store],
  ): Promise<{ url: CliRun; store: CliRun }> {
    const [url, fromStore] = await Promise.all([
      runCli([...args, '--url', gw.url], { FLEETGATE_TOKEN: OPERATOR }),
      runCli([...args, ...local], { FLEETGATE_URL: '' }),
    ]);
    return { url, store: fromStore };
  }

  /** Both runs succeed and print the same, byte for byte; returns what they printed. */
  async function samePrinted(args: readonly string[], local?: readonly string[]): Promise<string> {
    const runs = await bothWays(args, local);
    expect(runs.url).toMatchObject({ code: 0, stderr: '' });
    expect(runs.store).toMatchObject({ code: 0, stderr: '' });
    expect(runs.url.stdout).toBe(runs.store.stdout);
    return runs.url.stdout;
  }

  beforeAll(
    async () => {
      dir = mkdtempSync(join(tmpdir(), 'fleetgate-parity-'));
      store = `sqlite:${join(dir, 'fleetgate.db')}`;
      await seedWorld(store);
      agent = await startOpsAgent();
      config = join(dir, 'fleetgate.yaml');
      writeFileSync(
        config,
        [
          'listen: { host: 127.0.0.1, port: 0 }',
          `store: ${store}`,
          `agents: [{ name: ops, url: ${agent.url} }]`,
          'policy: { approvalTtl: 10h }',
          'auth:',
          '  tokens:',
          '    - { name: alice, tokenEnv: PARITY_ADMIN, roles: [admin] }',
          '    - { name: bob, tokenEnv: PARITY_OPERATOR, roles: [operator] }',
        ].join('\n'),
      );
      const tokens = { PARITY_ADMIN: ADMIN, PARITY_OPERATOR: OPERATOR };
      gw = await startServiceProcess({ args: ['--config', config], env: tokens });
      const as = (token: string): NodeJS.ProcessEnv => ({
        FLEETGATE_URL: gw.url,
        FLEETGATE_TOKEN: token,
      });
      // Two calls held for approval (bulk_migration is fleet-wide, gated); one of them snoozed.
      const approvalOf = async (text: string): Promise<string> => {
        const run = await runCli(
          ['dispatch', 'ops', 'bulk_migration', text, '--json'],
          as(OPERATOR),
        );
        expect(run.stderr).toBe('');
        const answer = JSON.parse(run.stdout) as {
          status: string;
          decision: { approvalId: string };
        };
        expect(answer.status).toBe('awaiting-approval');
        return answer.decision.approvalId;
      };
      held = await approvalOf('migrate repo-a');
      snoozed = await approvalOf('migrate repo-b');
      const snooze = await runCli(['approvals', 'snooze', snoozed, '--for', '1h'], as(ADMIN));
      expect(snooze).toMatchObject({ code: 0, stderr: '' });
    },
    cliTestTimeout(3, 90_000),
  );

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'lists pending approvals with the same columns, domains included',
    async () => {
      const table = await samePrinted(['approvals']);
      expect(table).toMatch(/^ID\s+AGENT\/SKILL\s+RADIUS\s+MODE\s+LEFT\s+OK\s+DOMAINS\s+REASONS$/m);
      expect(table).toMatch(
        new RegExp(
          `^${held}\\s+ops/bulk_migration\\s+fleet\\s+gated\\s+10h\\s+0/1\\s+github_issues\\s+declared fleet`,
          'm',
        ),
      );
      expect(table).not.toContain(snoozed);
    },
    cliTestTimeout(2),
  );

  it(
    'lists snoozed approvals too with --all, and reads a --config the same as its store',
    async () => {
      const table = await samePrinted(['approvals', '--all'], ['--config', config]);
      expect(table).toContain(held);
      expect(table).toContain(snoozed);
    },
    cliTestTimeout(2),
  );

  it(
    'prints the approvals as the same JSON: an array of the records',
    async () => {
      const out = await samePrinted(['approvals', '--json']);
      const records = JSON.parse(out) as { id: string; domains: string[] }[];
      expect(records.map((r) => r.id)).toEqual([held]);
      expect(records[0]?.domains).toEqual(['github_issues']);
    },
    cliTestTimeout(2),
  );

  it(
    'lists the domains with the same columns and cells',
    async () => {
      const table = await samePrinted(['world']);
      expect(table).toMatch(/^DOMAIN\s+VERSION\s+UPDATED\s+DATA KEYS$/m);
      expect(table).toMatch(/^board\s+1\s+3d ago\s+untriaged$/m);
      expect(table).toMatch(/^ci\s+2\s+3d ago\s+blockedPRs, label$/m);
    },
    cliTestTimeout(2),
  );

  it(
    'prints the domains as the same JSON: an array by name',
    async () => {
      const out = await samePrinted(['world', '--json']);
      expect(JSON.parse(out)).toMatchObject([
        { name: 'board', version: 1, state: { data: { untriaged: 7 } } },
        { name: 'ci', version: 2, state: { data: { blockedPRs: 2, label: 'x' } } },
      ]);
    },
    cliTestTimeout(2),
  );

  it(
    'prints one domain the same, as text and as JSON',
    async () => {
      expect(await samePrinted(['world', 'ci'])).toMatch(/^ci version 2, updated /);
      expect(JSON.parse(await samePrinted(['world', 'ci', '--json']))).toMatchObject({
        name: 'ci',
        version: 2,
        state: { data: { blockedPRs: 2 } },
      });
    },
    cliTestTimeout(4),
  );

  it(
    "prints a domain's audit log with the same columns: task, previous and next values, rejections",
    async () => {
      const table = await samePrinted(['world', 'ci', '--history']);
      expect(table).toMatch(/^SEQ\s+TIME\s+AGENT\/SKILL\s+TASK\s+CHANGE\s+RESULT$/m);
      expect(table).toMatch(/quinn\/pr_review\s+task-parity-2\s+inc data\.blockedPRs\s+3 → 2 v2/);
      expect(table).toMatch(/task-parity-1\s+inc data\.label\s+rejected: inc needs a number/);
      const json = JSON.parse(await samePrinted(['world', 'ci', '--history', '--json'])) as {
        taskId: string;
      }[];
      expect(json.map((r) => r.taskId)).toEqual([
        'task-parity-2',
        'task-parity-1',
        'task-parity-1',
        'task-parity-1',
      ]);
      const one = await samePrinted([
        'world',
        'ci',
        '--history',
        '--path',
        'data.label',
        '--limit',
        '1',
      ]);
      expect(one.trim().split('\n')).toHaveLength(3);
    },
    cliTestTimeout(6),
  );

  it(
    'names the domains there are for an unknown one, the same way',
    async () => {
      const runs = await bothWays(['world', 'nope']);
      for (const [run, where] of [
        [runs.url, gw.url],
        [runs.store, store],
      ] as const) {
        expect(run.code).toBe(2);
        expect(run.stderr).toContain(
          `FLEETGATE_WORLD_DOMAIN_UNKNOWN: No world-state domain "nope" in ${where} (it has board, ci)`,
        );
      }
      expect(runs.url.stderr.replace(gw.url, '<where>')).toBe(
        runs.store.stderr.replace(store, '<where>'),
      );
    },
    cliTestTimeout(2),
  );
});
