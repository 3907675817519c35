/**
 * Replicas of one deployment whose agent lists differ (a config roll-out): two `fleetgate start`
 * processes on one PostgreSQL schema and one private JetStream stream, replica A configured with
 * agents `ops` and `helper`, replica B with `helper` only. A call to `ops` held on A and approved
 * through B's HTTP API is left by B (which cannot send it) to A, which sends it once; the approval
 * is consumed once. Once A rolled back to `helper` only, no running replica knows `ops`: such a
 * call ends `failed` (`FLEETGATE_AGENT_UNKNOWN`) when the grace after its approval ran out
 * (`replicas.leaseTtl`, 2 s here), and at once on B when B is the only gateway left.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';

const pgUp = await requirePostgres();
const natsUp = await requireNats();

const ADMIN = 'agents-admin-0123456789abcdef';
const OPERATOR = 'agents-operator-0123456789ab';

interface Dispatch {
  id: string;
  status: string;
  result: { error?: { code: string; message: string } } | null;
}

interface Approval {
  id: string;
  status: string;
}

describe.skipIf(!pgUp || !natsUp)('replicas whose agent lists differ', () => {
  const name = uniqueName('fgagents');
  const stream = name.toUpperCase();
  let dir: string;
  let ops: RunningAgent;
  let helper: RunningAgent;
  let a: ServiceProcess | undefined;
  let b: ServiceProcess | undefined;
  const env = { R_ADMIN: ADMIN, R_OPERATOR: OPERATOR };
  /** B's config: `helper` only. */
  let helperOnly: string;

  /** A config file with these agents, on the shared schema and stream. */
  const configWith = (file: string, agents: string): string => {
    const path = join(dir, file);
    writeFileSync(
      path,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: ${PG_URL}?schema=${name}`,
        `bus: ${NATS_URL}?stream=${stream}&prefix=${name}`,
        `agents: [${agents}]`,
        'replicas: { leaseTtl: 2s }',
        'policy: { sweepInterval: 200ms }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: R_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: R_OPERATOR, roles: [operator] }',
      ].join('\n'),
    );
    return path;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-replica-agents-'));
    ops = await startOpsAgent();
    helper = await startOpsAgent();
    const both = configWith(
      'a.yaml',
      `{ name: ops, url: ${ops.url} }, { name: helper, url: ${helper.url} }`,
    );
    helperOnly = configWith('b.yaml', `{ name: helper, url: ${helper.url} }`);
    // One after the other: the first creates the schema and the stream.
    a = await startServiceProcess({ args: ['--config', both], env });
    b = await startServiceProcess({ args: ['--config', helperOnly], env });
  }, 90_000);

  afterAll(async () => {
    await a?.stop('SIGKILL');
    await b?.stop('SIGKILL');
    await ops?.close();
    await helper?.close();
    await deleteNatsStream(stream).catch(() => undefined);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`drop schema if exists ${name} cascade`);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A gated call to `ops` held on A: its dispatch and approval ids. */
  async function holdOnA(text: string): Promise<{ id: string; approvalId: string }> {
    const held = await api<{ id: string; status: string; decision: { approvalId: string } }>(
      a!.url,
      '/api/dispatch',
      { token: OPERATOR, body: { agent: 'ops', skill: 'bulk_migration', text } },
    );
    expect(held.body.status).toBe('awaiting-approval');
    return { id: held.body.id, approvalId: held.body.decision.approvalId };
  }

  const calls = (text: string): number => ops.received.filter((c) => c.text === text).length;

  /** The dispatch once it left `awaiting-approval` and `running`. */
  const ended = (id: string, timeoutMs = 15_000): Promise<Dispatch> =>
    eventually(
      async () => {
        const d = await api<Dispatch>(b!.url, `/api/dispatches/${id}`, { token: OPERATOR });
        return d.body.status === 'awaiting-approval' || d.body.status === 'running'
          ? undefined
          : d.body;
      },
      timeoutMs,
      'the dispatch to end',
    );

  /** Calls to `ops` held on A before A rolls back to `helper` only. */
  let heldBefore: { id: string; approvalId: string }[] = [];

  it('sends a call approved on a replica that does not know its agent through one that does, once', async () => {
    const held = await holdOnA('migrate via A');
    const approved = await api<{ approval: Approval; dispatch: Dispatch | null }>(
      b!.url,
      `/api/approvals/${held.approvalId}/approve`,
      { token: ADMIN, body: {} },
    );
    expect(approved.status).toBe(200);
    const done = await ended(held.id);
    expect(done.status).toBe('completed');
    expect(done.result?.error).toBeUndefined();
    expect(calls('migrate via A')).toBe(1);
    const approval = await api<Approval>(a!.url, `/api/approvals/${held.approvalId}`, {
      token: ADMIN,
    });
    expect(approval.body.status).toBe('consumed');
    // B said that it left the call to a replica that knows its agent, once: a counted error
    // (the replicas share the bus's metrics consumer, so the fleet's count is their sum).
    const counted = /fleetgate_bus_handler_errors_total\{code="FLEETGATE_AGENT_UNKNOWN"\} (\d+)/;
    const noted = async (): Promise<number> => {
      let sum = 0;
      for (const replica of [a!, b!]) {
        const metrics = await api<string>(replica.url, '/metrics', { token: ADMIN });
        sum += Number(counted.exec(metrics.body)?.[1] ?? 0);
      }
      return sum;
    };
    await eventually(async () => ((await noted()) > 0 ? true : undefined), 10_000, 'the note');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await noted()).toBe(1);
  }, 60_000);

  it('ends a call whose agent no running replica knows failed once the grace after its approval ran out', async () => {
    heldBefore = [await holdOnA('migrate nowhere'), await holdOnA('migrate alone')];
    // A rolls back to a config without `ops`: no running replica knows the agent.
    expect(await a!.stop('SIGTERM')).toBe(0);
    a = await startServiceProcess({ args: ['--config', helperOnly], env });
    const held = heldBefore[0]!;
    const approvedAt = Date.now();
    const approved = await api<{ approval: Approval; dispatch: Dispatch | null }>(
      b!.url,
      `/api/approvals/${held.approvalId}/approve`,
      { token: ADMIN, body: {} },
    );
    expect(approved.status).toBe(200);
    // Left for a replica that might know the agent: the approval is not used.
    expect(approved.body.dispatch).toMatchObject({ status: 'awaiting-approval' });
    expect(approved.body.approval.status).toBe('approved');
    const done = await ended(held.id);
    // The grace: the lease's time to live (2 s), more than three sweeps (600 ms).
    expect(Date.now() - approvedAt).toBeGreaterThanOrEqual(1500);
    expect(done).toMatchObject({
      status: 'failed',
      result: { error: { code: 'FLEETGATE_AGENT_UNKNOWN' } },
    });
    expect(done.result?.error?.message).toMatch(/within 2 s/);
    expect(calls('migrate nowhere')).toBe(0);
    const approval = await eventually(async () => {
      const r = await api<Approval>(b!.url, `/api/approvals/${held.approvalId}`, { token: ADMIN });
      return r.body.status === 'approved' ? undefined : r.body;
    });
    expect(approval.status).toBe('void');
  }, 90_000);

  it('ends a call whose agent it does not know failed at once when no other gateway runs', async () => {
    const held = heldBefore[1]!;
    expect(await a!.stop('SIGTERM')).toBe(0);
    a = undefined;
    const approved = await api<{ approval: Approval; dispatch: Dispatch | null }>(
      b!.url,
      `/api/approvals/${held.approvalId}/approve`,
      { token: ADMIN, body: {} },
    );
    expect(approved.status).toBe(200);
    expect(approved.body.dispatch).toMatchObject({
      status: 'failed',
      result: { error: { code: 'FLEETGATE_AGENT_UNKNOWN' } },
    });
    expect(approved.body.approval.status).toBe('void');
    expect(calls('migrate alone')).toBe(0);
  }, 60_000);
});
