import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { writeOutboxEvent } from '../bus/index.js';
import { isFleetgateError } from '../protocol/index.js';
import type { GatewayStore } from '../service/index.js';
import { openGatewayStore } from '../service/index.js';
import type { ApprovalInbox, NewApproval } from './inbox.js';
import { createApprovalInbox } from './inbox.js';
import type { InboxEvents } from './types.js';

function request(over: Partial<NewApproval> = {}): NewApproval {
  return {
    kind: 'dispatch',
    dispatchId: `d-${Math.random()}`,
    agent: 'ops',
    skill: 'bulk_migration',
    correlationId: `c-${Math.random()}`,
    fingerprint: 'fp-1',
    policyVersion: 'v1',
    mode: 'gated',
    radius: 'public',
    requestedBy: 'bob',
    requiredApprovals: 2,
    input: { text: 'x' },
    domains: ['github_issues'],
    reasons: [{ kind: 'declared-radius', detail: 'declared public' }],
    expiresAt: 1_000_000,
    ...over,
  };
}

interface VoteRow {
  id: string;
  correlation_id: string;
  payload: string;
}

// The inbox writes each accepted vote into the store's outbox in the vote's own transaction; the
// relay (not under test here) publishes what the outbox holds.
describe('approvals inbox: vote events', () => {
  let dir: string;
  let store: GatewayStore;
  let inbox: ApprovalInbox;
  const committed = vi.fn();
  let failWrite = false;

  const votes = async (): Promise<VoteRow[]> =>
    (
      await sql<VoteRow>`select id, correlation_id, payload from fleetgate_outbox
        where topic = 'hitl.approval.voted' order by seq`.execute(store.db)
    ).rows;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-inbox-votes-'));
    store = await openGatewayStore(`sqlite:${join(dir, 'votes.db')}`);
    const events: InboxEvents = {
      write: async (trx, topic, payload, options) => {
        if (failWrite) throw new Error('outbox unavailable');
        await writeOutboxEvent(trx, topic, payload, options);
      },
      onCommitted: committed,
    };
    inbox = createApprovalInbox({ db: store.db, now: () => 5000, events });
  });

  beforeEach(async () => {
    committed.mockClear();
    failWrite = false;
    await sql`delete from fleetgate_outbox`.execute(store.db);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes one hitl.approval.voted per accepted vote: the name, the id, the vote and the counts', async () => {
    const r = await inbox.request(request());
    await inbox.approve(r.id, 'alice', 'looks right');
    const [first] = await votes();
    expect(JSON.parse(first!.payload)).toEqual({
      approvalId: r.id,
      by: 'alice',
      vote: 'approve',
      needed: 2,
      have: 1,
    });
    expect(first!.correlation_id).toBe(r.correlationId);
    expect(committed).toHaveBeenCalledTimes(1);

    const done = await inbox.approve(r.id, 'carol');
    expect(done.status).toBe('approved');
    expect((await votes()).map((v) => JSON.parse(v.payload) as unknown)).toEqual([
      { approvalId: r.id, by: 'alice', vote: 'approve', needed: 2, have: 1 },
      { approvalId: r.id, by: 'carol', vote: 'approve', needed: 2, have: 2 },
    ]);

    const other = await inbox.request(request());
    await inbox.reject(other.id, 'alice', 'not today');
    expect(JSON.parse((await votes()).at(-1)!.payload)).toEqual({
      approvalId: other.id,
      by: 'alice',
      vote: 'reject',
      needed: 2,
      have: 0,
    });
  });

  it('writes nothing for a refused vote: a second yes, the requester, a decided request, a checkpoint', async () => {
    const r = await inbox.request(request());
    await inbox.approve(r.id, 'alice');
    const before = await votes();
    expect(before).toHaveLength(1);
    committed.mockClear();

    const refused = await Promise.allSettled([
      inbox.approve(r.id, 'alice'),
      inbox.approve(r.id, 'bob'),
    ]);
    expect(refused.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    const reasons = refused.map((x) => (x as PromiseRejectedResult).reason as unknown);
    expect(isFleetgateError(reasons[0], 'FLEETGATE_APPROVAL_ALREADY_DECIDED')).toBe(true);
    expect(isFleetgateError(reasons[1], 'FLEETGATE_APPROVAL_SELF')).toBe(true);

    const decided = await inbox.request(request());
    await inbox.reject(decided.id, 'carol');
    const afterReject = await votes();
    await expect(inbox.approve(decided.id, 'alice')).rejects.toThrow(/already rejected/);
    await expect(inbox.reject(decided.id, 'alice')).rejects.toThrow(/already rejected/);

    const question = await inbox.request(request({ kind: 'checkpoint', mode: 'compound' }));
    await expect(inbox.approve(question.id, 'alice')).rejects.toThrow(/checkpoint/);
    // A snooze is no vote.
    await inbox.snooze(r.id, 'alice', 9000);

    expect(await votes()).toEqual(afterReject);
    expect(afterReject).toHaveLength(2);
    expect(committed).toHaveBeenCalledTimes(1); // carol's rejection only
    expect((await inbox.get(r.id))?.approvals.map((v) => v.by)).toEqual(['alice']);
  });

  it('commits a vote with its event or not at all', async () => {
    const r = await inbox.request(request());
    failWrite = true;
    await expect(inbox.approve(r.id, 'alice')).rejects.toThrow('outbox unavailable');
    expect((await inbox.get(r.id))?.approvals).toEqual([]);
    expect(await votes()).toEqual([]);
    expect(committed).not.toHaveBeenCalled();
  });
});
