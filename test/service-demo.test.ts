/**
 * `fleetgate start` without a configuration — what `npm start` runs — in a fresh directory:
 * three real demo agents fresh within 20 s, a deploy waiting for approval, deltas flowing into
 * seeded world state, SIGTERM exits 0, and a restart in the same directory keeps the state.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServiceProcess } from './support/gateway-service.js';
import { runCli } from './support/cli.js';
import { ROOT, api, eventually, startServiceProcess } from './support/gateway-service.js';

interface Ready {
  status: string;
  agents: Record<string, number>;
}

describe('fleetgate start (the demo)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-demo-'));
  const running: ServiceProcess[] = [];

  afterAll(async () => {
    for (const p of running) await p.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('is what npm start runs', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe('node bin/fleetgate.js start');
  });

  it('serves three fresh agents within 20 s, a gated deploy, seeded world state; stops with 0; a restart keeps state', async () => {
    const began = Date.now();
    const first = await startServiceProcess({
      cwd: dir,
      args: ['--port', '0'],
      env: { FLEETGATE_TOKEN: undefined },
    });
    running.push(first);
    const ready = await eventually(
      async () => {
        const r = await api<Ready>(first.url, '/readyz');
        return r.status === 200 && r.body.agents.fresh === 3 ? r.body : undefined;
      },
      20_000,
      'three fresh agents',
    );
    expect(ready.agents).toMatchObject({ fresh: 3, pending: 0, failed: 0, stale: 0 });
    expect(Date.now() - began).toBeLessThan(20_000);
    expect(first.token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(first.stdout()).toContain(`Dashboard    ${first.url}/#token=${first.token!}`);
    // The banner's commands run the checkout's launcher: no rebuild, no npx install.
    expect(first.stdout()).toMatch(/^ {4}\S*fleetgate agents$/mu);
    expect(first.stdout()).not.toContain('npx fleetgate');
    const token = first.token!;

    // The token is required: the demo is not open to anyone on the machine.
    expect((await api(first.url, '/api/agents')).status).toBe(401);
    const agents = await api(first.url, '/api/agents', { token });
    expect(agents.body).toMatchObject({
      agents: [
        {
          name: 'ci',
          skills: [
            { id: 'sitrep', effectiveRadius: 'self' },
            { id: 'rerun_checks', effectiveRadius: 'repo' },
          ],
        },
        {
          name: 'board',
          skills: [{ id: 'triage', effectiveRadius: 'project' }, { id: 'plan_sprint' }],
        },
        {
          name: 'deployer',
          skills: [
            { id: 'production_deploy', effectiveRadius: 'public', hitlMode: 'gated' },
            { id: 'rollback', effectiveRadius: 'fleet', hitlMode: 'veto' },
          ],
        },
      ],
    });
    const world = await api(first.url, '/api/world/deploy', { token });
    expect(world.body).toMatchObject({
      version: 0,
      state: { data: { version: '1.4.2', deploys: 0 } },
    });

    expect(first.approval).toBeDefined();
    const approved = await api(first.url, `/api/approvals/${first.approval!}/approve`, {
      token,
      body: {},
    });
    expect(approved.body).toMatchObject({ dispatch: { agent: 'deployer', status: 'completed' } });
    // The banner's way to see what ran: the approved deploy is the deployer's newest call.
    expect(first.stdout()).toMatch(
      /^ {4}\S*fleetgate calls {3}# what ran; `call ID` tells one call's story$/mu,
    );
    const calls = await runCli(['calls', '--agent', 'deployer', '--limit', '1'], {
      FLEETGATE_URL: first.url,
      FLEETGATE_TOKEN: token,
    });
    expect(calls.stdout).toMatch(/deployer\/production_deploy\s+completed/);
    const deployed = await api(first.url, '/api/world/deploy', { token });
    expect(deployed.body).toMatchObject({
      version: 1,
      state: { data: { version: '1.5.0', deploys: 1 } },
    });
    // The board bot is long-running and reports by push notification.
    const triage = await api<{ id: string; status: string }>(first.url, '/api/dispatch', {
      token,
      body: { agent: 'board', skill: 'triage' },
    });
    expect(triage.body.status).toBe('running');
    await eventually(
      async () => {
        const d = await api<{ status: string }>(first.url, `/api/dispatches/${triage.body.id}`, {
          token,
        });
        return d.body.status === 'completed' ? true : undefined;
      },
      15_000,
      'the triage to finish',
    );

    expect(await first.stop('SIGTERM')).toBe(0);

    const second = await startServiceProcess({ cwd: dir, args: ['--port', '0'] });
    running.push(second);
    expect(second.token).not.toBe(token);
    const kept = await api(second.url, '/api/world/deploy', { token: second.token! });
    expect(kept.body).toMatchObject({
      version: 1,
      state: { data: { version: '1.5.0', deploys: 1 } },
    });
    const done = await api(second.url, `/api/dispatches/${triage.body.id}`, {
      token: second.token!,
    });
    expect(done.body).toMatchObject({ status: 'completed' });
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 90_000);
});
