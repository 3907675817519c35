/**
 * A gateway killed (SIGKILL) while a call is at the agent loses nothing: `fleetgate start` as a
 * child process, driven through its HTTP API only, on SQLite and on PostgreSQL + JetStream. The
 * call's holder and the ids of what it sent are committed before the first byte leaves, so the
 * restarted gateway finds the task at the agent (ListTasks by context) and follows it to its end,
 * its delta applied once — or, when the agent has no such task, ends the call
 * `FLEETGATE_CALL_OUTCOME_UNKNOWN` instead of leaving it `running` forever or sending it twice.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/harness.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import { TaskState } from '@a2a-js/sdk';
import { callSitrep, sdkClient } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { eventually, startServiceProcess } from './support/gateway-service.js';
import { until } from './support/gateway.js';
import { CLI_RUN_MS, runCli } from './support/cli.js';
import type { TcpProxy } from './support/tcp-proxy.js';
import { startTcpProxy } from './support/tcp-proxy.js';
import {
  deleteNatsStream,
  NATS_URL,
  PG_URL,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';

const pgUp = await requirePostgres();
const natsUp = await requireNats();

interface Dispatch {
  id: string;
  status: string;
  taskId: string | null;
  result: { error?: { code: string } } | null;
}

interface Variant {
  name: string;
  skip: boolean;
  /** The `store:` and `bus:` lines of the config, and how to clean up after. */
  prepare(): Prepared;
}

interface Prepared {
  store: string;
  bus: string;
  cleanup: () => Promise<void>;
  /**
   * Takes the store's write lock from outside the gateway (another process would): its writes
   * wait until `unlock`. Resolves once a write of the gateway is seen waiting, where the store
   * can tell (PostgreSQL), or at once.
   */
  lockWrites(): Promise<{ waiting: () => Promise<boolean>; unlock: () => Promise<void> }>;
  /**
   * Locks one table from outside the gateway: the gateway's first statement on it waits (a point
   * between two of its commits). Undefined on SQLite: one write lock holds the whole file, so no
   * point between two commits can be held from outside the process.
   */
  lockTable?(
    table: string,
  ): Promise<{ waiting: () => Promise<boolean>; unlock: () => Promise<void> }>;
}

/** A table lock held by another PostgreSQL session, and a second session that sees who waits. */
async function lockPgTable(
  schema: string,
  table: string,
): Promise<{ waiting: () => Promise<boolean>; unlock: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query('begin');
  await client.query(`lock table ${schema}.${table} in access exclusive mode`);
  const watcher = new pg.Client({ connectionString: PG_URL });
  await watcher.connect();
  return {
    async waiting() {
      const r = await watcher.query<{ n: string }>(
        `select count(*) as n from pg_locks
         where not granted and relation = '${schema}.${table}'::regclass`,
      );
      return Number(r.rows[0]!.n) > 0;
    },
    async unlock() {
      await client.query('rollback').catch(() => undefined);
      await client.end();
      await watcher.end();
    },
  };
}

const VARIANTS: Variant[] = [
  {
    name: 'SQLite',
    skip: false,
    prepare() {
      const dir = mkdtempSync(join(tmpdir(), 'fleetgate-call-crash-'));
      const file = join(dir, 'gw.db');
      return {
        store: `sqlite:${file}`,
        bus: 'memory',
        cleanup: () => Promise.resolve(rmSync(dir, { recursive: true, force: true })),
        lockWrites() {
          // One writer at a time: holding the write lock makes every write of the gateway wait.
          const db = new Database(file);
          db.exec('begin immediate');
          return Promise.resolve({
            waiting: () => Promise.resolve(true),
            unlock: () => Promise.resolve(void (db.exec('rollback'), db.close())),
          });
        },
      };
    },
  },
  {
    name: 'PostgreSQL + JetStream',
    skip: !pgUp || !natsUp,
    prepare() {
      const name = uniqueName('fgcrash');
      const stream = name.toUpperCase();
      return {
        store: `${PG_URL}?schema=${name}`,
        bus: `${NATS_URL}?stream=${stream}&prefix=${name}`,
        cleanup: async () => {
          await deleteNatsStream(stream).catch(() => undefined);
          const client = new pg.Client({ connectionString: PG_URL });
          await client.connect();
          await client.query(`drop schema if exists ${name} cascade`);
          await client.end();
        },
        // The outbox takes every event a call's end commits: locked, the end's unit waits.
        lockWrites: () => lockPgTable(name, 'fleetgate_outbox'),
        lockTable: (table) => lockPgTable(name, table),
      };
    },
  },
];

describe.each(VARIANTS)('a gateway killed mid-call ($name)', (variant) => {
  let agent: RunningAgent;
  let port: number;
  let dir: string;
  let config: string;
  let cleanup: () => Promise<void> = () => Promise.resolve();
  let prepared: Prepared;
  /** Between the gateway and the agent: a network that can hang. */
  let network: TcpProxy;
  let gateway: ServiceProcess | undefined;
  /** Each task the agent starts waits for this before it ends. */
  let hold: { promise: Promise<void>; release: () => void };
  const newHold = (): void => {
    let release!: () => void;
    const promise = new Promise<void>((r) => (release = r));
    hold = { promise, release };
  };

  const startAgent = (): Promise<RunningAgent> =>
    startOpsAgent({
      ...(port === undefined ? {} : { port }),
      // pr_review's veto window: short enough to outlive a restart in a test.
      vetoTtlMs: 4_000,
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        hold: hold.promise,
      }),
    });

  beforeAll(async () => {
    if (variant.skip) return;
    newHold();
    agent = await startAgent();
    port = Number(new URL(agent.url).port);
    network = await startTcpProxy('127.0.0.1', port);
    prepared = variant.prepare();
    cleanup = prepared.cleanup;
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-call-crash-config-'));
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: ${prepared.store}`,
        `bus: ${prepared.bus}`,
        `agents: [{ name: ops, url: http://127.0.0.1:${network.port} }]`,
        // A dead gateway's lease runs out fast; on one host its calls are taken back at once.
        'replicas: { leaseTtl: 3s }',
        // pr_review (repo, veto) keeps its veto window; bulk_migration (fleet) needs an approval.
        'policy: { sweepInterval: 200ms, approvalAtOrAbove: fleet }',
      ].join('\n'),
    );
  }, 60_000);

  afterEach(async () => {
    await gateway?.stop('SIGKILL');
    gateway = undefined;
    network?.pass();
  });

  afterAll(async () => {
    if (variant.skip) return;
    hold.release();
    await network.close();
    await agent.close();
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<ServiceProcess> => {
    gateway = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 });
    return gateway;
  };

  async function api<T>(g: ServiceProcess, path: string, init?: RequestInit): Promise<T> {
    const response = await fetch(`${g.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...init?.headers },
    });
    return (await response.json()) as T;
  }

  async function dispatchOf(g: ServiceProcess, correlationId: string): Promise<Dispatch> {
    const page = await api<{ dispatches: Dispatch[] }>(
      g,
      `/api/dispatches?correlationId=${encodeURIComponent(correlationId)}`,
    );
    expect(page.dispatches).toHaveLength(1);
    return page.dispatches[0]!;
  }

  async function ended(g: ServiceProcess, correlationId: string): Promise<Dispatch> {
    let last: Dispatch | undefined;
    const end = Date.now() + 30_000;
    for (;;) {
      last = await dispatchOf(g, correlationId);
      if (!['running', 'awaiting-input', 'awaiting-approval'].includes(last.status)) return last;
      if (Date.now() > end) throw new Error(`dispatch still ${last.status} 30 s after restart`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function appliedFor(g: ServiceProcess, taskId: string, domain = 'board'): Promise<number> {
    const history = await api<{ records?: { taskId?: string; status?: string }[] }>(
      g,
      `/api/world/${domain}/history?limit=10000`,
    );
    // The domain is unknown (an error answer) until its first delta is applied.
    return (history.records ?? []).filter((r) => r.taskId === taskId && r.status === 'applied')
      .length;
  }

  /** Waits for the task's delta to be applied, and says how often it was. */
  async function appliedOnce(g: ServiceProcess, taskId: string, domain = 'board'): Promise<number> {
    let applied = 0;
    const end = Date.now() + 10_000;
    while ((applied = await appliedFor(g, taskId, domain)) === 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
    }
    return applied;
  }

  /** A blocking `?wait` dispatch whose answer nobody waits for (the gateway dies first). */
  function sendWaiting(g: ServiceProcess, body: Record<string, unknown>): void {
    void api(g, '/api/dispatch?wait=60s', { method: 'POST', body: JSON.stringify(body) }).catch(
      () => undefined,
    );
  }

  /** `kill -9`: the gateway dies where it is. */
  async function kill(g: ServiceProcess): Promise<void> {
    await g.stop('SIGKILL');
    gateway = undefined;
  }

  /** Kills the gateway once the agent has the call (it holds the task), then lets the task end. */
  async function killWhileAtTheAgent(g: ServiceProcess, received: number): Promise<string> {
    await until(() => agent.received.length > received, 20_000, 'the call to reach the agent');
    const taskId = agent.received[received]!.taskId;
    await kill(g);
    return taskId;
  }

  /** Dispatches bulk_migration (gated: it waits for an approval); the dispatch and its approval. */
  async function holdForApproval(
    g: ServiceProcess,
    correlationId: string,
  ): Promise<{ held: Dispatch; approvalId: string }> {
    const held = await api<Dispatch>(g, '/api/dispatch', {
      method: 'POST',
      body: JSON.stringify({ agent: 'ops', skill: 'bulk_migration', correlationId }),
    });
    expect(held.status).toBe('awaiting-approval');
    const pending = await api<{ approvals: { id: string; dispatchId?: string }[] }>(
      g,
      '/api/approvals?status=pending',
    );
    const approval = pending.approvals.find((a) => a.dispatchId === held.id);
    expect(approval).toBeDefined();
    return { held, approvalId: approval!.id };
  }

  /**
   * Kills the gateway once one of its statements waits on `lock` (after `check`, run while it
   * waits), then lets the store go.
   */
  async function killWhileLocked(
    g: ServiceProcess,
    lock: { waiting: () => Promise<boolean>; unlock: () => Promise<void> },
    what: string,
    check: () => Promise<void> = () => Promise.resolve(),
  ): Promise<void> {
    try {
      await eventually(async () => ((await lock.waiting()) ? true : undefined), 20_000, what);
      await check();
      await kill(g);
    } finally {
      await lock.unlock();
    }
  }

  it.skipIf(variant.skip)(
    'finishes a blocking (?wait) call whose gateway died while the agent worked: completed, its delta once',
    async () => {
      newHold();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('wait');
      sendWaiting(g, { agent: 'ops', skill: 'sitrep', text: 'status', correlationId });
      const taskId = await killWhileAtTheAgent(g, before);
      hold.release();
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done).toMatchObject({ status: 'completed', taskId });
      expect(await appliedOnce(restarted, taskId)).toBe(1);
      // Nothing was sent twice: the agent saw one call for this dispatch.
      expect(agent.received.length).toBe(before + 1);
    },
    120_000,
  );

  it.skipIf(variant.skip)(
    'finishes a call released by its approval whose gateway died while the agent worked',
    async () => {
      newHold();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('released');
      const { approvalId } = await holdForApproval(g, correlationId);
      // The approval releases the call: the answer comes once the agent ends it, which it does
      // only after the gateway is gone.
      void api(g, `/api/approvals/${approvalId}/approve`, {
        method: 'POST',
        body: JSON.stringify({ reason: 'go' }),
      }).catch(() => undefined);
      const taskId = await killWhileAtTheAgent(g, before);
      hold.release();
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done).toMatchObject({ status: 'completed', taskId });
      expect(agent.received.length).toBe(before + 1);
    },
    120_000,
  );

  it.skipIf(variant.skip)(
    'ends a sent call the agent has no task for FLEETGATE_CALL_OUTCOME_UNKNOWN, never running forever',
    async () => {
      newHold();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('unknown');
      sendWaiting(g, { agent: 'ops', skill: 'sitrep', correlationId });
      await killWhileAtTheAgent(g, before);
      // The agent restarts too, and forgets its tasks (an in-memory task store).
      hold.release();
      await agent.close();
      newHold();
      agent = await startAgent();
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done.status).toBe('failed');
      expect(done.result?.error?.code).toBe('FLEETGATE_CALL_OUTCOME_UNKNOWN');
      expect(agent.received).toHaveLength(0);
      // Its alert is in the event log, also after the next restart: `fleetgate tail --from all`
      // prints it (an alert published only on the in-process bus was gone with the process).
      await restarted.stop('SIGTERM');
      const next = await start();
      const tail = await runCli(
        ['tail', '--url', next.url, '--from', 'all', '--json', '--count', '1'].concat(
          'ops.alert.outcome_unknown',
        ),
        {},
        { timeoutMs: CLI_RUN_MS },
      );
      expect(tail.code, tail.stderr).toBe(0);
      const alert = JSON.parse(tail.stdout) as { payload: { evidence: { dispatchId: string } } };
      expect(alert.payload.evidence.dispatchId).toBe(done.id);
    },
    120_000 + CLI_RUN_MS,
  );

  it.skipIf(variant.skip)(
    'follows a return-immediately call whose task id was committed: completed, its delta once',
    async () => {
      newHold();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('immediate');
      // Without ?wait the gateway sends return-immediately: the task id comes back and is kept.
      const sent = await api<Dispatch>(g, '/api/dispatch', {
        method: 'POST',
        body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'status', correlationId }),
      });
      expect(sent.status).toBe('running');
      const taskId = await killWhileAtTheAgent(g, before);
      hold.release();
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done).toMatchObject({ status: 'completed', taskId });
      expect(await appliedOnce(restarted, taskId)).toBe(1);
      expect(agent.received.length).toBe(before + 1);
    },
    120_000,
  );

  for (const streaming of [false, true]) {
    it.skipIf(variant.skip)(
      `finishes a proxied ${streaming ? 'streaming' : 'blocking'} call whose gateway died mid-call: the A2A task ends completed`,
      async () => {
        newHold();
        const g = await start();
        const before = agent.received.length;
        const client = await sdkClient(`${g.url}/a2a/ops`);
        callSitrep(client, streaming).catch(() => undefined);
        const taskId = await killWhileAtTheAgent(g, before);
        hold.release();
        const restarted = await start();
        // The proxy's task is its dispatch: find it by the agent's task id.
        let proxied: Dispatch | undefined;
        const end = Date.now() + 30_000;
        for (;;) {
          const page = await api<{ dispatches: Dispatch[] }>(
            restarted,
            '/api/dispatches?agent=ops',
          );
          proxied = page.dispatches.find((d) => d.taskId === taskId);
          if (proxied !== undefined && proxied.status === 'completed') break;
          if (Date.now() > end) {
            throw new Error(`proxied dispatch ${JSON.stringify(proxied)} 30 s after restart`);
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        const again = await sdkClient(`${restarted.url}/a2a/ops`);
        let task = await again.getTask({ tenant: '', id: proxied.id, historyLength: undefined });
        const settled = Date.now() + 10_000;
        while (task.status?.state !== TaskState.TASK_STATE_COMPLETED && Date.now() < settled) {
          await new Promise((r) => setTimeout(r, 100));
          task = await again.getTask({ tenant: '', id: proxied.id, historyLength: undefined });
        }
        expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        expect(await appliedOnce(restarted, taskId)).toBe(1);
        expect(agent.received.length).toBe(before + 1);
      },
      120_000,
    );
  }

  it.skipIf(variant.skip)(
    'sends a call once after its veto window when its gateway died during the window',
    async () => {
      newHold();
      hold.release();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('veto');
      const held = await api<Dispatch & { decision?: { goAt?: number } }>(g, '/api/dispatch', {
        method: 'POST',
        body: JSON.stringify({ agent: 'ops', skill: 'pr_review', text: 'PR 7', correlationId }),
      });
      expect(held.status).toBe('awaiting-approval');
      expect(held.decision?.goAt).toBeGreaterThan(Date.now());
      await kill(g);
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done.status).toBe('completed');
      expect(Date.now()).toBeGreaterThanOrEqual(held.decision!.goAt!);
      expect(agent.received.length).toBe(before + 1);
      expect(await appliedOnce(restarted, done.taskId!)).toBe(1);
    },
    120_000,
  );
  it.skipIf(variant.skip)(
    'ends a call whose request was on the wire when its gateway died FLEETGATE_CALL_OUTCOME_UNKNOWN, never sent again',
    async () => {
      newHold();
      hold.release();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('midsend');
      // The network hangs: the request leaves the gateway and never reaches the agent.
      network.stall();
      sendWaiting(g, { agent: 'ops', skill: 'sitrep', text: 'status', correlationId });
      // The call is committed as sent before its first byte leaves.
      await eventually(
        async () => {
          const page = await api<{ dispatches: Dispatch[] }>(
            g,
            `/api/dispatches?correlationId=${correlationId}`,
          );
          return page.dispatches[0]?.status === 'running' ? true : undefined;
        },
        20_000,
        'the call on the wire',
      );
      await new Promise((r) => setTimeout(r, 300));
      await kill(g);
      // What was on the wire is lost with the connection.
      network.cut();
      network.pass();
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done.status).toBe('failed');
      expect(done.result?.error?.code).toBe('FLEETGATE_CALL_OUTCOME_UNKNOWN');
      // Asked, not re-sent: the agent never got it, and does not get it now.
      await new Promise((r) => setTimeout(r, 500));
      expect(agent.received.length).toBe(before);
    },
    120_000,
  );

  it.skipIf(variant.skip)(
    'finishes a call whose gateway died after the agent answered, before the end was committed: completed, its delta once',
    async () => {
      newHold();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('answered');
      sendWaiting(g, { agent: 'ops', skill: 'sitrep', text: 'status', correlationId });
      await until(() => agent.received.length > before, 20_000, 'the call to reach the agent');
      const taskId = agent.received[before]!.taskId;
      // The store stops taking writes; the agent answers; the gateway cannot commit the end.
      const lock = await prepared.lockWrites();
      try {
        hold.release();
        await eventually(
          async () => ((await lock.waiting()) ? true : undefined),
          20_000,
          'the end of the call waiting for the store',
        );
        // The answer is in (SQLite cannot say when the gateway waits: give it the time).
        await new Promise((r) => setTimeout(r, 1_000));
        await kill(g);
      } finally {
        await lock.unlock();
      }
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done).toMatchObject({ status: 'completed', taskId });
      expect(await appliedOnce(restarted, taskId)).toBe(1);
      expect(agent.received.length).toBe(before + 1);
    },
    120_000,
  );

  it.skipIf(variant.skip || variant.name === 'SQLite')(
    'has a live replica follow to its end the task of a call whose replica died, its delta once',
    async () => {
      newHold();
      const g = await start();
      // Another replica, live throughout: nothing restarts.
      const other = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 });
      try {
        const before = agent.received.length;
        const correlationId = uniqueName('adrift');
        // Answered at once with the task, which the first replica follows.
        const sent = await api<Dispatch>(g, '/api/dispatch', {
          method: 'POST',
          body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'status', correlationId }),
        });
        expect(sent).toMatchObject({ status: 'running', taskId: expect.any(String) });
        await kill(g);
        hold.release();
        // Before, the call stayed `running` on the live replica until some replica restarted.
        const done = await ended(other, correlationId);
        expect(done).toMatchObject({ status: 'completed', taskId: sent.taskId });
        expect(await appliedOnce(other, sent.taskId!)).toBe(1);
        expect(agent.received.length).toBe(before + 1);
      } finally {
        await other.stop('SIGKILL');
      }
    },
    120_000,
  );

  it.skipIf(variant.skip || variant.name === 'SQLite')(
    "ends a call whose gateway died after its record, before the gate's commit: never sent, no approval left",
    async () => {
      newHold();
      hold.release();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('pregate');
      // The gate's first statement on the approvals waits: the dispatch is recorded, the gate's
      // unit (the approval request and the record's move) not committed.
      const lock = await prepared.lockTable!('fleetgate_policy_approval');
      void api(g, '/api/dispatch', {
        method: 'POST',
        body: JSON.stringify({ agent: 'ops', skill: 'bulk_migration', correlationId }),
      }).catch(() => undefined);
      await killWhileLocked(g, lock, 'the gate waiting for the store', async () => {
        // Another reader of the approvals (the sweeper) may be the one waiting: the call is
        // there once its record is, and its gate then waits on the same lock.
        const recorded = await eventually(
          async () =>
            (
              await api<{ dispatches: Dispatch[] }>(
                g,
                `/api/dispatches?correlationId=${encodeURIComponent(correlationId)}`,
              )
            ).dispatches[0],
          20_000,
          'the dispatch recorded',
        );
        expect(recorded.status).toBe('running');
      });
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      expect(done.status).toBe('failed');
      expect(done.result?.error?.code).toBe('FLEETGATE_CALL_INTERRUPTED');
      const approvals = await api<{ approvals: { dispatchId?: string }[] }>(
        restarted,
        '/api/approvals?status=pending',
      );
      expect(approvals.approvals.filter((a) => a.dispatchId === done.id)).toEqual([]);
      expect(agent.received.length).toBe(before);
    },
    120_000,
  );

  it.skipIf(variant.skip || variant.name === 'SQLite')(
    'sends a call once when its gateway died right after its approval was committed, before the release',
    async () => {
      newHold();
      hold.release();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('approved');
      const { approvalId } = await holdForApproval(g, correlationId);
      // The release's unit (the approval consumed, the record moved) waits on the dispatch table.
      const lock = await prepared.lockTable!('fleetgate_dispatch');
      void api(g, `/api/approvals/${approvalId}/approve`, {
        method: 'POST',
        body: JSON.stringify({ reason: 'go' }),
      }).catch(() => undefined);
      await killWhileLocked(g, lock, 'the release waiting for the store');
      const restarted = await start();
      const done = await ended(restarted, correlationId);
      // The point was the one named: the approval was committed before the gateway died (and
      // consumed by the restarted gateway's release), not given again.
      const consumed = await api<{ approvals: { id: string; decidedBy?: string | null }[] }>(
        restarted,
        '/api/approvals?status=consumed',
      );
      expect(consumed.approvals.map((a) => a.id)).toContain(approvalId);
      expect(done.status).toBe('completed');
      expect(await appliedOnce(restarted, done.taskId!, 'github_issues')).toBe(1);
      expect(agent.received.length).toBe(before + 1);
    },
    120_000,
  );

  it.skipIf(variant.skip)(
    'keeps a call held for approval across a restart and sends it once when approved there',
    async () => {
      newHold();
      hold.release();
      const g = await start();
      const before = agent.received.length;
      const correlationId = uniqueName('held');
      const { approvalId } = await holdForApproval(g, correlationId);
      await kill(g);
      const restarted = await start();
      expect(await dispatchOf(restarted, correlationId)).toMatchObject({
        status: 'awaiting-approval',
      });
      await api(restarted, `/api/approvals/${approvalId}/approve`, {
        method: 'POST',
        body: JSON.stringify({ reason: 'go' }),
      });
      const done = await ended(restarted, correlationId);
      expect(done.status).toBe('completed');
      expect(await appliedOnce(restarted, done.taskId!, 'github_issues')).toBe(1);
      expect(agent.received.length).toBe(before + 1);
    },
    120_000,
  );
});
