/**
 * End to end through the front door: a real `@a2a-js/sdk` agent (the example ops agent) returns
 * worldstate-delta and cost-v1 parts; a gateway built by `createGateway` on a SQLite file publishes
 * `world.state.delta` and `cost.sample` through its outbox, materialises the world state, and its
 * reconciliation, action-quality monitor and cost summaries read the same bus.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { OPS_DELTAS, startOpsAgent } from '../examples/agents/index.js';
import { listLearnedFloors } from '../src/alerts/index.js';
import type { EventEnvelope, OpsAlertEvent } from '../src/protocol/index.js';
import type { Gateway } from '../src/service/index.js';
import { assembleGateway, type GatewayParts } from '../src/service/internal.js';

describe('world state end to end with a real SDK agent', () => {
  let dir: string;
  let agent: RunningAgent;
  let failing: RunningAgent;
  let gw: Gateway;
  let parts: GatewayParts;
  const alerts: EventEnvelope<string, OpsAlertEvent>[] = [];
  const updated: EventEnvelope[] = [];

  const settle = (): Promise<void> => gw.settle();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-e2e-'));
    agent = await startOpsAgent();
    failing = await startOpsAgent({ behaviour: () => ({ state: 'failed', artifacts: [] }) });
    ({ gateway: gw, parts } = await assembleGateway(
      {
        store: `sqlite:${join(dir, 'fleetgate.db')}`,
        agents: [
          { name: 'ops', url: agent.url },
          { name: 'failing', url: failing.url },
        ],
        domains: { github_issues: { minRadius: 'public' } },
      },
      { seeds: { ci: { data: { blockedPRs: 5 } }, board: { data: { untriaged: 12 } } } },
    ));
    await gw.events.subscribe('ops.alert.>', (e) => void alerts.push(e), { name: 'alerts' });
    await gw.events.subscribe('world.state.updated', (e) => void updated.push(e), {
      name: 'updated',
    });
  });

  afterAll(async () => {
    await gw?.close();
    await agent?.close();
    await failing?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the new values and an audit log naming the agent, skill and task', async () => {
    const result = await gw.call('ops', 'pr_review', 'review #42');
    expect(result.ok).toBe(true);
    const taskId = result.task!.id;
    await settle();

    expect(await gw.world.getDomain('ci')).toMatchObject({
      version: 1,
      state: { data: { blockedPRs: 4 } },
    });
    expect(await gw.world.getDomain('board')).toMatchObject({
      version: 1,
      state: { data: { untriaged: 11 } },
    });
    const history = await gw.world.history('ci');
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({
      agent: 'ops',
      skill: 'pr_review',
      taskId,
      path: 'data.blockedPRs',
      op: 'inc',
      value: OPS_DELTAS.pr_review![0]!.value,
      previous: 5,
      next: 4,
      status: 'applied',
      version: 1,
    });
    expect(updated.map((e) => e.payload)).toEqual(
      expect.arrayContaining([
        { domain: 'ci', version: 1, paths: ['data.blockedPRs'] },
        { domain: 'board', version: 1, paths: ['data.untriaged'] },
      ]),
    );
    // pr_review declared ci and board with radius repo: nothing to reconcile.
    expect(alerts).toEqual([]);
    expect(gw.costs.summary('ops', 'pr_review')).toMatchObject({
      samples: 1,
      successRate: 1,
      tokensIn: 120,
      tokensOut: 40,
      measuredByAgent: 1,
    });
    expect((await gw.world.replay('ci'))?.state).toEqual((await gw.world.getDomain('ci'))?.state);
  });

  it('raises a blast violation for a self skill that reported a delta, and learns its floor', async () => {
    const result = await gw.call('ops', 'sitrep', 'status');
    await settle();
    expect(await gw.world.getDomain('board')).toMatchObject({
      version: 2,
      state: { data: { untriaged: 11, lastSitrep: 'green' } },
    });
    const violation = alerts.find((a) => a.payload.kind === 'blast_violation');
    expect(violation?.payload).toMatchObject({
      agent: 'ops',
      skill: 'sitrep',
      radius: 'project',
      severity: 'error',
      evidence: { taskId: result.task!.id, effectiveRadius: 'self', floorRaised: 'project' },
    });
    expect(await listLearnedFloors(parts.store.db)).toEqual([
      expect.objectContaining({ agent: 'ops', skill: 'sitrep', radius: 'project' }),
    ]);
    expect(gw.agents.effectiveRadius('ops', 'sitrep').radius).toBe('project');
  });

  it('raises a violation by domain minRadius with severity scaled by the observed radius', async () => {
    await gw.call('ops', 'bulk_migration', 'migrate');
    await settle();
    expect((await gw.world.getDomain('github_issues'))?.state).toEqual({
      data: { migrated: ['repo-a'] },
    });
    // bulk_migration declared fleet, but a delta in github_issues implies public.
    const violations = alerts.filter((a) => a.payload.skill === 'bulk_migration');
    expect(violations.map((a) => a.payload)).toEqual([
      expect.objectContaining({
        kind: 'blast_violation',
        radius: 'public',
        severity: 'critical',
        evidence: expect.objectContaining({
          effectiveRadius: 'fleet',
          observedRadius: 'public',
          domainMinRadius: { github_issues: 'public' },
          floorRaised: 'public',
        }) as unknown,
      }),
    ]);
  });

  it('raises action_quality when the agent reports a failed task', async () => {
    const result = await gw.call('failing', 'pr_review', 'review #43').catch((e: unknown) => e);
    expect(result).toBeDefined();
    await settle();
    const quality = alerts.filter((a) => a.payload.kind === 'action_quality');
    expect(quality).toHaveLength(1);
    expect(quality[0]!.payload).toMatchObject({
      agent: 'failing',
      skill: 'pr_review',
      radius: 'repo',
      severity: 'warning',
    });
  });
});
