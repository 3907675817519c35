/**
 * The life of a request after the decisions: asked for, expired, consumed once with the dispatch
 * moving on, settled, or made void when its call changed.
 */
import type { Transaction } from 'kysely';
import { newRecordId } from '../protocol/ids/index.js';
import type { ApprovalRecord, NewApproval } from './approval-records.js';
import { fromRow } from './approval-records.js';
import type { InboxContext } from './inbox-context.js';
import { vetoWindow } from './inbox-context.js';
import type { ApprovalTable } from './store-tables.js';

/** Thrown inside a consume transaction to roll it back when the dispatch could not move on. */
const ROLLBACK = new Error('approval consumption rolled back');

/** `ApprovalInbox.request`: a new pending request, audited in the same transaction. */
export async function requestApproval(
  ctx: InboxContext,
  approval: NewApproval,
): Promise<ApprovalRecord> {
  const { db, now, audit } = ctx;
  const id = approval.id ?? newRecordId();
  const row: ApprovalTable = {
    id,
    kind: approval.kind,
    dispatch_id: approval.dispatchId,
    agent: approval.agent,
    skill: approval.skill,
    correlation_id: approval.correlationId,
    fingerprint: approval.fingerprint,
    policy_version: approval.policyVersion,
    mode: approval.mode,
    radius: approval.radius,
    requested_by: approval.requestedBy,
    required_approvals: approval.requiredApprovals,
    approvals: '[]',
    status: 'pending',
    decided_by: null,
    decided_at: null,
    reason: null,
    input: JSON.stringify(approval.input),
    domains: approval.domains === null ? null : JSON.stringify(approval.domains),
    reasons: JSON.stringify(approval.reasons),
    created_at: now(),
    expires_at: approval.expiresAt,
    snoozed_until: null,
    consumed_at: null,
    settled_at: null,
    task_id: approval.taskId ?? null,
    context_id: approval.contextId ?? null,
    question: approval.question ?? null,
    answer: null,
  };
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('fleetgate_policy_approval').values(row).execute();
    await audit(trx, id, 'request', approval.requestedBy ?? 'anonymous', null);
  });
  return fromRow(row);
}

/** Expires one pending request; true for the one caller that did it. */
export async function expireOne(
  ctx: InboxContext,
  record: ApprovalRecord,
  at: number,
): Promise<boolean> {
  const { db, audit } = ctx;
  return db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('fleetgate_policy_approval')
      .set({
        status: 'expired',
        decided_by: 'policy',
        decided_at: at,
        reason: 'approval expired',
      })
      .where('id', '=', record.id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (result.numUpdatedRows !== 1n) return false;
    await audit(trx, record.id, 'expire', 'policy', 'approval expired');
    return true;
  });
}

/** `ApprovalInbox.expireDue`: expires every open request past its time but those with a veto window. */
export async function expireDue(ctx: InboxContext): Promise<ApprovalRecord[]> {
  const { db, now, get } = ctx;
  const at = now();
  const rows = await db
    .selectFrom('fleetgate_policy_approval')
    .selectAll()
    .where('status', '=', 'pending')
    .where((eb) => eb.not(vetoWindow(eb)))
    .where('expires_at', '<=', at)
    .execute();
  const expired: ApprovalRecord[] = [];
  for (const row of rows) {
    if (await expireOne(ctx, fromRow(row), at)) expired.push((await get(row.id))!);
  }
  return expired;
}

/** `ApprovalInbox.consume`: consumes an approval once, in one transaction with `work`. */
export async function consumeApproval(
  ctx: InboxContext,
  id: string,
  fingerprint: string,
  work: (trx: Transaction<unknown>) => Promise<boolean>,
): Promise<boolean> {
  const { db, now, audit } = ctx;
  const at = now();
  try {
    return await db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('fleetgate_policy_approval')
        .set({ status: 'consumed', consumed_at: at, settled_at: at })
        .where('id', '=', id)
        .where('fingerprint', '=', fingerprint)
        .where((eb) =>
          eb.or([
            eb('status', '=', 'approved'),
            eb.and([vetoWindow(eb), eb('status', '=', 'pending'), eb('expires_at', '<=', at)]),
          ]),
        )
        .executeTakeFirst();
      if (result.numUpdatedRows !== 1n) return false;
      await audit(trx, id, 'consume', 'policy', null);
      if (!(await work(trx as unknown as Transaction<unknown>))) throw ROLLBACK;
      return true;
    });
  } catch (error) {
    if (error === ROLLBACK) return false;
    throw error;
  }
}

/** `ApprovalInbox.unsettled`: requests whose dispatch must move on. */
export async function unsettledApprovals(ctx: InboxContext): Promise<ApprovalRecord[]> {
  const { db, now } = ctx;
  const at = now();
  const rows = await db
    .selectFrom('fleetgate_policy_approval')
    .selectAll()
    .where('settled_at', 'is', null)
    .where((eb) =>
      eb.or([
        eb('status', 'in', ['approved', 'rejected', 'expired', 'void']),
        eb.and([vetoWindow(eb), eb('status', '=', 'pending'), eb('expires_at', '<=', at)]),
      ]),
    )
    .orderBy('created_at')
    .execute();
  return rows.map(fromRow);
}

/** `ApprovalInbox.settle`: marks a decided request settled; true for the one caller that did it. */
export async function settleApproval(ctx: InboxContext, id: string): Promise<boolean> {
  const { db, now } = ctx;
  const result = await db
    .updateTable('fleetgate_policy_approval')
    .set({ settled_at: now() })
    .where('id', '=', id)
    .where('settled_at', 'is', null)
    .where('status', 'in', ['rejected', 'expired', 'void', 'consumed'])
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** `ApprovalInbox.voidApproval`: marks a pending or approved request void (its call changed). */
export async function voidApproval(
  ctx: InboxContext,
  id: string,
  reason: string,
): Promise<ApprovalRecord | undefined> {
  const { db, now, get, audit } = ctx;
  await db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('fleetgate_policy_approval')
      .set({ status: 'void', decided_by: 'policy', decided_at: now(), reason })
      .where('id', '=', id)
      .where('status', 'in', ['pending', 'approved'])
      .executeTakeFirst();
    if (result.numUpdatedRows === 1n) await audit(trx, id, 'void', 'policy', reason);
  });
  return get(id);
}
