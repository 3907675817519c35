/**
 * The first minutes with the demo, through the front door: `fleetgate start` as a child process in
 * a fresh directory, the CLI as a child process against it with `FLEETGATE_URL` and
 * `FLEETGATE_TOKEN`, as the banner says. Two people: a deploy dispatched as `admin` waits (its own
 * line, exit 0, the approval id and the command), admin cannot approve it, `alice` can; the same
 * decision again is a note with exit 0. `policy explain` agrees with the gateway, `tail --from all`
 * replays, usage mistakes are exit 2, the demo's counts never go impossible, and the banner's
 * approve line still works after a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from './support/cli.js';
import {
  api,
  eventually,
  startServiceProcess,
  type ServiceProcess,
} from './support/gateway-service.js';

describe('the demo, its banner and the CLI against it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-demo-story-'));
  let gw: ServiceProcess;
  const running: ServiceProcess[] = [];

  /** The CLI as the banner has the user run it, with `token` (admin's by default). */
  const cli = (args: string[], token = gw.token): Promise<CliRun> =>
    runCli(args, { FLEETGATE_URL: gw.url, FLEETGATE_TOKEN: token }, { cwd: dir });

  beforeAll(async () => {
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--port', '0'],
      env: { FLEETGATE_TOKEN: undefined, FLEETGATE_ALICE_TOKEN: undefined },
    });
    running.push(gw);
    await eventually(
      async () => {
        const r = await api<{ agents: { fresh: number } }>(gw.url, '/readyz');
        return r.status === 200 && r.body.agents.fresh === 3 ? true : undefined;
      },
      20_000,
      'three fresh agents',
    );
  }, 40_000);

  afterAll(async () => {
    for (const p of running) await p.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints two people: an admin and the approver alice, each with a token that signs in', async () => {
    expect(gw.token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(gw.aliceToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(gw.aliceToken).not.toBe(gw.token);
    expect(gw.stdout()).toContain(`${gw.url}/#token=${gw.aliceToken!}`);
    const admin = await api(gw.url, '/api/session', { token: gw.token! });
    const alice = await api(gw.url, '/api/session', { token: gw.aliceToken! });
    expect(admin.body).toMatchObject({ name: 'admin', role: 'admin' });
    expect(alice.body).toMatchObject({ name: 'alice', role: 'approver' });
    // The banner walks through dispatching as one and approving as the other.
    expect(gw.stdout()).toMatch(/dispatch deployer production_deploy/);
    expect(gw.stdout()).toContain(`FLEETGATE_TOKEN=${gw.aliceToken!} `);
    // No JSON log line runs through the banner.
    expect(gw.stderr()).not.toMatch(/^\{"level"/mu);
  });

  it('a deploy dispatched as admin waits (exit 0, its approval id and command); alice approves it', async () => {
    const sent = await cli(['dispatch', 'deployer', 'production_deploy', 'ship 1.6.0']);
    expect(sent.code).toBe(0);
    expect(sent.stdout).not.toContain('DENIED');
    const id = /waiting for approval (\S+)/.exec(sent.stdout)?.[1];
    expect(id).toBeDefined();
    expect(sent.stdout).toContain(`approvals approve ${id!}`);

    const self = await cli(['approvals', 'approve', id!]);
    expect(self.code).toBe(2);
    expect(self.stderr).toContain('FLEETGATE_APPROVAL_SELF');

    const approved = await cli(['approvals', 'approve', id!], gw.aliceToken);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(/dispatch \S+ deployer\/production_deploy\s+completed/);

    // The same decision again: nothing to do, not a failure.
    const again = await cli(['approvals', 'approve', id!], gw.aliceToken);
    expect(again).toMatchObject({ code: 0, stderr: '' });
    expect(again.stdout).toMatch(new RegExp(`${id!}: already (approved|consumed) by alice`));
    // The other decision is still refused.
    const reject = await cli(['approvals', 'reject', id!], gw.aliceToken);
    expect(reject.code).toBe(2);
    expect(reject.stderr).toContain('FLEETGATE_APPROVAL_ALREADY_DECIDED');
  }, 60_000);

  it('dispatch --wait names the approval it waits for, and ends when alice approves', async () => {
    const waiting = cli(['dispatch', 'deployer', 'production_deploy', 'ship 1.7.0', '--wait']);
    const id = await eventually(
      async () => {
        const list = await api<{ approvals: { id: string; requestedBy: string | null }[] }>(
          gw.url,
          '/api/approvals',
          { token: gw.token! },
        );
        return list.body.approvals.find((a) => a.requestedBy === 'admin')?.id;
      },
      20_000,
      'the held deploy',
    );
    // Give the waiting command time to print its line before the approval moves the call on.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const approved = await cli(['approvals', 'approve', id], gw.aliceToken);
    expect(approved.code).toBe(0);
    const run = await waiting;
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`waiting for approval ${id}`);
    expect(run.stdout).toMatch(/completed/);
    expect(run.stdout).not.toContain('DENIED');
  }, 60_000);

  it('policy explain asks the gateway and agrees with it; an unknown agent or skill is exit 2', async () => {
    const explained = await cli(['policy', 'explain', 'deployer', 'production_deploy']);
    expect(explained.code).toBe(0);
    expect(explained.stdout).toMatch(/deployer\/production_deploy: gated at radius public/);
    expect(explained.stdout).toMatch(/approvers needed: 1/);
    const json = await cli(['policy', 'explain', 'deployer', 'production_deploy', '--json']);
    const gate = await api(gw.url, '/api/policy/explain?agent=deployer&skill=production_deploy', {
      token: gw.token!,
    });
    expect(JSON.parse(json.stdout)).toEqual(gate.body);

    const agent = await cli(['policy', 'explain', 'nosuch', 'x']);
    expect(agent.code).toBe(2);
    expect(agent.stderr).toContain('FLEETGATE_AGENT_UNKNOWN');
    const skill = await cli(['policy', 'explain', 'deployer', 'nosuch']);
    expect(skill.code).toBe(2);
    expect(skill.stderr).toContain('FLEETGATE_SKILL_UNKNOWN');
    expect(skill.stderr).toContain('production_deploy');
  }, 60_000);

  it('tail --from all --count 3 replays what the gateway retains and ends', async () => {
    const run = await runCli(
      ['tail', '--from', 'all', '--count', '3'],
      { FLEETGATE_URL: gw.url, FLEETGATE_TOKEN: gw.token },
      { cwd: dir, timeoutMs: 20_000 },
    );
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(3);
    expect(run.stderr).not.toContain('fleetgate.gap');
  }, 30_000);

  it('world --path without --history is a usage error, against a gateway too', async () => {
    const run = await cli(['world', 'ci', '--path', 'data.failingChecks']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('FLEETGATE_USAGE: --path applies only with --history');
  });

  it('agents with neither a gateway nor a configuration names --url', async () => {
    const run = await runCli(['agents'], { FLEETGATE_URL: undefined }, { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/pass --url URL \(or set FLEETGATE_URL\)/);
  });

  it('CI re-runs never drive failing checks below zero', async () => {
    for (let i = 0; i < 8; i += 1) {
      const run = await cli(['dispatch', 'ci', 'rerun_checks', `PR ${200 + i}`, '--wait']);
      expect(run.code).toBe(0);
    }
    const ci = await api<{ state: { data: { failingChecks: number; reruns: number } } }>(
      gw.url,
      '/api/world/ci',
      { token: gw.token! },
    );
    expect(ci.body.state.data.reruns).toBeGreaterThanOrEqual(8);
    expect(ci.body.state.data.failingChecks).toBeGreaterThanOrEqual(0);
  }, 90_000);

  it('names process metrics once, answers /favicon.ico without an error', async () => {
    const metrics = await fetch(`${gw.url}/metrics`, {
      headers: { authorization: `Bearer ${gw.token!}` },
    });
    const text = await metrics.text();
    expect(text).toContain('fleetgate_process_cpu_seconds_total');
    expect(text).not.toContain('process_process');
    expect((await fetch(`${gw.url}/favicon.ico`)).status).toBe(204);
  });

  it('refuses a second demo on the same store; after a restart the banner approve line works', async () => {
    const second = await runCli(['start', '--port', '0'], {}, { cwd: dir, timeoutMs: 30_000 });
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(
      /another demo gateway \(pid \d+\) runs on \.\/data\/fleetgate\.db/,
    );

    // A deploy of admin's own waits when the gateway stops: the next banner must not offer it.
    const mine = await cli(['dispatch', 'deployer', 'production_deploy', 'ship 1.8.0']);
    expect(mine.code).toBe(0);
    const own = /waiting for approval (\S+)/.exec(mine.stdout)?.[1];
    expect(await gw.stop('SIGTERM')).toBe(0);

    gw = await startServiceProcess({
      cwd: dir,
      args: ['--port', '0'],
      env: { FLEETGATE_TOKEN: undefined, FLEETGATE_ALICE_TOKEN: undefined },
    });
    running.push(gw);
    expect(gw.approval).toBeDefined();
    expect(gw.approval).not.toBe(own);
    const line = new RegExp(`approvals approve ${gw.approval!}`);
    expect(gw.stdout()).toMatch(line);
    const approved = await cli(['approvals', 'approve', gw.approval!]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(/completed/);
  }, 90_000);
});
