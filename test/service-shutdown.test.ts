/**
 * A busy gateway stops cleanly every time: `fleetgate start` as a child process with calls in
 * flight, an approval decided, a live-event stream and A2A proxy streams open, and enough
 * commits behind it that the SQLite store's background work runs — then SIGTERM (or SIGINT), and
 * the process says "stopped" and exits 0. Twenty runs in a row each way: a supervisor reads any
 * other exit as a crash.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { sdkClient, userMessage } from './support/a2a-client.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'shutdown-admin-0123456789abcdef';
const RUNS = 20;

describe('stopping a busy gateway', () => {
  let dir: string;
  let agent: RunningAgent;
  let config: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-shutdown-'));
    agent = await startOpsAgent({ streaming: true });
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0, shutdownTimeout: 10s }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'policy: { sweepInterval: 200ms }',
        'auth:',
        '  tokens: [{ name: admin, tokenEnv: SHUTDOWN_ADMIN, roles: [admin] }]',
      ].join('\n'),
    );
  }, 60_000);

  afterAll(async () => {
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a gateway, keeps it busy, stops it with `signal`; its exit code and stderr. */
  async function busyRun(signal: NodeJS.Signals): Promise<{ code: number | null; stderr: string }> {
    const gw = await startServiceProcess({
      args: ['--config', config],
      env: { SHUTDOWN_ADMIN: ADMIN },
      timeoutMs: 60_000,
    });
    const controller = new AbortController();
    try {
      // A live-event stream, open until the gateway ends it.
      const events = fetch(`${gw.url}/api/events`, {
        headers: { authorization: `Bearer ${ADMIN}` },
        signal: controller.signal,
      })
        .then((r) => r.text())
        .catch(() => undefined);
      // A gated call, approved: the approval and its release commit.
      const held = await api<{ decision: { approvalId: string } }>(gw.url, '/api/dispatch', {
        token: ADMIN,
        body: { agent: 'ops', skill: 'bulk_migration', text: 'migrate' },
      });
      await api(gw.url, `/api/approvals/${held.body.decision.approvalId}/approve`, {
        token: ADMIN,
        body: { reason: 'ok' },
      });
      // Calls through the A2A proxy, streaming.
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: ADMIN });
      const streams = [0, 1].map(async () => {
        try {
          for await (const event of client.sendMessageStream({
            tenant: '',
            message: userMessage('status?', { 'x-effect-domain-skill': 'sitrep' }),
            configuration: undefined,
            metadata: undefined,
          }))
            void event;
        } catch {
          // Cut by the stop.
        }
      });
      // Enough commits that the store's background work starts, and calls still in flight.
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i += 1) {
        calls.push(
          api(gw.url, '/api/dispatch', {
            token: ADMIN,
            body: { agent: 'ops', skill: 'sitrep', text: `call ${i}` },
          }).catch(() => undefined),
        );
        if (i === 30) await Promise.all(calls.slice(0, 20));
      }
      await eventually(async () => {
        const { body } = await api<string>(gw.url, '/metrics', { token: ADMIN });
        const started = /fleetgate_dispatches_total\{[^}]*\} (\d+)/g;
        let total = 0;
        for (const m of body.matchAll(started)) total += Number(m[1]);
        return total >= 10 ? true : undefined;
      }, 30_000).catch(() => undefined);
      const code = await gw.stop(signal);
      await Promise.allSettled([events, ...streams, ...calls]);
      return { code, stderr: gw.stderr() };
    } finally {
      controller.abort();
      await gw.stop('SIGKILL');
    }
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(
      `exits 0 after ${signal}, ${RUNS} busy runs in a row`,
      async () => {
        const failures: string[] = [];
        for (let run = 0; run < RUNS; run += 1) {
          const { code, stderr } = await busyRun(signal);
          if (code !== 0 || !stderr.includes('fleetgate: stopped')) {
            failures.push(`run ${run}: exit ${code}\n${stderr.split('\n').slice(-8).join('\n')}`);
          }
        }
        expect(failures).toEqual([]);
      },
      RUNS * 30_000,
    );
  }
});
