/**
 * The policy room's tables (approvals, standing approvals, the audit trail) and their migrations.
 * The composition root hands {@link POLICY_MIGRATIONS} to the store; names sort after the store's
 * own migrations so the policy tables come last.
 */
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

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

/** The shape of a store migration (the store's `StoreMigration`). */
export interface PolicyMigration {
  up(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<void>;
  down?(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<void>;
}

/** The policy room's migrations, for `openStore({ migrations })`. */
export const POLICY_MIGRATIONS: Readonly<Record<string, PolicyMigration>> = {
  '0100_policy_approvals': {
    async up(db, kind) {
      await db.schema
        .createTable('fleetgate_policy_approval')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('dispatch_id', 'text', (c) => c.notNull())
        .addColumn('agent', 'text', (c) => c.notNull())
        .addColumn('skill', 'text', (c) => c.notNull())
        .addColumn('correlation_id', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('policy_version', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('radius', 'text')
        .addColumn('requested_by', 'text')
        .addColumn('required_approvals', 'integer', (c) => c.notNull())
        .addColumn('approvals', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('decided_by', 'text')
        .addColumn('decided_at', 'bigint')
        .addColumn('reason', 'text')
        .addColumn('input', 'text', (c) => c.notNull())
        .addColumn('domains', 'text')
        .addColumn('reasons', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('snoozed_until', 'bigint')
        .addColumn('consumed_at', 'bigint')
        // Set once the dispatch behind the request moved on (sent, or refused): the sweeper of
        // every replica looks for decided requests not settled yet.
        .addColumn('settled_at', 'bigint')
        // Checkpoints: the task waiting on input, the agent's question and the answer sent back.
        .addColumn('task_id', 'text')
        .addColumn('context_id', 'text')
        .addColumn('question', 'text')
        .addColumn('answer', 'text')
        .execute();
      // The sweeper looks for open requests past their time; rejection memory by fingerprint.
      await db.schema
        .createIndex('fleetgate_policy_approval_open')
        .on('fleetgate_policy_approval')
        .columns(['status', 'expires_at'])
        .execute();
      await db.schema
        .createIndex('fleetgate_policy_approval_unsettled')
        .on('fleetgate_policy_approval')
        .columns(['settled_at', 'status'])
        .execute();
      await db.schema
        .createIndex('fleetgate_policy_approval_fingerprint')
        .on('fleetgate_policy_approval')
        .columns(['fingerprint', 'decided_at'])
        .execute();
      await db.schema
        .createIndex('fleetgate_policy_approval_dispatch')
        .on('fleetgate_policy_approval')
        .column('dispatch_id')
        .execute();
      await db.schema
        .createTable('fleetgate_policy_standing')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('agent', 'text', (c) => c.notNull())
        .addColumn('skill', 'text', (c) => c.notNull())
        .addColumn('max_radius', 'text', (c) => c.notNull())
        .addColumn('granted_by', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('uses_left', 'integer')
        .addColumn('revoked_at', 'bigint')
        .addColumn('revoked_by', 'text')
        .execute();
      await db.schema
        .createTable('fleetgate_policy_audit')
        .addColumn('seq', sql.raw(kind === 'postgres' ? 'bigserial' : 'integer'), (c) => {
          const pk = c.primaryKey();
          return kind === 'sqlite' ? pk.autoIncrement() : pk;
        })
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('by', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('fleetgate_policy_audit_subject')
        .on('fleetgate_policy_audit')
        .columns(['subject', 'seq'])
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_policy_audit').execute();
      await db.schema.dropTable('fleetgate_policy_standing').execute();
      await db.schema.dropTable('fleetgate_policy_approval').execute();
    },
  },
};
