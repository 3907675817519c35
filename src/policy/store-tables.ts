/**
 * The policy room's tables (approvals, standing approvals, the audit trail) and their migrations.
 * The composition root hands {@link POLICY_MIGRATIONS} to the store; names sort after the store's
 * own migrations so the policy tables come last.
 */
import type { StoreMigration } from '../store/index.js';

/** One approval request (`fleetgate_policy_approval`). */
export interface ApprovalTable {
  id: string;
  kind: string;
  dispatch_id: string;
  agent: string;
  skill: string;
  correlation_id: string;
  fingerprint: string;
  policy_version: string;
  mode: string;
  radius: string | null;
  requested_by: string | null;
  required_approvals: number;
  approvals: string;
  status: string;
  decided_by: string | null;
  decided_at: number | null;
  reason: string | null;
  input: string;
  domains: string | null;
  reasons: string;
  created_at: number;
  expires_at: number;
  snoozed_until: number | null;
  consumed_at: number | null;
  settled_at: number | null;
  task_id: string | null;
  context_id: string | null;
  question: string | null;
  answer: string | null;
}

/** One standing approval (`fleetgate_policy_standing`). */
export interface StandingTable {
  id: string;
  agent: string;
  skill: string;
  max_radius: string;
  granted_by: string;
  reason: string | null;
  created_at: number;
  expires_at: number;
  uses_left: number | null;
  revoked_at: number | null;
  revoked_by: string | null;
}

/** One audit entry (`fleetgate_policy_audit`): who did what to an approval or a grant. */
export interface PolicyAuditTable {
  seq: number;
  subject: string;
  action: string;
  by: string;
  reason: string | null;
  at: number;
}

/** The policy room's tables. */
export interface PolicyDatabase {
  fleetgate_policy_approval: ApprovalTable;
  fleetgate_policy_standing: StandingTable;
  fleetgate_policy_audit: Omit<PolicyAuditTable, 'seq'> & { seq?: number };
}

/** The policy room's migrations, for `openStore({ migrations })`. */
export const POLICY_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0100_policy_approvals': {
    tables: {
      fleetgate_policy_approval: {
        columns: {
          id: 'text primary key',
          kind: 'text not null',
          dispatch_id: 'text not null',
          agent: 'text not null',
          skill: 'text not null',
          correlation_id: 'text not null',
          fingerprint: 'text not null',
          policy_version: 'text not null',
          mode: 'text not null',
          radius: 'text',
          requested_by: 'text',
          required_approvals: 'integer not null',
          approvals: 'text not null',
          status: 'text not null',
          decided_by: 'text',
          decided_at: 'bigint',
          reason: 'text',
          input: 'text not null',
          domains: 'text',
          reasons: 'text not null',
          created_at: 'bigint not null',
          expires_at: 'bigint not null',
          snoozed_until: 'bigint',
          consumed_at: 'bigint',
          // Set once the dispatch behind the request moved on (sent, or refused): the sweeper of
          // every replica looks for decided requests not settled yet.
          settled_at: 'bigint',
          // Checkpoints: the task waiting on input, the agent's question and the answer sent back.
          task_id: 'text',
          context_id: 'text',
          question: 'text',
          answer: 'text',
        },
      },
      fleetgate_policy_standing: {
        columns: {
          id: 'text primary key',
          agent: 'text not null',
          skill: 'text not null',
          max_radius: 'text not null',
          granted_by: 'text not null',
          reason: 'text',
          created_at: 'bigint not null',
          expires_at: 'bigint not null',
          uses_left: 'integer',
          revoked_at: 'bigint',
          revoked_by: 'text',
        },
      },
      fleetgate_policy_audit: {
        columns: {
          seq: 'serial primary key',
          subject: 'text not null',
          action: 'text not null',
          by: 'text not null',
          reason: 'text',
          at: 'bigint not null',
        },
      },
    },
    // The sweeper looks for open requests past their time; rejection memory by fingerprint.
    indexes: {
      fleetgate_policy_approval_open: 'fleetgate_policy_approval (status, expires_at)',
      fleetgate_policy_approval_unsettled: 'fleetgate_policy_approval (settled_at, status)',
      fleetgate_policy_approval_fingerprint: 'fleetgate_policy_approval (fingerprint, decided_at)',
      fleetgate_policy_approval_dispatch: 'fleetgate_policy_approval (dispatch_id)',
      fleetgate_policy_audit_subject: 'fleetgate_policy_audit (subject, seq)',
    },
  },
};
