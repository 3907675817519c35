/**
 * What the parts of the approvals inbox share: the store, the clock, the read of one request, the
 * audit writer and the event writer (built once by `createApprovalInbox`).
 */
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { ApprovalRecord } from './approval-records.js';
import type { AuditWriter } from './standing.js';
import type { PolicyDatabase } from './store-tables.js';
import type { InboxEvents } from './types.js';

/** The store and the helpers every part of the inbox works through. */
export interface InboxContext {
  readonly db: Kysely<PolicyDatabase>;
  readonly now: () => number;
  /** One request by id. */
  readonly get: (id: string) => Promise<ApprovalRecord | undefined>;
  /** Writes one audit entry (in the caller's transaction when `runner` is one). */
  readonly audit: AuditWriter;
  /** Where a change's events are written, in its transaction; none: no event is written. */
  readonly events: InboxEvents | undefined;
}

/** {@link hasVetoWindow} as a condition on approval rows. */
export function vetoWindow(eb: ExpressionBuilder<PolicyDatabase, 'fleetgate_policy_approval'>) {
  return eb.or([
    eb('kind', '=', 'veto'),
    eb.and([eb('kind', '=', 'follow-up'), eb('mode', '=', 'veto')]),
  ]);
}
