/**
 * The HITL gate end to end through `createGateway`: a real `@a2a-js/sdk` ops agent, a SQLite file,
 * the policy from the config. What matters is what the agent received: a held call never reaches
 * it before it is approved, and an approved one reaches it exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startAgent, startOpsAgent, textPart } from '../examples/agents/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import { StaticCardSource } from '../src/fleet/index.js';
import { BLAST_V1_URI, HITL_MODE_V1_URI } from '../src/protocol/index.js';
import type { FleetgateConfigInput, Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';
import { until } from './support/gateway.js';

const HOUR = 3_600_000;

function coded(code: string) {
  return (e: unknown) => isFleetgateError(e) && e.code === code;
}

describe('HITL gate through createGateway', () => {
  let dir: string;
  let ops: RunningAgent;
  let gw: Gateway;
  let clock = Date.UTC(2026, 0, 1, 9, 0);
  const events: EventEnvelope[] = [];
  const received = (text: string) => ops.received.filter((c) => c.text === text);

  const config = (): FleetgateConfigInput => ({
    store: `sqlite:${join(dir, 'gw.db')}`,
    agents: [
      { name: 'ops', url: ops.url },
      // The same agent under an operator floor that makes every migration public.
      { name: 'ops-public', url: ops.url, floors: { bulk_migration: 'public' } },
    ],
    policy: {
      // pr_review (repo, declared veto) runs after its veto window; bulk_migration (fleet) and
      // anything wider needs approval; sitrep (self, autonomous) goes at once.
      approvalAtOrAbove: 'fleet',
      approvers: { fleet: 1, public: 2 },
      sweepInterval: '1h',
      overrides: [
        { agent: 'ops-public', skill: 'sitrep', minMode: 'notification' },
        { agent: 'ops-public', skill: 'pr_review', action: 'deny', note: 'frozen for the audit' },
      ],
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-policy-'));
    ops = await startOpsAgent();
    gw = await createGateway(config(), { now: () => clock });
    await gw.events.subscribe('hitl.>', (e) => void events.push(e), { name: 'hitl' });
  });

  beforeEach(() => {
    clock += HOUR * 10;
  });

  afterAll(async () => {
    await gw?.close();
    await ops?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends an autonomous skill at once', async () => {
    const record = await gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'auto-1' }).answered();
    expect(record.status).toBe('completed');
    expect(received('auto-1')).toHaveLength(1);
  });

  it('sends a notification-mode call at once and publishes hitl.notification', async () => {
    const record = await gw
      .dispatch({ agent: 'ops-public', skill: 'sitrep', text: 'notify-1' })
      .answered();
    expect(record.status).toBe('completed');
    expect(received('notify-1')).toHaveLength(1);
    await gw.settle();
    const notes = events.filter((e) => e.topic === 'hitl.notification');
    expect(notes.map((e) => e.payload)).toEqual([
      expect.objectContaining({ agent: 'ops-public', skill: 'sitrep', dispatchId: record.id }),
    ]);
  });

  it('refuses what an override denies, before anything is sent', async () => {
    const record = await gw
      .dispatch({ agent: 'ops-public', skill: 'pr_review', text: 'deny-1' })
      .answered();
    expect(record).toMatchObject({
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_DISPATCH_DENIED', message: 'frozen for the audit' } },
    });
    expect(received('deny-1')).toHaveLength(0);
  });

  it('holds a gated call until approved, then sends it exactly once', async () => {
    const record = await gw
      .dispatch({
        agent: 'ops',
        skill: 'bulk_migration',
        text: 'migrate-1',
        requestedBy: 'bob',
      })
      .answered();
    expect(record.status).toBe('awaiting-approval');
    expect(received('migrate-1')).toHaveLength(0);

    const [pending] = (await gw.approvals.list()).filter((a) => a.dispatchId === record.id);
    expect(pending).toMatchObject({
      agent: 'ops',
      skill: 'bulk_migration',
      status: 'pending',
      radius: 'fleet',
      mode: 'gated',
      domains: ['github_issues'],
      requiredApprovals: 1,
    });
    expect(pending!.reasons.map((r) => r.kind)).toContain('threshold');
    await gw.settle();
    expect(events.some((e) => e.topic === 'hitl.approval.requested')).toBe(true);

    await expect(gw.approvals.approve(pending!.id, 'bob')).rejects.toSatisfy(
      coded('FLEETGATE_APPROVAL_SELF'),
    );
    expect(received('migrate-1')).toHaveLength(0);

    const outcome = await gw.approvals.approve(pending!.id, 'alice', 'ok');
    expect(outcome.dispatch?.status).toBe('completed');
    expect(outcome.approval.status).toBe('consumed');
    expect(received('migrate-1')).toHaveLength(1);
    expect(received('migrate-1')[0]!.metadata).toMatchObject({ 'x-blast-radius': 'fleet' });

    // A second decision is refused; sweeping again sends nothing more.
    await expect(gw.approvals.approve(pending!.id, 'carol')).rejects.toSatisfy(
      coded('FLEETGATE_APPROVAL_ALREADY_DECIDED'),
    );
    await expect(gw.approvals.reject(pending!.id, 'carol')).rejects.toSatisfy(
      coded('FLEETGATE_APPROVAL_ALREADY_DECIDED'),
    );
    await gw.approvals.sweep();
    expect(received('migrate-1')).toHaveLength(1);
    expect(await gw.dispatchRecord(record.id)).toMatchObject({ status: 'completed' });
    await gw.settle();
    expect(
      events.filter(
        (e) =>
          e.topic === 'hitl.approval.decided' && (e.payload as { id: string }).id === pending!.id,
      ),
    ).toHaveLength(1);
  });

  it('never sends a rejected call, and refuses the identical call at once afterwards', async () => {
    const request = { agent: 'ops', skill: 'bulk_migration', text: 'migrate-2' };
    const record = await gw.dispatch(request).answered();
    const approval = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    const outcome = await gw.approvals.reject(approval.id, 'alice', 'not this week');
    expect(outcome.dispatch).toMatchObject({
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_APPROVAL_REJECTED' } },
    });
    await gw.approvals.sweep();
    expect(received('migrate-2')).toHaveLength(0);

    const again = await gw.dispatch(request).answered();
    expect(again.status).toBe('rejected');
    expect(again.result?.error).toMatchObject({
      code: 'FLEETGATE_APPROVAL_REJECTED_RECENTLY',
      message: expect.stringContaining('not this week'),
    });
    expect((await gw.approvals.list()).filter((a) => a.dispatchId === again.id)).toHaveLength(0);

    // One byte changed: a different call, asked afresh.
    const changed = await gw.dispatch({ ...request, text: 'migrate-3' }).answered();
    expect(changed.status).toBe('awaiting-approval');
    const fresh = (await gw.approvals.list()).find((a) => a.dispatchId === changed.id)!;
    expect(fresh.fingerprint).not.toBe(approval.fingerprint);
    await gw.approvals.reject(fresh.id, 'alice');
  });

  it('expires an undecided approval as a rejection, never approving it', async () => {
    const record = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-4' })
      .answered();
    const approval = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    clock += HOUR + 1;
    await gw.approvals.sweep();
    expect(await gw.dispatchRecord(record.id)).toMatchObject({
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_APPROVAL_EXPIRED' } },
    });
    await expect(gw.approvals.approve(approval.id, 'alice')).rejects.toSatisfy(
      coded('FLEETGATE_APPROVAL_EXPIRED'),
    );
    expect(received('migrate-4')).toHaveLength(0);
    expect(await gw.approvals.list()).not.toContainEqual(
      expect.objectContaining({ id: approval.id }),
    );
    await gw.settle();
    const expired = events.filter((e) => e.topic === 'hitl.approval.expired');
    expect(expired).toHaveLength(1);
  });

  it('lets a veto call go after its window, and stops it when rejected inside it', async () => {
    const goes = await gw
      .dispatch({ agent: 'ops', skill: 'pr_review', text: 'review-1' })
      .answered();
    const stops = await gw
      .dispatch({ agent: 'ops', skill: 'pr_review', text: 'review-2' })
      .answered();
    expect([goes.status, stops.status]).toEqual(['awaiting-approval', 'awaiting-approval']);
    const veto = (await gw.approvals.list()).find((a) => a.dispatchId === stops.id)!;
    expect(veto).toMatchObject({ kind: 'veto', mode: 'veto', radius: 'repo' });
    // The declared window (60 s) applies.
    expect(veto.expiresAt - veto.createdAt).toBe(60_000);

    clock += 30_000;
    await gw.approvals.reject(veto.id, 'alice', 'wrong PR');
    await gw.approvals.sweep();
    expect(received('review-1')).toHaveLength(0);

    clock += 31_000;
    await gw.approvals.sweep();
    expect(await gw.dispatchRecord(goes.id)).toMatchObject({ status: 'completed' });
    expect(await gw.dispatchRecord(stops.id)).toMatchObject({ status: 'rejected' });
    expect(received('review-1')).toHaveLength(1);
    expect(received('review-2')).toHaveLength(0);
  });

  it('needs N distinct approvers for a public call', async () => {
    const record = await gw
      .dispatch({
        agent: 'ops-public',
        skill: 'bulk_migration',
        text: 'migrate-5',
      })
      .answered();
    const approval = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    expect(approval).toMatchObject({ radius: 'public', requiredApprovals: 2 });
    expect(approval.reasons.map((r) => r.kind)).toEqual(
      expect.arrayContaining(['floor', 'approvers']),
    );

    const first = await gw.approvals.approve(approval.id, 'alice');
    expect(first.approval.status).toBe('pending');
    expect(first.dispatch).toBeUndefined();
    await expect(gw.approvals.approve(approval.id, 'alice')).rejects.toSatisfy(
      coded('FLEETGATE_APPROVAL_ALREADY_DECIDED'),
    );
    expect(received('migrate-5')).toHaveLength(0);

    const second = await gw.approvals.approve(approval.id, 'carol');
    expect(second.dispatch?.status).toBe('completed');
    expect(second.approval.approvals.map((v) => v.by)).toEqual(['alice', 'carol']);
    expect(received('migrate-5')).toHaveLength(1);
  });

  it('lets a standing approval cover calls until its uses run out; audited', async () => {
    const grant = await gw.approvals.grant({
      agent: 'ops',
      skill: 'bulk_migration',
      maxRadius: 'fleet',
      by: 'alice',
      forMs: HOUR,
      uses: 1,
      reason: 'migration week',
    });
    const explained = await gw.approvals.explain('ops', 'bulk_migration');
    expect(explained.decision.standing).toBe(grant.id);

    const covered = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-6' })
      .answered();
    expect(covered.status).toBe('completed');
    expect(received('migrate-6')).toHaveLength(1);

    const next = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-7' })
      .answered();
    expect(next.status).toBe('awaiting-approval');
    expect((await gw.approvals.audit(grant.id)).map((a) => a.action)).toEqual(['grant', 'use']);

    const revoked = await gw.approvals.revoke(grant.id, 'alice', 'done');
    expect(revoked.revokedBy).toBe('alice');
    expect(await gw.approvals.standing({ live: true })).toEqual([]);
    const held = (await gw.approvals.list()).find((a) => a.dispatchId === next.id)!;
    await gw.approvals.reject(held.id, 'alice');
  });

  it('explains a decision with every reason', async () => {
    const { decision } = await gw.approvals.explain('ops', 'pr_review');
    expect(decision).toMatchObject({ mode: 'veto', effectiveRadius: 'repo', vetoTtlMs: 60_000 });
    expect(decision.reasons.map((r) => r.kind)).toEqual(['declared-radius', 'declared-mode']);
    const unknown = await gw.approvals.explain('nobody', 'anything');
    expect(unknown.decision).toMatchObject({ mode: 'gated', effectiveRadius: 'public' });
  });

  it('keeps pending approvals across a restart; a changed policy voids them', async () => {
    const kept = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-8' })
      .answered();
    const voided = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-9' })
      .answered();
    await gw.close();

    // Same store file, same policy: the approval is still there and can be decided.
    gw = await createGateway(config(), { now: () => clock });
    const pending = await gw.approvals.list();
    const keptApproval = pending.find((a) => a.dispatchId === kept.id)!;
    const voidApproval = pending.find((a) => a.dispatchId === voided.id)!;
    expect(keptApproval.status).toBe('pending');
    const outcome = await gw.approvals.approve(keptApproval.id, 'alice');
    expect(outcome.dispatch?.status).toBe('completed');
    expect(received('migrate-8')).toHaveLength(1);
    await gw.close();

    // A different policy: what was approved under the old one never goes out.
    const changed = config();
    changed.policy = { ...changed.policy, rejectCooldown: '2h' };
    gw = await createGateway(changed, { now: () => clock });
    const voidOutcome = await gw.approvals.approve(voidApproval.id, 'alice');
    expect(voidOutcome.dispatch).toMatchObject({
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_APPROVAL_VOID' } },
    });
    expect(voidOutcome.approval.status).toBe('void');
    expect(received('migrate-9')).toHaveLength(0);
  });
});

describe('HITL gate and a narrowing card', () => {
  let dir: string;
  let ops: RunningAgent;
  let gw: Gateway;
  let card: Record<string, unknown>;
  const cards = new StaticCardSource();
  const received = (text: string) => ops.received.filter((c) => c.text === text);

  /** The ops card with bulk_migration declared at another radius and mode. */
  function declare(radius: string, mode: string): void {
    const copy = structuredClone(card) as {
      capabilities: { extensions: { uri: string; params: { skills: Record<string, unknown> } }[] };
    };
    for (const ext of copy.capabilities.extensions) {
      if (ext.uri === BLAST_V1_URI) ext.params.skills.bulk_migration = { radius };
      if (ext.uri === HITL_MODE_V1_URI) ext.params.skills.bulk_migration = { mode };
    }
    cards.set('ops', copy);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-policy-narrow-'));
    ops = await startOpsAgent();
    card = (await ops.fetchCard()) as Record<string, unknown>;
    cards.set('ops', card);
    gw = await createGateway(
      {
        store: `sqlite:${join(dir, 'gw.db')}`,
        agents: [{ name: 'ops', url: ops.url }],
        policy: { sweepInterval: '1h' },
      },
      { cardSource: cards },
    );
  });

  afterAll(async () => {
    await gw?.close();
    await ops?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not lower the gate until the narrowing is acknowledged; then voids older approvals', async () => {
    declare('self', 'autonomous');
    await gw.agents.refresh('ops');

    // Narrowed but not acknowledged: still gated at fleet, and the reasons say why.
    const first = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'narrow-1' })
      .answered();
    expect(first.status).toBe('awaiting-approval');
    const firstApproval = (await gw.approvals.list()).find((a) => a.dispatchId === first.id)!;
    expect(firstApproval.radius).toBe('fleet');
    expect(firstApproval.reasons.map((r) => r.kind)).toContain('narrowing-pending');
    const second = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'narrow-2' })
      .answered();
    const secondApproval = (await gw.approvals.list()).find((a) => a.dispatchId === second.id)!;

    // Approved before the acknowledgement: still the same call, it goes.
    expect((await gw.approvals.approve(firstApproval.id, 'alice')).dispatch?.status).toBe(
      'completed',
    );
    expect(received('narrow-1')).toHaveLength(1);

    // Acknowledged: the radius is now self, so the approval given for the fleet-wide call is void
    // and the call is not sent; a new call runs autonomously.
    await gw.agents.acknowledge('ops', 'bulk_migration', 'carol');
    const voided = await gw.approvals.approve(secondApproval.id, 'alice');
    expect(voided.dispatch).toMatchObject({
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_APPROVAL_VOID' } },
    });
    expect(received('narrow-2')).toHaveLength(0);
    const third = await gw
      .dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'narrow-3' })
      .answered();
    expect(third.status).toBe('completed');
    expect(received('narrow-3')).toHaveLength(1);
  });
});

describe('HITL gate: questions and compound checkpoints', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: Gateway;
  const asked = new Set<string>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-policy-compound-'));
    agent = await startAgent({
      name: 'deployer',
      skills: [{ id: 'deploy' }, { id: 'ask' }, { id: 'quick' }],
      extensions: [
        {
          uri: BLAST_V1_URI,
          params: {
            skills: {
              deploy: { radius: 'repo' },
              ask: { radius: 'self' },
              quick: { radius: 'self' },
            },
          },
        },
        {
          uri: HITL_MODE_V1_URI,
          params: {
            skills: { deploy: { mode: 'compound' }, quick: { mode: 'veto', vetoTtlMs: 150 } },
          },
        },
      ],
      // The first message of a task asks a question; the answer on the same task completes it.
      behaviour: (call) => {
        if (call.text === 'soon') return { artifacts: [[textPart('quick done')]] };
        if (!asked.has(call.taskId)) {
          asked.add(call.taskId);
          return { state: 'input-required', statusText: `Which environment for ${call.text}?` };
        }
        return { artifacts: [[textPart(`deployed to ${call.text}`)]] };
      },
    });
    gw = await createGateway({
      store: `sqlite:${join(dir, 'gw.db')}`,
      agents: [{ name: 'deployer', url: agent.url }],
      policy: { sweepInterval: '1h' },
    });
  });

  afterAll(async () => {
    await gw?.close();
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gates a compound skill at dispatch, then turns its input-required into a checkpoint', async () => {
    const record = await gw
      .dispatch({
        agent: 'deployer',
        skill: 'deploy',
        text: 'v2',
        requestedBy: 'bob',
      })
      .answered();
    expect(record.status).toBe('awaiting-approval');
    expect(agent.received).toHaveLength(0);
    const gate = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    expect(gate).toMatchObject({ kind: 'dispatch', mode: 'compound' });

    const started = await gw.approvals.approve(gate.id, 'alice');
    expect(started.dispatch?.status).toBe('awaiting-input');
    expect(agent.received.map((c) => c.text)).toEqual(['v2']);
    const taskId = agent.received[0]!.taskId;

    const checkpoint = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    expect(checkpoint).toMatchObject({
      kind: 'checkpoint',
      mode: 'compound',
      taskId,
      question: 'Which environment for v2?',
      requestedBy: 'bob',
    });
    await expect(gw.approvals.answer(checkpoint.id, 'bob', 'prod')).rejects.toSatisfy(
      coded('FLEETGATE_APPROVAL_SELF'),
    );
    await expect(gw.approvals.approve(checkpoint.id, 'alice')).rejects.toSatisfy(
      coded('FLEETGATE_USAGE'),
    );

    const answered = await gw.approvals.answer(checkpoint.id, 'alice', 'staging');
    expect(answered.dispatch).toMatchObject({
      status: 'completed',
      result: { text: 'deployed to staging' },
    });
    expect(agent.received.map((c) => [c.text, c.taskId])).toEqual([
      ['v2', taskId],
      ['staging', taskId],
    ]);
    await expect(gw.approvals.answer(checkpoint.id, 'carol', 'prod')).rejects.toSatisfy(
      coded('FLEETGATE_APPROVAL_ALREADY_DECIDED'),
    );
    await gw.approvals.sweep();
    expect(agent.received).toHaveLength(2);
  });

  it('puts the question of any skill in the inbox; the requester may answer it', async () => {
    const record = await gw
      .dispatch({
        agent: 'deployer',
        skill: 'ask',
        text: 'preview',
        requestedBy: 'bob',
      })
      .answered();
    expect(record.status).toBe('awaiting-input');
    const question = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    expect(question).toMatchObject({ kind: 'checkpoint', mode: 'autonomous' });
    const answered = await gw.approvals.answer(question.id, 'bob', 'dev');
    expect(answered.dispatch).toMatchObject({ status: 'completed' });
  });

  it('rejecting a question ends the dispatch rejected; nothing more is sent', async () => {
    const record = await gw.dispatch({ agent: 'deployer', skill: 'ask', text: 'never' }).answered();
    const question = (await gw.approvals.list()).find((a) => a.dispatchId === record.id)!;
    const before = agent.received.length;
    const rejected = await gw.approvals.reject(question.id, 'alice', 'no');
    expect(rejected.dispatch).toMatchObject({
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_APPROVAL_REJECTED' } },
    });
    expect(agent.received).toHaveLength(before);
  });

  it('sends a veto call by itself when its window ends (the dispatcher times it)', async () => {
    const record = await gw
      .dispatch({ agent: 'deployer', skill: 'quick', text: 'soon' })
      .answered();
    expect(record.status).toBe('awaiting-approval');
    expect(agent.received.filter((c) => c.text === 'soon')).toHaveLength(0);
    const veto = (await gw.approvals.list()).find((a) => a.dispatchId === record.id);
    expect(veto).toMatchObject({ kind: 'veto', radius: 'self' });
    let status = record.status;
    await until(
      () => {
        void gw.dispatchRecord(record.id).then((r) => (status = r?.status ?? status));
        return status === 'completed';
      },
      5000,
      'the veto window to end',
    );
    expect(agent.received.filter((c) => c.text === 'soon')).toHaveLength(1);
  });
});

describe('HITL gate: a question the tracker sees later', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: Gateway;
  const asked = new Set<string>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-policy-late-question-'));
    agent = await startAgent({
      name: 'board',
      skills: [{ id: 'triage' }],
      extensions: [{ uri: BLAST_V1_URI, params: { skills: { triage: { radius: 'project' } } } }],
      // Works a while before asking; the answer on the same task completes it.
      behaviour: (call) => {
        if (!asked.has(call.taskId)) {
          asked.add(call.taskId);
          return { delayMs: 150, state: 'input-required', statusText: 'Which board column?' };
        }
        return { artifacts: [[textPart(`moved to ${call.text}`)]] };
      },
    });
    gw = await createGateway(
      {
        store: `sqlite:${join(dir, 'gw.db')}`,
        agents: [{ name: 'board', url: agent.url }],
        policy: { sweepInterval: '1h' },
      },
      {
        dispatchMode: 'return-immediately',
        tracking: { polling: { intervalMs: 20, growth: 1 } },
      },
    );
  });

  afterAll(async () => {
    await gw?.close();
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('turns an input-required seen by a poll into an inbox question, from the call’s requester; the answer completes the task', async () => {
    const record = await gw
      .dispatch({ agent: 'board', skill: 'triage', text: 'bug 7', requestedBy: 'carol' })
      .answered();
    expect(record.status).toBe('running');
    const taskId = agent.received[0]!.taskId;

    let question: Awaited<ReturnType<Gateway['approvals']['list']>>[number] | undefined;
    await until(
      () => {
        void gw.approvals
          .list()
          .then((all) => (question = all.find((a) => a.dispatchId === record.id)));
        return question !== undefined;
      },
      5000,
      'the question to reach the inbox',
    );
    expect(question).toMatchObject({
      kind: 'checkpoint',
      taskId,
      question: 'Which board column?',
      status: 'pending',
      requestedBy: 'carol',
    });
    expect((await gw.dispatchRecord(record.id))?.status).toBe('awaiting-input');

    await gw.approvals.answer(question!.id, 'alice', 'done');
    let status: string | undefined;
    await until(
      () => {
        void gw.dispatchRecord(record.id).then((r) => (status = r?.status));
        return status === 'completed';
      },
      5000,
      'the answered task to complete',
    );
    expect(agent.received.map((c) => [c.text, c.taskId])).toEqual([
      ['bug 7', taskId],
      ['done', taskId],
    ]);
    // One question per interruption: later polls of the same state ask nothing more.
    const questions = (await gw.approvals.list()).filter((a) => a.dispatchId === record.id);
    expect(questions).toHaveLength(0);
  });
});
