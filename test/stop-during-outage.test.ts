/**
 * A gateway stopped (SIGTERM) while its PostgreSQL is away loses nothing it saw: `fleetgate start`
 * as a child process, its database behind a TCP proxy the test cuts. A call's task ends at the
 * agent during the outage — the gateway has the answer but cannot commit its claim — and the
 * gateway is stopped before the database is back. It keeps the task's end in its claim journal;
 * the next start, with the database back, replays it: the call ends `completed` with its delta
 * applied once, even though the agent restarted meanwhile and no longer knows the task (so asking
 * the agent, as recovery of a killed gateway does, could not have found it).
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/harness.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { startServiceProcess } from './support/gateway-service.js';
import { until } from './support/gateway.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import type { TcpProxy } from './support/tcp-proxy.js';
import { startTcpProxy } from './support/tcp-proxy.js';

const pgUp = await requirePostgres();

interface Dispatch {
  id: string;
  status: string;
  taskId: string | null;
  result: { error?: { code: string } } | null;
}

describe.skipIf(!pgUp)('a gateway stopped while its database is away', () => {
  const schema = uniqueName('fgjournal');
  let proxy: TcpProxy;
  let dir: string;
  let config: string;
  let agent: RunningAgent;
  let port: number | undefined;
  let hold: { promise: Promise<void>; release: () => void };
  const gateways: ServiceProcess[] = [];

  const newHold = (): void => {
    let release!: () => void;
    const promise = new Promise<void>((r) => (release = r));
    hold = { promise, release };
  };
  const startAgent = (): Promise<RunningAgent> =>
    startOpsAgent({
      ...(port === undefined ? {} : { port }),
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        hold: hold.promise,
      }),
    });
  const start = async (): Promise<ServiceProcess> => {
    const g = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 });
    gateways.push(g);
    g.child.once('exit', (code) => {
      if (code !== 0 && code !== null) console.error(`gateway exited ${code}:\n${g.stderr()}`);
    });
    return g;
  };

  beforeAll(async () => {
    newHold();
    agent = await startAgent();
    port = Number(new URL(agent.url).port);
    const target = new URL(PG_URL);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    target.port = String(proxy.port);
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-journal-'));
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: ${target.href}?schema=${schema}`,
        'storeTimeouts: { connect: 1s, statement: 5s, query: 5s }',
        'bus: memory',
        `journal: ${join(dir, 'claims')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'replicas: { leaseTtl: 3s }',
      ].join('\n'),
    );
  }, 60_000);

  afterAll(async () => {
    for (const g of gateways) await g.stop('SIGKILL');
    hold.release();
    await agent?.close();
    await proxy?.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  });

  async function api<T>(g: ServiceProcess, path: string, init?: RequestInit): Promise<T> {
    const response = await fetch(`${g.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...init?.headers },
    });
    return (await response.json()) as T;
  }

  async function endedBy(g: ServiceProcess, correlationId: string): Promise<Dispatch> {
    const end = Date.now() + 30_000;
    for (;;) {
      const page = await api<{ dispatches: Dispatch[] }>(
        g,
        `/api/dispatches?correlationId=${correlationId}`,
      );
      const done = page.dispatches[0];
      if (done !== undefined && !['running', 'awaiting-input'].includes(done.status)) return done;
      if (Date.now() > end) throw new Error(`dispatch still ${done?.status} after 30 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('ends a call whose answer came during the outage once the database is back, without a restart', async () => {
    newHold();
    const g = await start();
    const before = agent.received.length;
    const correlationId = uniqueName('outage');
    const waiting = fetch(`${g.url}/api/dispatch?wait=60s`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'status', correlationId }),
    }).then(
      (r) => r.text(),
      (e: unknown) => `${String(e)}\n${g.stdout()}\n${g.stderr()}`,
    );
    await until(() => agent.received.length > before, 20_000, 'the call to reach the agent');
    const taskId = agent.received[before]!.taskId;
    proxy.cut();
    hold.release();
    expect(await waiting).toMatch(/FLEETGATE_STORE_UNAVAILABLE/);
    proxy.pass();
    expect(await endedBy(g, correlationId)).toMatchObject({ status: 'completed', taskId });
    expect(agent.received.length).toBe(before + 1);
    await g.stop('SIGTERM');
    gateways.splice(gateways.indexOf(g), 1);
  }, 120_000);

  it('keeps the end of a task it could not commit and replays it at the next start: completed, its delta once', async () => {
    newHold();
    const g = await start();
    const before = agent.received.length;
    const correlationId = uniqueName('journal');
    const waiting = fetch(`${g.url}/api/dispatch?wait=60s`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'status', correlationId }),
    }).then(
      async (r) => `${r.status} ${await r.text()}`,
      (e: unknown) =>
        `${String(e)} ${String((e as Error).cause)} exit=${g.child.exitCode}\n${g.stdout()}\n${g.stderr()}`,
    );
    await until(() => agent.received.length > before, 20_000, 'the call to reach the agent');
    const taskId = agent.received[before]!.taskId;

    // The database goes away; then the task ends: the gateway has the answer, not the database.
    proxy.cut();
    hold.release();
    // The blocking call's answer came back; the gateway could not record it.
    const answer = await waiting;
    // Unavailable, not failed: the caller may ask again (the dispatch ends once the store is back).
    expect(answer).toMatch(/^503 .*FLEETGATE_STORE_UNAVAILABLE/);
    const code = await g.stop('SIGTERM');
    expect(code, `${g.stdout()}\n${g.stderr()}`).toBe(0);
    expect(readdirSync(join(dir, 'claims')).filter((f) => f.endsWith('.json'))).toHaveLength(1);

    // The agent restarts and forgets its tasks; the database comes back; the gateway starts.
    await agent.close();
    newHold();
    hold.release();
    agent = await startAgent();
    proxy.pass();
    const restarted = await start();

    const done = await endedBy(restarted, correlationId);
    expect(done).toMatchObject({ status: 'completed', taskId });
    let applied = 0;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const history = await api<{ records?: { taskId?: string; status?: string }[] }>(
        restarted,
        '/api/world/board/history?limit=10000',
      );
      applied = (history.records ?? []).filter(
        (r) => r.taskId === taskId && r.status === 'applied',
      ).length;
      if (applied > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(applied).toBe(1);
    // Replayed files are gone; nothing was sent to the agent again.
    expect(readdirSync(join(dir, 'claims'))).toEqual([]);
    expect(agent.received).toHaveLength(0);
  }, 150_000);
});
