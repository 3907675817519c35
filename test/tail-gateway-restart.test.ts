/**
 * `fleetgate tail --url` follows a gateway through a restart, as `tail -F` follows a file: the
 * gateway (`fleetgate start`, a child process on a fixed port) is stopped and started again while
 * the tail runs; the tail waits for it (it answers 503 while it starts), resumes, and prints the
 * next call's event. A URL nothing answers at still fails within seconds.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { CLI_RUN_MS, runCli } from './support/cli.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { eventually, startServiceProcess } from './support/gateway-service.js';
import { freePort } from './support/private-servers.js';

describe('fleetgate tail --url through a gateway restart', () => {
  let dir: string;
  let agent: RunningAgent;
  let config: string;
  let url: string;
  let gateway: ServiceProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-tail-restart-'));
    agent = await startOpsAgent();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        `listen: { host: 127.0.0.1, port: ${port} }`,
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
      ].join('\n'),
    );
  });

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<ServiceProcess> =>
    (gateway = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 }));

  async function clients(): Promise<string | undefined> {
    const metrics = await fetch(`${url}/metrics`).then((r) => r.text());
    return /^fleetgate_events_clients (\d+)$/m.exec(metrics)?.[1];
  }

  it(
    'waits for the gateway to come back and prints the next call’s event',
    async () => {
      await start();
      const tail = runCli(
        ['tail', '--url', url, '--count', '1', 'skill.dispatch.completed'],
        {},
        { timeoutMs: CLI_RUN_MS * 3 },
      );
      await eventually(
        async () => ((await clients()) === '1' ? true : undefined),
        CLI_RUN_MS,
        'fleetgate tail to connect',
      );
      // Away for a few seconds, as a restart with its migrations and card fetches can be.
      expect(await gateway!.stop('SIGTERM')).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      await start();
      await eventually(
        async () => ((await clients()) === '1' ? true : undefined),
        CLI_RUN_MS,
        'fleetgate tail to come back',
      );
      const sent = await fetch(`${url}/api/dispatch?wait=30s`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'status' }),
      }).then((r) => r.json() as Promise<{ id: string; status: string }>);
      expect(sent.status).toBe('completed');
      const { code, stdout, stderr } = await tail;
      expect(code, stderr).toBe(0);
      expect(stdout).toContain('skill.dispatch.completed');
      expect(stdout).toContain('sitrep');
    },
    CLI_RUN_MS * 4,
  );

  it(
    'still fails soon at a URL nothing answers at',
    async () => {
      const nowhere = `http://127.0.0.1:${await freePort()}`;
      const run = await runCli(
        ['tail', '--url', nowhere, '--count', '1'],
        {},
        { timeoutMs: CLI_RUN_MS },
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^FLEETGATE_GATEWAY_UNREACHABLE: /m);
    },
    CLI_RUN_MS * 2,
  );
});
