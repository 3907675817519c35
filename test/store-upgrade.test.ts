/**
 * A store written by an earlier version carries over: `test/fixtures/store-before-holders.db` is
 * what a gateway that did not yet record who holds a call left when killed with one call at the
 * agent and one held for approval (`scripts/make-upgrade-fixture.ts` made it). `fleetgate start`
 * on a copy migrates it and finishes both: the call in flight ends
 * `FLEETGATE_CALL_OUTCOME_UNKNOWN` (it was sent, and nothing was kept to find it by) instead of
 * staying `running` forever; the held call, once approved, is sent once and completes.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { startOpsAgent } from '../examples/agents/ops-agent.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { ROOT, startServiceProcess } from './support/gateway-service.js';

interface Dispatch {
  id: string;
  status: string;
  correlationId: string;
  result: { error?: { code: string; message: string } } | null;
}

describe('a store written before calls recorded their holder', () => {
  let dir: string;
  let agent: RunningAgent;
  let gateway: ServiceProcess;

  beforeAll(async () => {
    agent = await startOpsAgent();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-upgrade-'));
    const db = join(dir, 'gw.db');
    copyFileSync(join(ROOT, 'test/fixtures/store-before-holders.db'), db);
    // As if that gateway had stopped a moment ago: its pending approval has not run out yet.
    const sqlite = new Database(db);
    sqlite
      .prepare(`update fleetgate_policy_approval set expires_at = ? where status = 'pending'`)
      .run(Date.now() + 3_600_000);
    sqlite.close();
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${db}`,
        'bus: memory',
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'replicas: { leaseTtl: 3s }',
        'policy: { sweepInterval: 200ms }',
      ].join('\n'),
    );
    gateway = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 });
  }, 90_000);

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function api<T>(path: string, init?: RequestInit): Promise<T> {
    const response = await fetch(`${gateway.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...init?.headers },
    });
    return (await response.json()) as T;
  }

  const byCorrelation = async (correlationId: string): Promise<Dispatch> =>
    (await api<{ dispatches: Dispatch[] }>(`/api/dispatches?correlationId=${correlationId}`))
      .dispatches[0]!;

  it('ends the call that was at the agent FLEETGATE_CALL_OUTCOME_UNKNOWN, never running forever', async () => {
    let call = await byCorrelation('upgrade-running');
    const end = Date.now() + 30_000;
    while (call.status === 'running' && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      call = await byCorrelation('upgrade-running');
    }
    expect(call.status).toBe('failed');
    expect(call.result?.error?.code).toBe('FLEETGATE_CALL_OUTCOME_UNKNOWN');
    expect(call.result?.error?.message).toContain('earlier version');
    // Nothing was sent again.
    expect(agent.received).toHaveLength(0);
  }, 60_000);

  it('sends the held call once when approved, and it completes', async () => {
    const held = await byCorrelation('upgrade-held');
    expect(held.status).toBe('awaiting-approval');
    const { approvals } = await api<{ approvals: { id: string; dispatchId?: string }[] }>(
      '/api/approvals?status=pending',
    );
    const approval = approvals.find((a) => a.dispatchId === held.id);
    expect(approval).toBeDefined();
    await api(`/api/approvals/${approval!.id}/approve`, {
      method: 'POST',
      body: JSON.stringify({ reason: 'after the upgrade' }),
    });
    const done = await api<Dispatch>(`/api/dispatches/${held.id}?wait=30s`);
    expect(done.status).toBe('completed');
    expect(agent.received.map((r) => r.skill)).toEqual(['bulk_migration']);
  }, 60_000);
});
