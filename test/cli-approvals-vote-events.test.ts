/**
 * A vote cast with `fleetgate approvals approve ID --store URL` (the CLI writing straight to the
 * store, no HTTP API) is live too: `fleetgate start --config` runs as a child process with a
 * two-approver quorum, the CLI runs as another, and a `GET /api/events` reader sees each vote as
 * `hitl.approval.voted` within seconds of the command's end — the vote's outbox row, written by
 * the CLI's process, published by the gateway's relay on its next poll.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import type { ServiceProcess, SseFrame } from './support/gateway-service.js';
import { api, eventually, readEvents, startServiceProcess } from './support/gateway-service.js';

const TOKENS = {
  root: 'cli-votes-root-admin-token-01',
  vic: 'cli-votes-vic-viewer-token-012',
} as const;
const ROLES = { root: 'admin', vic: 'viewer' } as const;

/** "Within a few seconds" of the command's end (the relay polls every 250 ms). */
const LIVE_MS = 3000;

describe('a vote cast by the CLI on the store, on GET /api/events', () => {
  let dir: string;
  let store: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-vote-events-'));
    store = `sqlite:${join(dir, 'fleetgate.db')}`;
    agent = await startOpsAgent();
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: ${store}`,
        'agents:',
        `  - { name: ops, url: ${agent.url} }`,
        'policy:',
        '  approvers: { fleet: 2, public: 2 }',
        '  sweepInterval: 200ms',
        'auth:',
        '  tokens:',
        ...Object.entries(ROLES).map(
          ([name, role]) =>
            `    - { name: ${name}, tokenEnv: CLI_VOTES_${name.toUpperCase()}, roles: [${role}] }`,
        ),
      ].join('\n'),
    );
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--config', config],
      env: Object.fromEntries(
        Object.entries(TOKENS).map(([name, t]) => [`CLI_VOTES_${name.toUpperCase()}`, t]),
      ),
    });
  }, 90_000);

  afterAll(async () => {
    await gw?.stop('SIGTERM');
    await agent?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const votesOf = (frames: SseFrame[], approvalId: string): SseFrame[] =>
    frames.filter(
      (f) => f.data?.topic === 'hitl.approval.voted' && f.data.payload?.approvalId === approvalId,
    );

  it(
    "publishes alice's and bob's votes from `approvals approve --store` within seconds",
    async () => {
      const held = await api<{ id: string; status: string; decision: { approvalId?: string } }>(
        gw.url,
        '/api/dispatch',
        { token: TOKENS.root, body: { agent: 'ops', skill: 'bulk_migration', text: 'the org' } },
      );
      expect(held.body.status).toBe('awaiting-approval');
      const approvalId = held.body.decision.approvalId!;
      const dispatch = await api<{ correlationId: string }>(
        gw.url,
        `/api/dispatches/${held.body.id}`,
        { token: TOKENS.vic },
      );

      const controller = new AbortController();
      const frames: SseFrame[] = [];
      const stream = await readEvents(
        gw.url,
        '/api/events?topics=hitl.approval.>',
        { token: TOKENS.vic, signal: controller.signal },
        frames,
      );
      expect(stream.status).toBe(200);

      const alice = await runCli(
        ['approvals', 'approve', approvalId, '--store', store, '--by', 'alice', '--reason', 'ok'],
        {},
        { cwd: dir },
      );
      expect(alice.stderr).toBe('');
      expect(alice.code).toBe(0);
      expect(alice.stdout).toContain('approved by 1 of 2');
      const vote = await eventually(
        () => votesOf(frames, approvalId)[0],
        LIVE_MS,
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
      // Still waiting for a second approver: nothing decided yet.
      expect(frames.some((f) => f.data?.topic === 'hitl.approval.decided')).toBe(false);

      const bob = await runCli(
        ['approvals', 'approve', approvalId, '--store', store, '--by', 'bob'],
        {},
        { cwd: dir },
      );
      expect(bob.code).toBe(0);
      await eventually(
        () => (votesOf(frames, approvalId).length === 2 ? true : undefined),
        LIVE_MS,
        "bob's vote on the stream",
      );
      expect(votesOf(frames, approvalId).map((f) => f.data?.payload)).toEqual([
        { approvalId, by: 'alice', vote: 'approve', needed: 2, have: 1 },
        { approvalId, by: 'bob', vote: 'approve', needed: 2, have: 2 },
      ]);
      // The gateway's sweep sends the call the CLI approved; its decision follows the votes.
      await eventually(
        () =>
          frames.find(
            (f) => f.data?.topic === 'hitl.approval.decided' && f.data.payload?.id === approvalId,
          ),
        10_000,
        'the decision on the stream',
      );
      controller.abort();
      await stream.done;
    },
    cliTestTimeout(2, 30_000),
  );
});
