/**
 * Deciding a pending request (approve, answer, reject, snooze): every decision is a compare-and-set
 * on the row's status and the approvals seen, so two replicas deciding at once cannot both win.
 * Each decision is a {@link Change} that {@link decideOn} applies.
 */
import type { Transaction } from 'kysely';
import type { ApprovalVotedEvent } from '../protocol/index.js';
import { deterministicEventId, FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { ApprovalRecord, ApprovalVote } from './approval-records.js';
import { alreadyDecided, hasVetoWindow, notFound, parse } from './approval-records.js';
import type { InboxContext } from './inbox-context.js';
import { expireOne } from './inbox-lifecycle.js';
import type { ApprovalTable } from './store-tables.js';

/** How often a decision is tried before giving up to approvers that keep changing the row. */
const CAS_ATTEMPTS = 5;

/** What a decision sets on a pending row, or the error that refuses it. */
export type Change = (
  record: ApprovalRecord,
  at: number,
) => Partial<ApprovalTable> | FleetgateError;

/** What a person does to a pending request (the audit entry's `action`). */
export type DecisionAction = 'approve' | 'answer' | 'reject' | 'snooze';

/** The decisions that are votes, published as `hitl.approval.voted` once accepted. */
const VOTES: Partial<Record<DecisionAction, ApprovalVotedEvent['vote']>> = {
  approve: 'approve',
  reject: 'reject',
};

/**
 * Moves a pending request on with a compare-and-set on its status and votes; retried when
 * another approver got there first. An accepted vote's event is written in the same transaction
 * as the vote; a refused one (an error above, or a lost compare-and-set) writes nothing.
 */
export async function decideOn(
  ctx: InboxContext,
  id: string,
  change: Change,
  action: DecisionAction,
  by: string,
  reason: string | undefined,
): Promise<ApprovalRecord> {
  const { db, now, get, audit, events } = ctx;
  const vote = VOTES[action];
  const voting = events === undefined || vote === undefined ? undefined : { events, vote };
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt += 1) {
    const record = await get(id);
    if (record === undefined) throw notFound(id);
    const at = now();
    if (record.status === 'pending' && !hasVetoWindow(record) && record.expiresAt <= at) {
      await expireOne(ctx, record, at);
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
      if (voting !== undefined) {
        await voting.events.write(
          trx as unknown as Transaction<unknown>,
          'hitl.approval.voted',
          votedEvent(record, set, by, voting.vote),
          {
            // One vote per approver and verb: a second is refused above, so the id is unique.
            id: deterministicEventId('hitl.approval.voted', id, by, voting.vote),
            correlationId: record.correlationId,
            now: at,
          },
        );
      }
      return true;
    });
    if (done) {
      voting?.events.onCommitted?.();
      return (await get(id))!;
    }
  }
  throw new FleetgateError(
    'FLEETGATE_APPROVAL_ALREADY_DECIDED',
    `Approval ${id} kept changing while being decided; try again.`,
    { details: { id } },
  );
}

/**
 * The `hitl.approval.voted` payload of a vote accepted on `record` that sets `set`: the approver's
 * name and the counts after it, nothing of the held input, no credential.
 */
function votedEvent(
  record: ApprovalRecord,
  set: Partial<ApprovalTable>,
  by: string,
  vote: ApprovalVotedEvent['vote'],
): ApprovalVotedEvent {
  const approvals =
    set.approvals === undefined ? record.approvals : parse<ApprovalVote[]>(set.approvals, []);
  return {
    approvalId: record.id,
    by,
    vote,
    needed: record.requiredApprovals,
    have: approvals.length,
  };
}

/** One approver says yes (`ApprovalInbox.approve`): `approved` once enough distinct ones did. */
export function approveChange(id: string, by: string, reason: string | undefined): Change {
  return (record, at) => {
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
    const approvals = [...record.approvals, { by, at, ...defined({ reason }) }];
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
  };
}

/** An answer to a checkpoint (`ApprovalInbox.answer`); an approver must, for a `compound` skill. */
export function answerChange(
  id: string,
  by: string,
  text: string,
  reason: string | undefined,
): Change {
  return (record, at) => {
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
      approvals: JSON.stringify([{ by, at, ...defined({ reason }) }]),
      status: 'approved',
      decided_by: by,
      decided_at: at,
      reason: reason ?? null,
      answer: text,
    };
  };
}

/** A rejection (`ApprovalInbox.reject`). */
export function rejectChange(by: string, reason: string | undefined): Change {
  return (_record, at) => ({
    status: 'rejected',
    decided_by: by,
    decided_at: at,
    reason: reason ?? 'rejected',
  });
}
