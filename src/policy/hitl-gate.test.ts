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
});
