/**
 * The durable approvals inbox: requests, decisions, single-use consumption, expiry, rejection
 * memory and standing approvals, in the store, shared by every replica.
 *
 * Every decision is a compare-and-set on the row (`status = 'pending'` and the approvals seen), so
 * two replicas deciding at once cannot both win, on SQLite and PostgreSQL alike.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { FleetgateError } from '../errors/index.js';
import type { BlastRadius, HitlMode } from '../protocol/index.js';
import type { Reason, StandingGrant } from './types.js';
import type { ApprovalTable, PolicyDatabase, StandingTable } from './store-tables.js';

/** Where an approval stands. `consumed`: its call went out; `void`: the call changed under it. */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'consumed' | 'void';

/**
 * `dispatch`: a gated call waits for approval; `veto`: a call goes when its window ends;
 * `checkpoint`: a running task asks for input, and the answer is sent back on the same task.
 */
export type ApprovalKind = 'dispatch' | 'veto' | 'checkpoint';

/** One approver's yes. */
export interface ApprovalVote {
  by: string;
  reason?: string;
  at: number;
}

/** The input of a held call, kept so any replica can send it once approved. */
export interface HeldInput {
  text?: string;
  data?: unknown;
}

/** One approval request, as the inbox, the CLI and `hitl.approval.*` events show it. */
export interface ApprovalRecord {
  id: string;
  kind: ApprovalKind;
  dispatchId: string;
  agent: string;
  skill: string;
  correlationId: string;
  fingerprint: string;
  policyVersion: string;
  mode: HitlMode;
  radius: BlastRadius | null;
  requestedBy: string | null;
  requiredApprovals: number;
  approvals: ApprovalVote[];
  status: ApprovalStatus;
  decidedBy: string | null;
  decidedAt: number | null;
  reason: string | null;
  input: HeldInput;
  /** The effect domains the skill declared: what the call may change. */
  domains: string[] | null;
  reasons: Reason[];
  createdAt: number;
  expiresAt: number;
  snoozedUntil: number | null;
  consumedAt: number | null;
  /** When the dispatch behind it moved on (sent or refused). */
  settledAt: number | null;
  /** Checkpoints: the task waiting on input and its conversation. */
  taskId: string | null;
  contextId: string | null;
  /** Checkpoints: what the agent asked. */
  question: string | null;
  /** Checkpoints: the answer sent back to the agent. */
  answer: string | null;
}

/** What {@link ApprovalInbox.request} needs. */
export type NewApproval = Omit<
  ApprovalRecord,
  | 'id'
  | 'approvals'
  | 'status'
  | 'decidedBy'
  | 'decidedAt'
  | 'reason'
  | 'createdAt'
  | 'snoozedUntil'
  | 'consumedAt'
  | 'settledAt'
  | 'taskId'
  | 'contextId'
  | 'question'
  | 'answer'
> & { id?: string; taskId?: string; contextId?: string; question?: string };

/** A standing approval with its audit fields. */
export interface StandingRecord extends StandingGrant {
  reason: string | null;
  createdAt: number;
  revokedAt: number | null;
  revokedBy: string | null;
}

/** One audit entry. */
export interface PolicyAuditEntry {
  seq: number;
  subject: string;
  action: string;
  by: string;
  reason: string | null;
  at: number;
}

/** The store-backed approvals inbox. */
export interface ApprovalInbox {
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
  /** Expires every open `dispatch` or `checkpoint` request past its time; returns the ones it expired. */
  expireDue(): Promise<ApprovalRecord[]>;
  /**
   * Consumes an approval, once, in one transaction with `work` (the dispatch moving on). The
   * approval must be `approved` (or a `veto` whose window ended unvetoed) and carry `fingerprint`;
   * when `work` returns false, nothing is consumed. Resolves false when the approval was not usable.
   */
  consume(
    id: string,
    fingerprint: string,
    work: (trx: Transaction<unknown>) => Promise<boolean>,
  ): Promise<boolean>;
  /**
   * Requests whose dispatch must move on: decided (approved, rejected, expired, void) but not
   * settled, and `veto` requests whose window ended.
   */
  unsettled(): Promise<ApprovalRecord[]>;
  /** Marks a decided request settled; true for the one caller that did it (publish once). */
  settle(id: string): Promise<boolean>;
  /** Marks a request void (its call changed); no-op unless pending or approved. */
  voidApproval(id: string, reason: string): Promise<ApprovalRecord | undefined>;
  /** The latest rejection of this fingerprint decided at or after `since`. */
  recentRejection(fingerprint: string, since: number): Promise<ApprovalRecord | undefined>;
  grantStanding(grant: {
    agent: string;
    skill: string;
    maxRadius: BlastRadius;
    by: string;
    forMs: number;
    uses?: number;
    reason?: string;
  }): Promise<StandingRecord>;
  revokeStanding(id: string, by: string, reason?: string): Promise<StandingRecord>;
  /** Standing approvals; `live` leaves out revoked, expired and used-up ones. */
  listStanding(options?: {
    agent?: string;
    skill?: string;
    live?: boolean;
  }): Promise<StandingRecord[]>;
  /** Takes one use of a grant; false when it was used up, revoked or expired meanwhile. */
  useStanding(id: string, subject: string): Promise<boolean>;
  audit(subject?: string): Promise<PolicyAuditEntry[]>;
}

/** Options of {@link createApprovalInbox}. */
export interface ApprovalInboxOptions<DB extends PolicyDatabase> {
  db: Kysely<DB>;
  now?: () => number;
}

function parse<T>(text: string | null, fallback: T): T {
  return text === null ? fallback : (JSON.parse(text) as T);
}

function fromRow(row: ApprovalTable): ApprovalRecord {
  return {
    id: row.id,
    kind: row.kind as ApprovalKind,
    dispatchId: row.dispatch_id,
    agent: row.agent,
    skill: row.skill,
    correlationId: row.correlation_id,
    fingerprint: row.fingerprint,
    policyVersion: row.policy_version,
    mode: row.mode as HitlMode,
    radius: row.radius as BlastRadius | null,
    requestedBy: row.requested_by,
    requiredApprovals: Number(row.required_approvals),
    approvals: parse<ApprovalVote[]>(row.approvals, []),
    status: row.status as ApprovalStatus,
    decidedBy: row.decided_by,
    decidedAt: row.decided_at === null ? null : Number(row.decided_at),
    reason: row.reason,
    input: parse<HeldInput>(row.input, {}),
    domains: parse<string[] | null>(row.domains, null),
    reasons: parse<Reason[]>(row.reasons, []),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    snoozedUntil: row.snoozed_until === null ? null : Number(row.snoozed_until),
    consumedAt: row.consumed_at === null ? null : Number(row.consumed_at),
    settledAt: row.settled_at === null ? null : Number(row.settled_at),
    taskId: row.task_id,
    contextId: row.context_id,
    question: row.question,
    answer: row.answer,
  };
}

function standingFromRow(row: StandingTable): StandingRecord {
  return {
    id: row.id,
    agent: row.agent,
    skill: row.skill,
    maxRadius: row.max_radius as BlastRadius,
    grantedBy: row.granted_by,
    reason: row.reason,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    usesLeft: row.uses_left === null ? null : Number(row.uses_left),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    revokedBy: row.revoked_by,
  };
}

function notFound(id: string): FleetgateError {
  return new FleetgateError('FLEETGATE_APPROVAL_NOT_FOUND', `No approval or grant ${id}.`, {
    details: { id },
  });
}

/** The error of a second decision: names who decided, and when. */
export function alreadyDecided(record: ApprovalRecord): FleetgateError {
  const code =
    record.status === 'expired'
      ? 'FLEETGATE_APPROVAL_EXPIRED'
      : 'FLEETGATE_APPROVAL_ALREADY_DECIDED';
  const by = record.decidedBy === null ? '' : ` by ${record.decidedBy}`;
  return new FleetgateError(code, `Approval ${record.id} is already ${record.status}${by}.`, {
    details: {
      id: record.id,
      status: record.status,
      decidedBy: record.decidedBy,
      decidedAt: record.decidedAt,
    },
  });
}

const CAS_ATTEMPTS = 5;

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
      if (record.status === 'pending' && record.kind !== 'veto' && record.expiresAt <= at) {
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

  const getStanding = async (id: string): Promise<StandingRecord | undefined> => {
    const row = await db
      .selectFrom('fleetgate_policy_standing')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row === undefined ? undefined : standingFromRow(row);
  };

  return {
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
        .where('kind', '!=', 'veto')
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
                eb.and([
                  eb('kind', '=', 'veto'),
                  eb('status', '=', 'pending'),
                  eb('expires_at', '<=', at),
                ]),
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
            eb.and([
              eb('kind', '=', 'veto'),
              eb('status', '=', 'pending'),
              eb('expires_at', '<=', at),
            ]),
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

    async grantStanding(grant) {
      const at = now();
      const row: StandingTable = {
        id: randomUUID(),
        agent: grant.agent,
        skill: grant.skill,
        max_radius: grant.maxRadius,
        granted_by: grant.by,
        reason: grant.reason ?? null,
        created_at: at,
        expires_at: at + grant.forMs,
        uses_left: grant.uses ?? null,
        revoked_at: null,
        revoked_by: null,
      };
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('fleetgate_policy_standing').values(row).execute();
        await audit(trx, row.id, 'grant', grant.by, grant.reason);
      });
      return standingFromRow(row);
    },

    async revokeStanding(id, by, reason) {
      const found = await getStanding(id);
      if (found === undefined) throw notFound(id);
      await db.transaction().execute(async (trx) => {
        const result = await trx
          .updateTable('fleetgate_policy_standing')
          .set({ revoked_at: now(), revoked_by: by })
          .where('id', '=', id)
          .where('revoked_at', 'is', null)
          .executeTakeFirst();
        if (result.numUpdatedRows === 1n) await audit(trx, id, 'revoke', by, reason);
      });
      return (await getStanding(id))!;
    },

    async listStanding(opts = {}) {
      let query = db.selectFrom('fleetgate_policy_standing').selectAll();
      if (opts.agent !== undefined) query = query.where('agent', '=', opts.agent);
      if (opts.skill !== undefined) query = query.where('skill', '=', opts.skill);
      if (opts.live === true) {
        query = query
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', now())
          .where((eb) => eb.or([eb('uses_left', 'is', null), eb('uses_left', '>', 0)]));
      }
      const rows = await query.orderBy('created_at').orderBy('id').execute();
      return rows.map(standingFromRow);
    },

    async useStanding(id, subject) {
      return db.transaction().execute(async (trx) => {
        const result = await trx
          .updateTable('fleetgate_policy_standing')
          .set((eb) => ({
            uses_left: eb
              .case()
              .when('uses_left', 'is', null)
              .then(null)
              .else(eb('uses_left', '-', 1))
              .end(),
          }))
          .where('id', '=', id)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', now())
          .where((eb) => eb.or([eb('uses_left', 'is', null), eb('uses_left', '>', 0)]))
          .executeTakeFirst();
        if (result.numUpdatedRows !== 1n) return false;
        await audit(trx, id, 'use', 'policy', subject);
        return true;
      });
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
