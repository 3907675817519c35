/**
 * Each vote on an approval that needs two approvers is a live event: `fleetgate start --config`
 * with named tokens, a gated call held for two approvers, and `GET /api/events` read as a viewer.
 * An accepted vote arrives as `hitl.approval.voted` with the approver's name, the approval id,
 * the vote and the counts (never a token); a refused one (a viewer's, the requester's own, a
 * second yes) publishes nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import type { ServiceProcess, SseFrame } from './support/gateway-service.js';
import { api, eventually, readEvents, startServiceProcess } from './support/gateway-service.js';

const TOKENS = {
  root: 'votes-root-admin-token-0123',
  alice: 'votes-alice-approver-token-01',
  bob: 'votes-bob-approver-token-0123',
  vic: 'votes-vic-viewer-token-012345',
} as const;
const ROLES = { root: 'admin', alice: 'approver', bob: 'approver', vic: 'viewer' } as const;

interface Held {
  id: string;
  status: string;
  decision: { approvalId?: string };
}

describe('hitl.approval.voted on GET /api/events', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-vote-events-'));
    agent = await startOpsAgent();
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: ops, url: ${agent.url} }`,
        'policy:',
        '  approvers: { fleet: 2, public: 2 }',
        '  sweepInterval: 200ms',
        'auth:',
        '  tokens:',
        ...Object.entries(ROLES).map(
          ([name, role]) =>
            `    - { name: ${name}, tokenEnv: VOTES_${name.toUpperCase()}, roles: [${role}] }`,
        ),
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', config],
      env: Object.fromEntries(
        Object.entries(TOKENS).map(([name, t]) => [`VOTES_${name.toUpperCase()}`, t]),
      ),
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** Holds a fleet-wide call asked by root (two approvers needed); its dispatch and approval. */
  async function hold(text: string): Promise<{ dispatchId: string; approvalId: string }> {
    const held = await api<Held>(gw.url, '/api/dispatch', {
      token: TOKENS.root,
      body: { agent: 'ops', skill: 'bulk_migration', text },
    });
    expect(held.body.status).toBe('awaiting-approval');
    return { dispatchId: held.body.id, approvalId: held.body.decision.approvalId! };
  }

  const votesOf = (frames: SseFrame[], approvalId: string): SseFrame[] =>
    frames.filter(
      (f) => f.data?.topic === 'hitl.approval.voted' && f.data.payload?.approvalId === approvalId,
    );

  it('publishes each accepted vote with the name, the approval id, the vote and the counts', async () => {
    const controller = new AbortController();
    const frames: SseFrame[] = [];
    const stream = await readEvents(
      gw.url,
      '/api/events?topics=hitl.approval.>',
      { token: TOKENS.vic, signal: controller.signal },
      frames,
    );
    expect(stream.status).toBe(200);
    const { dispatchId, approvalId } = await hold('migrate the org');
    const dispatch = await api<{ correlationId: string }>(gw.url, `/api/dispatches/${dispatchId}`, {
      token: TOKENS.vic,
    });

    // Refused before any vote counts: a viewer may not vote, the requester may not approve.
    const byViewer = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
      token: TOKENS.vic,
      body: {},
    });
    expect(byViewer.status).toBe(403);
    const own = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
      token: TOKENS.root,
      body: {},
    });
    expect(own.body).toMatchObject({ error: { code: 'FLEETGATE_APPROVAL_SELF' } });

    const first = await api<{ approval: { status: string } }>(
      gw.url,
      `/api/approvals/${approvalId}/approve`,
      { token: TOKENS.alice, body: { reason: 'planned' } },
    );
    expect(first.status).toBe(200);
    expect(first.body.approval.status).toBe('pending');
    const again = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
      token: TOKENS.alice,
      body: {},
    });
    expect(again.status).toBe(409);

    const vote = await eventually(
      () => votesOf(frames, approvalId)[0],
      10_000,
      "alice's vote on the stream",
    );
    expect(vote.data).toMatchObject({
      topic: 'hitl.approval.voted',
      correlationId: dispatch.body.correlationId,
    });
    expect(vote.data?.payload).toEqual({
      approvalId,
      by: 'alice',
      vote: 'approve',
      needed: 2,
      have: 1,
    });

    // Bob's yes is the second: the call is sent, and his vote comes before the decision.
    const second = await api<{ dispatch: { status: string } }>(
      gw.url,
      `/api/approvals/${approvalId}/approve`,
      { token: TOKENS.bob, body: {} },
    );
    expect(second.status).toBe(200);
    expect(second.body.dispatch.status).toBe('completed');
    const decided = await eventually(
      () =>
        frames.findIndex(
          (f) => f.data?.topic === 'hitl.approval.decided' && f.data.payload?.id === approvalId,
        ) + 1 || undefined,
      10_000,
      'the decision on the stream',
    );
    const votes = votesOf(frames, approvalId);
    expect(votes.map((f) => f.data?.payload)).toEqual([
      { approvalId, by: 'alice', vote: 'approve', needed: 2, have: 1 },
      { approvalId, by: 'bob', vote: 'approve', needed: 2, have: 2 },
    ]);
    expect(frames.indexOf(votes[1]!)).toBeLessThan(decided - 1);

    // No frame carries a credential.
    const text = JSON.stringify(frames);
    for (const token of Object.values(TOKENS)) expect(text).not.toContain(token);
    controller.abort();
    await stream.done;
  }, 60_000);

  it('publishes a rejection as a reject vote, and nothing for a vote on the decided request', async () => {
    const controller = new AbortController();
    const frames: SseFrame[] = [];
    const stream = await readEvents(
      gw.url,
      '/api/events?topics=hitl.approval.>',
      { token: TOKENS.vic, signal: controller.signal },
      frames,
    );
    const { approvalId } = await hold('migrate the org again');
    const no = await api(gw.url, `/api/approvals/${approvalId}/reject`, {
      token: TOKENS.alice,
      body: { reason: 'not this week' },
    });
    expect(no.status).toBe(200);
    const late = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
      token: TOKENS.bob,
      body: {},
    });
    expect(late.status).toBe(409);
    await eventually(
      () =>
        frames.find(
          (f) => f.data?.topic === 'hitl.approval.decided' && f.data.payload?.id === approvalId,
        ),
      10_000,
      'the rejection on the stream',
    );
    expect(votesOf(frames, approvalId).map((f) => f.data?.payload)).toEqual([
      { approvalId, by: 'alice', vote: 'reject', needed: 2, have: 0 },
    ]);
    controller.abort();
    await stream.done;
  }, 60_000);
});
