/**
 * Standing approvals: "calls to this agent/skill at radius ≤ X for T or N uses", kept in the store,
 * revocable, every grant, use and revocation audited.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { StandingRecord } from './approval-records.js';
import { notFound, recordById, standingFromRow } from './approval-records.js';
import type { PolicyDatabase, StandingTable } from './store-tables.js';
import type { StandingGrantRequest } from './types.js';

/** Writes one audit entry (in the caller's transaction when `runner` is one). */
export type AuditWriter = (
  runner: Kysely<PolicyDatabase>,
  subject: string,
  action: string,
  by: string,
  reason: string | null | undefined,
) => Promise<void>;

/** The standing approvals of the inbox. */
export interface StandingApprovals {
  grantStanding(grant: StandingGrantRequest): Promise<StandingRecord>;
  revokeStanding(id: string, by: string, reason?: string): Promise<StandingRecord>;
  /** Standing approvals; `live` leaves out revoked, expired and used-up ones. */
  listStanding(options?: {
    agent?: string;
    skill?: string;
    live?: boolean;
  }): Promise<StandingRecord[]>;
  /** Takes one use of a grant; false when it was used up, revoked or expired meanwhile. */
  useStanding(id: string, subject: string): Promise<boolean>;
}

/** Standing approvals over the store's `fleetgate_policy_standing` table. */
export function createStandingApprovals(
  db: Kysely<PolicyDatabase>,
  now: () => number,
  audit: AuditWriter,
): StandingApprovals {
  const getStanding = (id: string): Promise<StandingRecord | undefined> =>
    recordById(db, 'fleetgate_policy_standing', id);

  return {
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
  };
}
