import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import type { GatewayStore as Store } from '../service/index.js';
import { openGatewayStore } from '../service/index.js';
import type { ApprovalInbox, NewApproval } from './inbox.js';
import { createApprovalInbox } from './inbox.js';

function request(over: Partial<NewApproval> = {}): NewApproval {
  return {
    kind: 'dispatch',
    dispatchId: `d-${Math.random()}`,
    agent: 'ops',
    skill: 'bulk_migration',
    correlationId: 'c',
    fingerprint: 'fp-1',
    policyVersion: 'v1',
    mode: 'gated',
    radius: 'fleet',
    requestedBy: 'bob',
    requiredApprovals: 1,
    input: { text: 'x' },
    domains: ['github_issues'],
    reasons: [{ kind: 'declared-radius', detail: 'declared fleet' }],
    expiresAt: 10_000,
    ...over,
  };
}

// Two inboxes over one store: decisions race between reading a request and writing it. (Across
// processes and PostgreSQL the same compare-and-set is exercised in test/policy-replicas.test.ts.)
describe('approvals inbox (two inboxes racing on one SQLite file)', () => {
  let dir: string;
  let stores: Store[];
  let a: ApprovalInbox;
  let b: ApprovalInbox;
  let clock = 1000;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-inbox-'));
    const url = `sqlite:${join(dir, 'inbox.db')}`;
    stores = [await openGatewayStore(url)];
    a = createApprovalInbox({ db: stores[0]!.db, now: () => clock });
    b = createApprovalInbox({ db: stores[0]!.db, now: () => clock });
  });

  afterAll(async () => {
    for (const s of stores) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets one of two concurrent decisions win; the other is told who decided', async () => {
    const r = await a.request(request());
    const results = await Promise.allSettled([a.approve(r.id, 'alice'), b.reject(r.id, 'carol')]);
    const lost = results.filter((x) => x.status === 'rejected');
    expect(lost).toHaveLength(1);
    expect(
      isFleetgateError(
        (lost[0] as PromiseRejectedResult).reason,
        'FLEETGATE_APPROVAL_ALREADY_DECIDED',
      ),
    ).toBe(true);
    expect(['approved', 'rejected']).toContain((await b.get(r.id))?.status);
  });

  it('consumes an approval once, only with its fingerprint, and not when the dispatch cannot move', async () => {
    const r = await a.request(request());
    await a.approve(r.id, 'alice');
    expect(await a.consume(r.id, 'other-fp', () => Promise.resolve(true))).toBe(false);
    // The dispatch could not move on: the consumption is rolled back with it.
    expect(await a.consume(r.id, 'fp-1', () => Promise.resolve(false))).toBe(false);
    expect((await a.get(r.id))?.status).toBe('approved');
    const both = await Promise.all([
      a.consume(r.id, 'fp-1', () => Promise.resolve(true)),
      b.consume(r.id, 'fp-1', () => Promise.resolve(true)),
    ]);
    expect(both.filter(Boolean)).toHaveLength(1);
    expect((await b.get(r.id))?.status).toBe('consumed');
    expect((await a.audit(r.id)).map((e) => e.action)).toEqual(['request', 'approve', 'consume']);
  });

  it('never consumes a pending gated request, and expires it as a rejection', async () => {
    const r = await a.request(request({ expiresAt: clock + 100 }));
    expect(await a.consume(r.id, 'fp-1', () => Promise.resolve(true))).toBe(false);
    clock += 100;
    expect((await b.expireDue()).map((x) => x.id)).toContain(r.id);
    expect((await a.get(r.id))?.status).toBe('expired');
    expect(await a.consume(r.id, 'fp-1', () => Promise.resolve(true))).toBe(false);
  });

  it('lets an unvetoed veto request go once its window ended, not before', async () => {
    const r = await a.request(request({ kind: 'veto', mode: 'veto', expiresAt: clock + 50 }));
    expect(await a.consume(r.id, 'fp-1', () => Promise.resolve(true))).toBe(false);
    clock += 50;
    expect((await a.unsettled()).map((x) => x.id)).toContain(r.id);
    expect(await a.consume(r.id, 'fp-1', () => Promise.resolve(true))).toBe(true);
    expect((await a.unsettled()).map((x) => x.id)).not.toContain(r.id);
  });

  it('remembers a rejection by fingerprint within the cooldown', async () => {
    const r = await a.request(request({ fingerprint: 'fp-rejected', expiresAt: clock + 1000 }));
    await b.reject(r.id, 'alice', 'no');
    expect((await a.recentRejection('fp-rejected', clock - 10))?.reason).toBe('no');
    expect(await a.recentRejection('fp-rejected', clock + 1)).toBeUndefined();
  });

  it('takes standing approval uses atomically and stops at zero', async () => {
    const g = await a.grantStanding({
      agent: 'ops',
      skill: 'bulk_migration',
      maxRadius: 'fleet',
      by: 'alice',
      forMs: 1000,
      uses: 2,
    });
    const uses = await Promise.all(
      [1, 2, 3].map((i) => (i % 2 ? a : b).useStanding(g.id, `d${i}`)),
    );
    expect(uses.filter(Boolean)).toHaveLength(2);
    expect(await a.listStanding({ live: true })).toEqual([]);
    expect((await a.listStanding())[0]?.usesLeft).toBe(0);
  });
});
