/**
 * The durable approvals inbox: requests, decisions, single-use consumption, expiry, rejection
 * memory and standing approvals, in the store, shared by every replica.
 *
 * Every decision is a compare-and-set on the row (`status = 'pending'` and the approvals seen), so
 * two replicas deciding at once cannot both win, on SQLite and PostgreSQL alike.
 */
import type { Kysely, Transaction } from 'kysely';
import type {
  ApprovalKind,
  ApprovalListOptions,
  ApprovalRecord,
  NewApproval,
  PolicyAuditEntry,
} from './approval-records.js';
import { recordById } from './approval-records.js';
import type { InboxContext } from './inbox-context.js';
import { answerChange, approveChange, decideOn, rejectChange } from './inbox-decisions.js';
import {
  consumeApproval,
  expireDue,
  requestApproval,
  settleApproval,
  unsettledApprovals,
  voidApproval,
} from './inbox-lifecycle.js';
import {
  approvalByDispatch,
  auditEntries,
  listApprovals,
  recentRejection,
} from './inbox-queries.js';
import type { StandingApprovals } from './standing.js';
import { createStandingApprovals } from './standing.js';
import type { PolicyDatabase } from './store-tables.js';
import type { InboxEvents } from './types.js';

export type {
  ApprovalKind,
  ApprovalListOptions,
  ApprovalRecord,
  ApprovalStatus,
  ApprovalVote,
  HeldInput,
  NewApproval,
  PolicyAuditEntry,
  StandingRecord,
} from './approval-records.js';
export { alreadyDecided, hasVetoWindow } from './approval-records.js';

/** The store-backed approvals inbox. */
export interface ApprovalInbox extends StandingApprovals {
  request(approval: NewApproval): Promise<ApprovalRecord>;
  get(id: string): Promise<ApprovalRecord | undefined>;
  /** The newest approval of a dispatch, of the given kinds (default: any). */
  byDispatch(
    dispatchId: string,
    kinds?: readonly ApprovalKind[],
  ): Promise<ApprovalRecord | undefined>;
  /** Approvals by status (default `pending`, snoozed ones left out unless asked for). */
  list(options?: ApprovalListOptions): Promise<ApprovalRecord[]>;
  /**
   * One approver says yes; the request is `approved` once `requiredApprovals` distinct approvers
   * did. An accepted yes writes `hitl.approval.voted` in its transaction (with `events`).
   * @throws `FLEETGATE_APPROVAL_ALREADY_DECIDED`, `…_SELF`, `…_EXPIRED`, `…_NOT_FOUND`
   */
  approve(id: string, by: string, reason?: string): Promise<ApprovalRecord>;
  /**
   * Answers a checkpoint: the answer is sent back to the agent on the same task. The requester may
   * answer unless the skill is `compound` (then an approver must).
   */
  answer(id: string, by: string, text: string, reason?: string): Promise<ApprovalRecord>;
  /**
   * Rejects a pending request; writes `hitl.approval.voted` in its transaction (with `events`).
   * @throws `FLEETGATE_APPROVAL_ALREADY_DECIDED`, `…_EXPIRED`, `…_NOT_FOUND`
   */
  reject(id: string, by: string, reason?: string): Promise<ApprovalRecord>;
  /**
   * Hides a pending request from the default list until `until` (not a rejection), at most until
   * it expires: it expires on time whatever the snooze said.
   */
  snooze(id: string, by: string, until: number, reason?: string): Promise<ApprovalRecord>;
  /**
   * Expires every open request past its time but those with a veto window (they go then);
   * returns the ones it expired.
   */
  expireDue(): Promise<ApprovalRecord[]>;
  /**
   * Consumes an approval, once, in one transaction with `work` (the dispatch moving on). The
   * approval must be `approved` (or one whose veto window ended unvetoed) and carry `fingerprint`;
   * when `work` returns false, nothing is consumed. Resolves false when the approval was not usable.
   */
  consume(
    id: string,
    fingerprint: string,
    work: (trx: Transaction<unknown>) => Promise<boolean>,
  ): Promise<boolean>;
  /**
   * Requests whose dispatch must move on: decided (approved, rejected, expired, void) but not
   * settled, and requests whose veto window ended.
   */
  unsettled(): Promise<ApprovalRecord[]>;
  /** Marks a decided request settled; true for the one caller that did it (publish once). */
  settle(id: string): Promise<boolean>;
  /** Marks a request void (its call changed); no-op unless pending or approved. */
  voidApproval(id: string, reason: string): Promise<ApprovalRecord | undefined>;
  /** The latest rejection of this fingerprint decided at or after `since`. */
  recentRejection(fingerprint: string, since: number): Promise<ApprovalRecord | undefined>;
  audit(subject?: string): Promise<PolicyAuditEntry[]>;
}

/** Options of {@link createApprovalInbox}. */
export interface ApprovalInboxOptions<DB extends PolicyDatabase> {
  db: Kysely<DB>;
  now?: () => number;
  /**
   * Where each accepted vote's `hitl.approval.voted` is written, in the vote's transaction (the
   * gateway: its outbox). Without it no vote event is written.
   */
  events?: InboxEvents;
}

/**
 * The approvals inbox over the store's tables ({@link POLICY_MIGRATIONS}).
 *
 * @example
 * ```ts
 * const inbox = createApprovalInbox({ db: store.db });
 * await inbox.approve(id, 'alice', 'looks right');
 * ```
 */
export function createApprovalInbox<DB extends PolicyDatabase>(
  options: ApprovalInboxOptions<DB>,
): ApprovalInbox {
  // kysely's types are invariant in DB; the constraint guarantees the tables exist.
  const db = options.db as unknown as Kysely<PolicyDatabase>;
  const now = options.now ?? Date.now;

  const get = (id: string): Promise<ApprovalRecord | undefined> =>
    recordById(db, 'fleetgate_policy_approval', id);

  const audit = async (
    runner: Kysely<PolicyDatabase>,
    subject: string,
    action: string,
    by: string,
    reason: string | null | undefined,
  ): Promise<void> => {
    await runner
      .insertInto('fleetgate_policy_audit')
      .values({ subject, action, by, reason: reason ?? null, at: now() })
      .execute();
  };

  const ctx: InboxContext = { db, now, get, audit, events: options.events };

  return {
    ...createStandingApprovals(db, now, audit),
    request: (approval) => requestApproval(ctx, approval),
    get,
    byDispatch: (dispatchId, kinds) => approvalByDispatch(ctx, dispatchId, kinds),
    list: (opts) => listApprovals(ctx, opts),
    approve: (id, by, reason) =>
      decideOn(ctx, id, approveChange(id, by, reason), 'approve', by, reason),
    answer: (id, by, text, reason) =>
      decideOn(ctx, id, answerChange(id, by, text, reason), 'answer', by, reason),
    reject: (id, by, reason) => decideOn(ctx, id, rejectChange(by, reason), 'reject', by, reason),
    snooze: (id, by, until, reason) =>
      decideOn(
        ctx,
        id,
        (record) => ({ snoozed_until: snoozedUntil(record, until) }),
        'snooze',
        by,
        reason,
      ),
    expireDue: () => expireDue(ctx),
    consume: (id, fingerprint, work) => consumeApproval(ctx, id, fingerprint, work),
    unsettled: () => unsettledApprovals(ctx),
    settle: (id) => settleApproval(ctx, id),
    voidApproval: (id, reason) => voidApproval(ctx, id, reason),
    recentRejection: (fingerprint, since) => recentRejection(ctx, fingerprint, since),
    audit: (subject) => auditEntries(ctx, subject),
  };
}

/**
 * When a snooze of `record` until `until` ends: never after the request expires (a longer snooze
 * hides nothing more, and a duration of thousands of years made a time past every safe integer).
 */
function snoozedUntil(record: ApprovalRecord, until: number): number {
  return Number.isFinite(until) ? Math.min(until, record.expiresAt) : record.expiresAt;
}
