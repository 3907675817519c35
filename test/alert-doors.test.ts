/**
 * An alert as an operator follows it, through a real `fleetgate start` child process: an agent
 * changes a domain its skill did not declare; `fleetgate tail` prints the alert's severity, radius
 * and whole message (what happened, in which task, what to do), and the world history that the
 * message points to refuses a path no delta could have instead of answering nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../examples/agents/index.js';
import { declareBlast, declareEffectDomain } from '../src/agent/index.js';
import { CLI_RUN_MS, runCli } from './support/cli.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';

describe('alerts through the operator doors of a running gateway', () => {
  let dir: string;
  let agent: RunningAgent;
  let gateway: ServiceProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-alert-doors-'));
    // `tidy` declares the board domain and reports a change to deploy.
    agent = await startAgent({
      name: 'rogue',
      skills: [{ id: 'tidy' }],
      declare: (card) =>
        declareEffectDomain(declareBlast(card, { tidy: 'project' }), {
          tidy: { domains: ['board'] },
        }),
      behaviour: () => ({
        deltas: [{ domain: 'deploy', path: 'data.tidied', op: 'inc', value: 1 }],
      }),
    });
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: rogue, url: ${agent.url} }`,
        '',
      ].join('\n'),
    );
    gateway = await startServiceProcess({ args: ['--config', config] });
  }, 90_000);

  afterAll(async () => {
    await gateway?.stop();
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'prints an undeclared_effect alert in fleetgate tail with its whole message',
    async () => {
      const url = gateway!.url;
      const tail = runCli(
        ['tail', '--url', url, '--count', '1', 'ops.alert.>'],
        {},
        {
          timeoutMs: CLI_RUN_MS * 2,
        },
      );
      // The tail is connected once the gateway counts its live-event client.
      await eventually(
        async () => {
          const metrics = await api<string>(url, '/metrics');
          return /^fleetgate_events_clients 1$/m.test(metrics.body) ? true : undefined;
        },
        CLI_RUN_MS,
        'fleetgate tail to connect',
      );
      const sent = await api<{ status: string; taskId: string }>(url, '/api/dispatch?wait=30s', {
        body: { agent: 'rogue', skill: 'tidy', text: 'tidy up' },
      });
      expect(sent.body.status).toBe('completed');
      const { code, stdout } = await tail;
      expect(code).toBe(0);
      const line = stdout.split('\n').find((l) => l.includes('ops.alert.undeclared_effect'));
      // Severity and radius first, then the message, whole: not cut inside the payload's JSON.
      expect(line).toMatch(/ops\.alert\.undeclared_effect \[warning\] project /);
      expect(line).toContain(
        `rogue/tidy changed deploy in task ${sent.body.taskId}, outside its declared domains ` +
          '(board); the change was applied: review it (fleetgate world deploy --history), then ' +
          'declare the domain for the skill or have the agent stop changing it',
      );
      expect(line).not.toContain('{"kind"');
      // Counted by kind and severity, for an alerting rule on the metrics.
      await eventually(
        async () => {
          const metrics = await api<string>(url, '/metrics');
          return /^fleetgate_alerts_total\{kind="undeclared_effect",severity="warning"\} 1$/m.test(
            metrics.body,
          )
            ? true
            : undefined;
        },
        10_000,
        'the alert to be counted',
      );
    },
    CLI_RUN_MS * 3,
  );

  it('answers a world history path no delta could have with an error naming it', async () => {
    const url = gateway!.url;
    await eventually(async () => {
      const r = await api(url, '/api/world/deploy');
      return r.status === 200 ? true : undefined;
    });
    const found = await api<{ records: unknown[] }>(
      url,
      '/api/world/deploy/history?path=data.tidied',
    );
    expect(found.body.records).toHaveLength(1);
    const bad = await api<{ error: { code: string; message: string } }>(
      url,
      '/api/world/deploy/history?path=data..tidied',
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('FLEETGATE_WORLD_QUERY_INVALID');
    expect(bad.body.error.message).toContain('path "data..tidied" has an empty segment');
  });
});
