/** The reads of the approvals inbox: by dispatch, by status, rejection memory and the audit. */
import type {
  ApprovalKind,
  ApprovalListOptions,
  ApprovalRecord,
  PolicyAuditEntry,
} from './approval-records.js';
import { fromRow } from './approval-records.js';
import type { InboxContext } from './inbox-context.js';

/** `ApprovalInbox.byDispatch`: the newest approval of a dispatch, of the given kinds. */
export async function approvalByDispatch(
  ctx: InboxContext,
  dispatchId: string,
  kinds: readonly ApprovalKind[] | undefined,
): Promise<ApprovalRecord | undefined> {
  const { db } = ctx;
  let query = db
    .selectFrom('fleetgate_policy_approval')
    .selectAll()
    .where('dispatch_id', '=', dispatchId);
  if (kinds !== undefined) query = query.where('kind', 'in', [...kinds]);
  const row = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirst();
  return row === undefined ? undefined : fromRow(row);
}

/**
 * `ApprovalInbox.list`: approvals by status (default `pending`, snoozed ones left out), of one
 * dispatch when `dispatchId` is given.
 */
export async function listApprovals(
  ctx: InboxContext,
  opts: ApprovalListOptions = {},
): Promise<ApprovalRecord[]> {
  const { db, now } = ctx;
  const status = opts.status ?? 'pending';
  const at = now();
  let query = db.selectFrom('fleetgate_policy_approval').selectAll().where('status', '=', status);
  if (opts.dispatchId !== undefined) query = query.where('dispatch_id', '=', opts.dispatchId);
  if (status === 'pending' && opts.includeSnoozed !== true) {
    query = query.where((eb) =>
      eb.or([eb('snoozed_until', 'is', null), eb('snoozed_until', '<=', at)]),
    );
  }
  const rows = await query.orderBy('created_at').orderBy('id').execute();
  return rows.map(fromRow);
}

/** `ApprovalInbox.recentRejection`: the latest rejection of a fingerprint since `since`. */
export async function recentRejection(
  ctx: InboxContext,
  fingerprint: string,
  since: number,
): Promise<ApprovalRecord | undefined> {
  const { db } = ctx;
  const row = await db
    .selectFrom('fleetgate_policy_approval')
    .selectAll()
    .where('fingerprint', '=', fingerprint)
    .where('status', '=', 'rejected')
    .where('decided_at', '>=', since)
    .orderBy('decided_at', 'desc')
    .executeTakeFirst();
  return row === undefined ? undefined : fromRow(row);
}

/** `ApprovalInbox.audit`: the audit entries, of one subject or all. */
export async function auditEntries(
  ctx: InboxContext,
  subject: string | undefined,
): Promise<PolicyAuditEntry[]> {
  const { db } = ctx;
  let query = db.selectFrom('fleetgate_policy_audit').selectAll();
  if (subject !== undefined) query = query.where('subject', '=', subject);
  const rows = await query.orderBy('seq').execute();
  return rows.map((r) => ({
    seq: Number(r.seq),
    subject: r.subject,
    action: r.action,
    by: r.by,
    reason: r.reason,
    at: Number(r.at),
  }));
}
