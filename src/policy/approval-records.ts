/**
 * The records of the approvals inbox (requests, standing approvals, audit entries) and their
 * mapping from the store's rows.
 */
import { FleetgateError } from '../protocol/index.js';
import type {
  ApprovalEvent,
  ApprovalKind,
  ApprovalStatus,
  ApprovalVote,
  BlastRadius,
  HeldInput,
  HitlMode,
  Reason,
} from '../protocol/index.js';
import type { StandingGrant } from './types.js';

export type { ApprovalKind, ApprovalStatus, ApprovalVote, HeldInput } from '../protocol/index.js';
import type { Kysely } from 'kysely';
import type {
  ApprovalTable,
  PolicyAuditTable,
  PolicyDatabase,
  StandingTable,
} from './store-tables.js';

/** One approval request: the `hitl.approval.*` event's fields and the held input. */
export type ApprovalRecord = Omit<ApprovalEvent, 'outcome'> & {
  /** The input of the held call, kept so any replica can send it once approved. */
  input: HeldInput;
};

/** What a new request needs (the inbox fills in the rest). */
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

/** What `list` of the approvals inbox selects by. */
export interface ApprovalListOptions {
  /** Default `pending`. */
  status?: ApprovalStatus;
  /** Pending requests snoozed until later are left out unless this is true. */
  includeSnoozed?: boolean;
  /** Only the requests of this dispatch. */
  dispatchId?: string;
}

/** One audit entry: who did what to an approval or a grant, as its row holds it. */
export type PolicyAuditEntry = PolicyAuditTable;

/** Parses a JSON column. */
/**
 * True for a request that goes unless vetoed: a `veto` call, or a follow-up of a `veto` skill.
 * Its end is not an expiry but the call going (its window ended unvetoed).
 */
export function hasVetoWindow(record: Pick<ApprovalRecord, 'kind' | 'mode'>): boolean {
  return record.kind === 'veto' || (record.kind === 'follow-up' && record.mode === 'veto');
}

export function parse<T>(text: string | null, fallback: T): T {
  return text === null ? fallback : (JSON.parse(text) as T);
}

/** An approval row as a record. */
export function fromRow(row: ApprovalTable): ApprovalRecord {
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

/** A standing-approval row as a record. */
export function standingFromRow(row: StandingTable): StandingRecord {
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

/** No approval or grant with this id. */
export function notFound(id: string): FleetgateError {
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

/** How each policy table keyed by `id` is read into its record. */
const RECORD_OF = {
  fleetgate_policy_approval: fromRow,
  fleetgate_policy_standing: standingFromRow,
};

/** The record with `id` in `table` (an approval request or a standing approval), if any. */
export async function recordById<T extends keyof typeof RECORD_OF>(
  db: Kysely<PolicyDatabase>,
  table: T,
  id: string,
): Promise<ReturnType<(typeof RECORD_OF)[T]> | undefined> {
  // Both tables are keyed by `id`; kysely cannot check a query over a table chosen by a type
  // parameter, so it is typed as one of them.
  const row: unknown = await db
    .selectFrom(table as 'fleetgate_policy_approval')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst();
  const read = RECORD_OF[table] as (row: unknown) => ReturnType<(typeof RECORD_OF)[T]>;
  return row === undefined ? undefined : read(row);
}
