/**
 * The gate's re-check before a held call goes out, with declarations that change under it.
 * (End to end through `createGateway`: test/policy-gate.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HitlMode, BlastRadius } from '../protocol/index.js';
import type { GatewayStore as Store } from '../service/index.js';
import { openGatewayStore } from '../service/index.js';
import type { HitlGate } from './hitl-gate.js';
import { createHitlGate } from './hitl-gate.js';
import { createApprovalInbox } from './inbox.js';
import type { EffectiveDeclarations } from './types.js';

describe('HITL gate re-check', () => {
  let store: Store;
  let gate: HitlGate;
  let clock = 1_000_000;
  const declared: { radius: BlastRadius; mode: HitlMode } = { radius: 'repo', mode: 'veto' };
  const published: string[] = [];

  const declarations: EffectiveDeclarations = {
    effectiveRadius: () => ({
      radius: declared.radius,
      declared: declared.radius,
      accepted: declared.radius,
      pending: undefined,
      floor: undefined,
      stale: false,
    }),
    effectiveHitlMode: () => ({
      mode: declared.mode,
      declared: declared.mode,
      pending: undefined,
      vetoTtlMs: 1000,
      stale: false,
    }),
    domains: () => ['ci'],
  };

  beforeAll(async () => {
    store = await openGatewayStore('sqlite::memory:');
    gate = createHitlGate({
      declarations,
      inbox: createApprovalInbox({ db: store.db, now: () => clock }),
      rules: { approvalAtOrAbove: 'fleet' },
      publish: (topic) => Promise.resolve(void published.push(topic)),
      now: () => clock,
    });
  });

  afterAll(() => store.close());

  const call = (dispatchId: string) => ({
    dispatchId,
    agent: 'ops',
    skill: 'pr_review',
    correlationId: 'c',
    input: { text: 'review 42' },
  });

  it('lets an unvetoed veto call go when its window ends, once', async () => {
    const held = await gate.decide(call('d1'));
    expect(held).toMatchObject({ action: 'hold', goAt: clock + 1000 });
    expect(await gate.release(call('d1'))).toMatchObject({ action: 'wait' });
    clock += 1000;
    const go = await gate.release(call('d1'));
    expect(go.action).toBe('go');
    if (go.action !== 'go') return;
    expect(go.input).toEqual({ text: 'review 42' });
    expect(await go.claim(() => Promise.resolve(true))).toBe(true);
    expect(await go.claim(() => Promise.resolve(true))).toBe(false);
  });

  it('voids a veto call whose skill now declares gated: it needs an approval now', async () => {
    declared.mode = 'veto';
    await gate.decide(call('d2'));
    declared.mode = 'gated';
    clock += 1000;
    expect(await gate.release(call('d2'))).toMatchObject({
      action: 'deny',
      code: 'FLEETGATE_APPROVAL_VOID',
      reason: 'the call now needs gated, it was held as veto',
    });
    declared.mode = 'veto';
  });

  it('voids an approval when the radius widened between approval and execution', async () => {
    declared.radius = 'fleet';
    const held = await gate.decide(call('d3'));
    expect(held).toMatchObject({ action: 'hold', decision: { mode: 'gated' } });
    if (held.action !== 'hold') return;
    await gate.approve(held.approvalId!, 'alice');
    declared.radius = 'public';
    expect(await gate.release(call('d3'))).toMatchObject({
      action: 'deny',
      code: 'FLEETGATE_APPROVAL_VOID',
    });
    expect((await gate.inbox.get(held.approvalId!))?.status).toBe('void');
    declared.radius = 'repo';
  });
  describe('a follow-up to a running task', () => {
    const followUp = (dispatchId: string) => ({
      ...call(dispatchId),
      input: { text: 'and the rest' },
      requestedBy: 'alice',
      followUp: { taskId: `agent-task-${dispatchId}`, contextId: 'ctx' },
    });

    it('of a veto skill waits as a follow-up approval, and goes on the task when its window ends', async () => {
      declared.mode = 'veto';
      const held = await gate.decide(followUp('f1'));
      expect(held).toMatchObject({ action: 'hold' });
      if (held.action !== 'hold') return;
      const approval = (await gate.inbox.get(held.approvalId!))!;
      expect(approval).toMatchObject({
        kind: 'follow-up',
        dispatchId: 'f1',
        taskId: 'agent-task-f1',
        contextId: 'ctx',
        requestedBy: 'alice',
        input: { text: 'and the rest' },
      });
      // Not a hold of the dispatch itself: releasing the dispatch finds no approval of its own.
      expect(await gate.release(call('f1'))).toMatchObject({ action: 'deny' });
      expect(await gate.continueFollowUp({ approvalId: approval.id })).toMatchObject({
        action: 'wait',
        reason: 'waiting for the veto window',
      });
      // A window is not an expiry: the sweep leaves it pending, then hands it on once it ended.
      clock += 1000;
      await gate.sweep();
      expect((await gate.inbox.get(approval.id))?.status).toBe('pending');
      expect((await gate.inbox.unsettled()).map((a) => a.id)).toContain(approval.id);
      const go = await gate.continueFollowUp({ approvalId: approval.id });
      expect(go).toMatchObject({
        action: 'go',
        dispatchId: 'f1',
        taskId: 'agent-task-f1',
        contextId: 'ctx',
        input: { text: 'and the rest' },
      });
      if (go.action !== 'go') return;
      expect(await go.claim(() => Promise.resolve(true))).toBe(true);
      expect(await go.claim(() => Promise.resolve(true))).toBe(false);
      expect(await gate.continueFollowUp({ approvalId: approval.id })).toMatchObject({
        action: 'deny',
        code: 'FLEETGATE_APPROVAL_VOID',
      });
    });

    it('of a gated skill needs an approver other than its sender, and expires unanswered', async () => {
      declared.radius = 'fleet';
      declared.mode = 'veto';
      const held = await gate.decide(followUp('f2'));
      if (held.action !== 'hold') throw new Error(`held expected, got ${held.action}`);
      await expect(gate.approve(held.approvalId!, 'alice')).rejects.toMatchObject({
        code: 'FLEETGATE_APPROVAL_SELF',
      });
      expect(await gate.continueFollowUp({ approvalId: held.approvalId! })).toMatchObject({
        action: 'wait',
        reason: 'waiting for approval',
      });
      clock += gate.rules.approvalTtlMs;
      expect((await gate.sweep()).map((a) => a.id)).toContain(held.approvalId);
      expect((await gate.inbox.get(held.approvalId!))?.status).toBe('expired');
      expect(await gate.continueFollowUp({ approvalId: held.approvalId! })).toMatchObject({
        action: 'deny',
        code: 'FLEETGATE_APPROVAL_EXPIRED',
      });
      declared.radius = 'repo';
    });

    it('is refused for an approval that is not a follow-up', async () => {
      declared.mode = 'veto';
      const held = await gate.decide(call('f3'));
      if (held.action !== 'hold') throw new Error(`held expected, got ${held.action}`);
      expect(await gate.continueFollowUp({ approvalId: held.approvalId! })).toMatchObject({
        action: 'deny',
        code: 'FLEETGATE_APPROVAL_VOID',
      });
    });
  });
});
