/**
 * The CLI against a running gateway (`FLEETGATE_URL`, `FLEETGATE_TOKEN`), in child processes:
 * agents, dispatch (named, routed, --wait), approvals, world, tail over SSE, refresh, and
 * `config check`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { startServiceProcess } from './support/gateway-service.js';

/** How the CLI names itself in its hints when run from the checkout's root (`runCli`). */
const cli = './fleetgate';

const ADMIN = 'cli-admin-token-0123456789abcdef';
const OPERATOR = 'cli-operator-token-0123456789ab';

describe('fleetgate CLI against a running gateway', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let config: string;
  const as = (token: string): NodeJS.ProcessEnv => ({
    FLEETGATE_URL: gw.url,
    FLEETGATE_TOKEN: token,
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-'));
    agent = await startOpsAgent();
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: CLI_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: CLI_OPERATOR, roles: [operator] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', config],
      env: { CLI_ADMIN: ADMIN, CLI_OPERATOR: OPERATOR },
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'prints the fleet, as a table and as JSON',
    async () => {
      const table = await runCli(['agents'], as(OPERATOR));
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/ops\s+fresh\s+\S+\s+sitrep\s+self\s+autonomous/);
      expect(table.stdout).toMatch(/bulk_migration\s+fleet\s+gated/);
      const json = await runCli(['agents', '--json'], as(OPERATOR));
      expect(JSON.parse(json.stdout)).toMatchObject({ agents: [{ name: 'ops', status: 'fresh' }] });
    },
    cliTestTimeout(2),
  );

  it(
    'dispatches a routed skill and follows it to the end with --wait',
    async () => {
      const run = await runCli(
        ['dispatch', '--skill', 'sitrep', 'status please', '--wait'],
        as(OPERATOR),
      );
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('routed to ops: ops is the only agent offering sitrep');
      expect(run.stdout).toMatch(/ops\/sitrep\s+completed/);
      // A text that starts with a duration goes before --wait (after it, it reads as a value
      // given to --wait, which is refused).
      const early = await runCli(
        ['dispatch', 'ops', 'sitrep', '30s', 'ago', '--wait'],
        as(OPERATOR),
      );
      expect(early.stderr).toBe('');
      expect(early.stdout).toMatch(/ops\/sitrep\s+completed/);
    },
    cliTestTimeout(2),
  );

  it(
    'holds a gated dispatch, approves it under the token; a second approval is a note naming who decided',
    async () => {
      const held = await runCli(
        ['dispatch', 'ops', 'bulk_migration', 'migrate', '--json'],
        as(OPERATOR),
      );
      expect(held.code).toBe(0);
      const answer = JSON.parse(held.stdout) as {
        status: string;
        decision: { approvalId: string };
      };
      expect(answer.status).toBe('awaiting-approval');
      const list = await runCli(['approvals'], as(OPERATOR));
      expect(list.stdout).toContain(answer.decision.approvalId);
      const forbidden = await runCli(
        ['approvals', 'approve', answer.decision.approvalId],
        as(OPERATOR),
      );
      expect(forbidden.code).toBe(2);
      expect(forbidden.stderr).toContain('FLEETGATE_AUTH_FORBIDDEN');
      const ok = await runCli(['approvals', 'approve', answer.decision.approvalId], as(ADMIN));
      expect(ok.code).toBe(0);
      expect(ok.stdout).toMatch(/ops\/bulk_migration: consumed/);
      expect(ok.stdout).toMatch(/dispatch \S+ ops\/bulk_migration\s+completed/);
      // The same decision again: nothing to do (exit 0), and who decided.
      const again = await runCli(['approvals', 'approve', answer.decision.approvalId], as(ADMIN));
      expect(again).toMatchObject({ code: 0, stderr: '' });
      expect(again.stdout).toContain(`${answer.decision.approvalId}: already consumed by alice`);
      // The other decision is refused.
      const reject = await runCli(['approvals', 'reject', answer.decision.approvalId], as(ADMIN));
      expect(reject.code).toBe(2);
      expect(reject.stderr).toContain('FLEETGATE_APPROVAL_ALREADY_DECIDED');
      expect(reject.stderr).toContain('by alice');
      const world = await runCli(['world', 'github_issues', '--json'], as(OPERATOR));
      expect(JSON.parse(world.stdout)).toMatchObject({ state: { data: { migrated: ['repo-a'] } } });
    },
    cliTestTimeout(7),
  );

  it(
    'explains a decision with every reason, as the gateway takes it',
    async () => {
      const out = await runCli(['policy', 'explain', 'ops', 'pr_review'], as(OPERATOR));
      expect(out.code).toBe(0);
      expect(out.stdout).toContain('ops/pr_review: gated at radius repo');
      expect(out.stdout).toMatch(/declared-radius\s+declared repo/);
      expect(out.stdout).toMatch(/threshold\s+repo ≥ approvalAtOrAbove repo: gated/);
      const json = await runCli(['policy', 'explain', 'ops', 'pr_review', '--json'], as(OPERATOR));
      expect(JSON.parse(json.stdout)).toMatchObject({
        agent: 'ops',
        skill: 'pr_review',
        decision: { mode: 'gated', effectiveRadius: 'repo' },
      });
    },
    cliTestTimeout(2),
  );

  it(
    'tails live events over SSE',
    async () => {
      const tail = runCli(['tail', 'world.state.delta', '--count', '1', '--json'], as(OPERATOR));
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const sent = await runCli(['dispatch', 'ops', 'sitrep', '--wait'], as(OPERATOR));
      expect(sent.code).toBe(0);
      const run = await tail;
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout.trim())).toMatchObject({
        topic: 'world.state.delta',
        payload: { source: 'ops', skill: 'sitrep' },
      });
    },
    cliTestTimeout(2),
  );

  it(
    'stops at exactly --count events when several arrive in one burst',
    async () => {
      const tail = runCli(['tail', '--count', '1', '--json'], as(OPERATOR));
      await new Promise((resolve) => setTimeout(resolve, 2500));
      // One dispatch publishes a burst (dispatch, task, delta and cost events) within milliseconds.
      const sent = await runCli(['dispatch', 'ops', 'sitrep', '--wait'], as(OPERATOR));
      expect(sent.code).toBe(0);
      const run = await tail;
      expect(run.code).toBe(0);
      expect(run.stdout.trim().split('\n')).toHaveLength(1);
    },
    cliTestTimeout(2),
  );

  it(
    'refreshes cards and says clearly when the gateway is not there or the token is wrong',
    async () => {
      const refresh = await runCli(['refresh'], as(OPERATOR));
      expect(refresh.code).toBe(0);
      expect(refresh.stdout).toMatch(/ops: (unchanged|changed)/);
      const wrong = await runCli(['agents'], as('not-the-token-0123456789'));
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain('FLEETGATE_AUTH_INVALID');
      const away = await runCli(['agents'], {
        FLEETGATE_URL: 'http://127.0.0.1:9',
        FLEETGATE_TOKEN: OPERATOR,
      });
      expect(away.code).toBe(2);
      expect(away.stderr).toContain('FLEETGATE_GATEWAY_UNREACHABLE');
    },
    cliTestTimeout(3),
  );

  it(
    'says when --wait stops waiting: the call goes on at the gateway, its id and how to follow it',
    async () => {
      // A gated call is held for approval: it cannot end within the second --wait gives it.
      const run = await runCli(
        ['dispatch', 'ops', 'bulk_migration', 'migrate repo-b', '--wait', '--timeout', '1s'],
        as(OPERATOR),
      );
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/ops\/bulk_migration\s+awaiting-approval/);
      // The call was never sent: no `running` before it was held (the stream's first event).
      expect(run.stdout).not.toMatch(/\brunning\b/);
      const [head, fix] = run.stderr.trimEnd().split('\n');
      const id =
        /^FLEETGATE_CALL_TIMEOUT: stopped waiting after 1s \(--timeout\): call (\S+) \(ops\/bulk_migration\) is still awaiting-approval at the gateway, which goes on with it$/.exec(
          head ?? '',
        )?.[1];
      expect(id, run.stderr).toBeDefined();
      expect(fix).toBe(
        `  fix: follow it with \`${cli} call ${id!.slice(-8)}\`, at ${gw.url}/#/calls/${id} or GET ${gw.url}/api/dispatches/${id}`,
      );
      // The id is the call's, and the call is still there.
      const record = await fetch(`${gw.url}/api/dispatches/${id}`, {
        headers: { authorization: `Bearer ${OPERATOR}` },
      });
      expect(await record.json()).toMatchObject({ id, status: 'awaiting-approval' });

      const json = await runCli(
        [
          'dispatch',
          'ops',
          'bulk_migration',
          'migrate repo-c',
          '--wait',
          '--timeout',
          '1s',
          '--json',
        ],
        as(OPERATOR),
      );
      expect(json.code).toBe(1);
      expect(json.stderr).toBe('');
      const lines = json.stdout.trimEnd().split('\n');
      expect(lines.map((l) => (JSON.parse(l) as { status?: string }).status)).toEqual([
        'awaiting-approval',
        undefined,
      ]);
      // Each status change on a line, the last one held; then the error object, one line too.
      expect(JSON.parse(lines.at(-2)!)).toMatchObject({ status: 'awaiting-approval' });
      const jsonId = (JSON.parse(lines.at(-2)!) as { id: string }).id;
      const error = (JSON.parse(lines.at(-1)!) as { error: Record<string, unknown> }).error;
      expect(error).toEqual({
        code: 'FLEETGATE_CALL_TIMEOUT',
        message: `stopped waiting after 1s (--timeout): call ${jsonId} (ops/bulk_migration) is still awaiting-approval at the gateway, which goes on with it`,
        fix: `follow it with \`${cli} call ${jsonId.slice(-8)}\`, at ${gw.url}/#/calls/${jsonId} or GET ${gw.url}/api/dispatches/${jsonId}`,
        dispatch: { id: jsonId, status: 'awaiting-approval' },
      });
    },
    cliTestTimeout(2),
  );

  it(
    'checks a configuration without starting anything',
    async () => {
      const good = await runCli(['config', 'check', config], {
        CLI_ADMIN: ADMIN,
        CLI_OPERATOR: OPERATOR,
      });
      expect(good.code).toBe(0);
      expect(good.stdout).toContain('1 agent,');
      const bad = join(dir, 'bad.yaml');
      writeFileSync(
        bad,
        'listen: { host: 0.0.0.0 }\nagents: [{ name: x, url: ftp://nope }]\nbus: kafka\n',
      );
      const run = await runCli(['config', 'check', bad]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('bus: must be memory or nats://host:port');
      // What start would refuse beyond the file's shape: an open address without tokens, and a
      // token the environment does not hold.
      const open = join(dir, 'open.yaml');
      writeFileSync(open, 'listen: { host: 0.0.0.0 }\n');
      const unsafe = await runCli(['config', 'check', open]);
      expect(unsafe.code).toBe(1);
      expect(unsafe.stderr).toContain('FLEETGATE_LISTEN_UNSAFE');
      const missing = await runCli(['config', 'check', config], { CLI_ADMIN: ADMIN });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/auth\.tokens\[\d\]\.tokenEnv: CLI_OPERATOR is not set/);
    },
    cliTestTimeout(4),
  );
});
