/**
 * The durable approvals inbox: requests, decisions, single-use consumption, expiry, rejection
 * memory and standing approvals, in the store, shared by every replica.
 *
 * Every decision is a compare-and-set on the row (`status = 'pending'` and the approvals seen), so
 * two replicas deciding at once cannot both win, on SQLite and PostgreSQL alike.
 */
import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, Kysely, Transaction } from 'kysely';
import { FleetgateError } from '../protocol/index.js';
import type {
  ApprovalKind,
  ApprovalRecord,
  ApprovalStatus,
  NewApproval,
  PolicyAuditEntry,
} from './approval-records.js';
import { alreadyDecided, fromRow, hasVetoWindow, notFound } from './approval-records.js';
import type { StandingApprovals } from './standing.js';
import { createStandingApprovals } from './standing.js';
import type { ApprovalTable, PolicyDatabase } from './store-tables.js';

export type {
  ApprovalKind,
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
  list(options?: { status?: ApprovalStatus; includeSnoozed?: boolean }): Promise<ApprovalRecord[]>;
  /**
   * One approver says yes; the request is `approved` once `requiredApprovals` distinct approvers
   * did. @throws `FLEETGATE_APPROVAL_ALREADY_DECIDED`, `…_SELF`, `…_EXPIRED`, `…_NOT_FOUND`
   */
  approve(id: string, by: string, reason?: string): Promise<ApprovalRecord>;
  /**
   * Answers a checkpoint: the answer is sent back to the agent on the same task. The requester may
   * answer unless the skill is `compound` (then an approver must).
   */
  answer(id: string, by: string, text: string, reason?: string): Promise<ApprovalRecord>;
  /** @throws `FLEETGATE_APPROVAL_ALREADY_DECIDED`, `…_EXPIRED`, `…_NOT_FOUND` */
  reject(id: string, by: string, reason?: string): Promise<ApprovalRecord>;
  /** Hides a pending request from the default list until `until` (not a rejection). */
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
}

const CAS_ATTEMPTS = 5;

/** {@link hasVetoWindow} as a condition on approval rows. */
function vetoWindow(eb: ExpressionBuilder<PolicyDatabase, 'fleetgate_policy_approval'>) {
  return eb.or([
    eb('kind', '=', 'veto'),
    eb.and([eb('kind', '=', 'follow-up'), eb('mode', '=', 'veto')]),
  ]);
}

/** Thrown inside a consume transaction to roll it back when the dispatch could not move on. */
const ROLLBACK = new Error('approval consumption rolled back');

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

  const get = async (id: string): Promise<ApprovalRecord | undefined> => {
    const row = await db
      .selectFrom('fleetgate_policy_approval')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row === undefined ? undefined : fromRow(row);
  };

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

  /**
   * Moves a pending request on with a compare-and-set on its status and votes; retried when
   * another approver got there first.
   */
  const decideOn = async (
    id: string,
    change: (record: ApprovalRecord, at: number) => Partial<ApprovalTable> | FleetgateError,
    action: string,
    by: string,
    reason: string | undefined,
  ): Promise<ApprovalRecord> => {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt += 1) {
      const record = await get(id);
      if (record === undefined) throw notFound(id);
      const at = now();
      if (record.status === 'pending' && !hasVetoWindow(record) && record.expiresAt <= at) {
        await expireOne(record, at);
        throw alreadyDecided((await get(id))!);
      }
      if (record.status !== 'pending') throw alreadyDecided(record);
      const set = change(record, at);
      if (set instanceof FleetgateError) throw set;
      const done = await db.transaction().execute(async (trx) => {
        const result = await trx
          .updateTable('fleetgate_policy_approval')
          .set(set)
          .where('id', '=', id)
          .where('status', '=', 'pending')
          .where('approvals', '=', JSON.stringify(record.approvals))
          .executeTakeFirst();
        if (result.numUpdatedRows !== 1n) return false;
        await audit(trx, id, action, by, reason);
        return true;
      });
      if (done) return (await get(id))!;
    }
    throw new FleetgateError(
      'FLEETGATE_APPROVAL_ALREADY_DECIDED',
      `Approval ${id} kept changing while being decided; try again.`,
      { details: { id } },
    );
  };

  const expireOne = async (record: ApprovalRecord, at: number): Promise<boolean> => {
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
  };

  return {
    ...createStandingApprovals(db, now, audit),

    async request(approval) {
      const id = approval.id ?? randomUUID();
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
    },

    get,

    async byDispatch(dispatchId, kinds) {
      let query = db
        .selectFrom('fleetgate_policy_approval')
        .selectAll()
        .where('dispatch_id', '=', dispatchId);
      if (kinds !== undefined) query = query.where('kind', 'in', [...kinds]);
      const row = await query
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .executeTakeFirst();
      return row === undefined ? undefined : fromRow(row);
    },

    async list(opts = {}) {
      const status = opts.status ?? 'pending';
      const at = now();
      let query = db
        .selectFrom('fleetgate_policy_approval')
        .selectAll()
        .where('status', '=', status);
      if (status === 'pending' && opts.includeSnoozed !== true) {
        query = query.where((eb) =>
          eb.or([eb('snoozed_until', 'is', null), eb('snoozed_until', '<=', at)]),
        );
      }
      const rows = await query.orderBy('created_at').orderBy('id').execute();
      return rows.map(fromRow);
    },

    approve(id, by, reason) {
      return decideOn(
        id,
        (record, at) => {
          if (record.kind === 'checkpoint') {
            return new FleetgateError(
              'FLEETGATE_USAGE',
              `Approval ${id} is a checkpoint: answer it (the answer goes back to the agent).`,
              { details: { id, kind: record.kind } },
            );
          }
          if (record.requestedBy !== null && record.requestedBy === by) {
            return new FleetgateError(
              'FLEETGATE_APPROVAL_SELF',
              `${by} requested this call and cannot approve it.`,
              { details: { id, by } },
            );
          }
          if (record.approvals.some((v) => v.by === by)) {
            return new FleetgateError(
              'FLEETGATE_APPROVAL_ALREADY_DECIDED',
              `${by} already approved ${id}; it needs ${record.requiredApprovals} distinct approvers.`,
              { details: { id, by, status: record.status } },
            );
          }
          const approvals = [
            ...record.approvals,
            { by, at, ...(reason === undefined ? {} : { reason }) },
          ];
          const done = approvals.length >= record.requiredApprovals;
          return {
            approvals: JSON.stringify(approvals),
            ...(done
              ? {
                  status: 'approved',
                  decided_by: approvals.map((v) => v.by).join(', '),
                  decided_at: at,
                  reason: reason ?? null,
                }
              : {}),
          };
        },
        'approve',
        by,
        reason,
      );
    },

    answer(id, by, text, reason) {
      return decideOn(
        id,
        (record, at) => {
          if (record.kind !== 'checkpoint') {
            return new FleetgateError(
              'FLEETGATE_USAGE',
              `Approval ${id} is not a checkpoint; approve or reject it.`,
              { details: { id, kind: record.kind } },
            );
          }
          if (record.mode === 'compound' && record.requestedBy === by) {
            return new FleetgateError(
              'FLEETGATE_APPROVAL_SELF',
              `${by} requested this call and cannot answer its checkpoint.`,
              { details: { id, by } },
            );
          }
          return {
            approvals: JSON.stringify([{ by, at, ...(reason === undefined ? {} : { reason }) }]),
            status: 'approved',
            decided_by: by,
            decided_at: at,
            reason: reason ?? null,
            answer: text,
          };
        },
        'answer',
        by,
        reason,
      );
    },

    reject(id, by, reason) {
      return decideOn(
        id,
        (_record, at) => ({
          status: 'rejected',
          decided_by: by,
          decided_at: at,
          reason: reason ?? 'rejected',
        }),
        'reject',
        by,
        reason,
      );
    },

    snooze(id, by, until, reason) {
      return decideOn(id, () => ({ snoozed_until: until }), 'snooze', by, reason);
    },

    async expireDue() {
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
        if (await expireOne(fromRow(row), at)) expired.push((await get(row.id))!);
      }
      return expired;
    },

    async consume(id, fingerprint, work) {
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
    },

    async unsettled() {
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
    },

    async settle(id) {
      const result = await db
        .updateTable('fleetgate_policy_approval')
        .set({ settled_at: now() })
        .where('id', '=', id)
        .where('settled_at', 'is', null)
        .where('status', 'in', ['rejected', 'expired', 'void', 'consumed'])
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },

    async voidApproval(id, reason) {
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
    },

    async recentRejection(fingerprint, since) {
      const row = await db
        .selectFrom('fleetgate_policy_approval')
        .selectAll()
        .where('fingerprint', '=', fingerprint)
        .where('status', '=', 'rejected')
        .where('decided_at', '>=', since)
        .orderBy('decided_at', 'desc')
        .executeTakeFirst();
      return row === undefined ? undefined : fromRow(row);
    },

    async audit(subject) {
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
    },
  };
}
