/**
 * Learned operator floors in the store (`fleetgate_learned_floors`, migration `0003_world`): the
 * {@link FloorWriter} the reconciliation raises floors through when `learnFloors` is on, and the
 * reader the fleet directory loads them with (as operator floors, at start and after each raise).
 * A floor only ever widens here; lowering one is an operator decision made in configuration.
 */
import type { Kysely } from 'kysely';
import type { BlastRadius } from '../protocol/index.js';
import { BLAST_ORDER, isBlastRadius } from '../protocol/index.js';
import type { FloorWriter } from './ports.js';
import type { AlertsDatabase } from './store-tables.js';

/** A learned floor as stored. */
export interface LearnedFloor {
  agent: string;
  skill: string;
  radius: BlastRadius;
  /** Why it was raised (the violation that taught it). */
  reason: string;
  /** Epoch milliseconds of the last raise. */
  updatedAt: number;
}

/** Options of {@link createStoreFloorWriter}. */
export interface StoreFloorWriterOptions<DB extends AlertsDatabase> {
  /** The store's kysely instance (`openStore(url).db`). */
  db: Kysely<DB>;
  kind: 'sqlite' | 'postgres';
  /** Called after a floor was raised, e.g. to refresh the fleet directory's floors. */
  onRaised?: (floor: LearnedFloor) => void;
  /** Clock in epoch milliseconds. */
  now?: () => number;
}

function narrow<DB extends AlertsDatabase>(db: Kysely<DB>): Kysely<AlertsDatabase> {
  // Kysely's type parameter is invariant; a database with more tables still has this one.
  return db as unknown as Kysely<AlertsDatabase>;
}

/**
 * A {@link FloorWriter} over the learned-floors table. Raising to a radius at or below the stored
 * floor changes nothing; concurrent raises (two replicas) keep the widest.
 *
 * @example
 * ```ts
 * const floors = createStoreFloorWriter({ db: store.db, kind: store.kind });
 * createReconciler({ bus, declarations, learnFloors: true, floorWriter: floors, domains });
 * ```
 */
export function createStoreFloorWriter<DB extends AlertsDatabase>(
  options: StoreFloorWriterOptions<DB>,
): FloorWriter {
  const db = narrow(options.db);
  const now = options.now ?? Date.now;
  return {
    async raiseFloor(agent, skill, radius, reason) {
      const raised = await db.transaction().execute(async (trx) => {
        const at = now();
        const inserted = await trx
          .insertInto('fleetgate_learned_floors')
          .values({ agent, skill, radius, reason, updated_at: at })
          .onConflict((oc) => oc.columns(['agent', 'skill']).doNothing())
          .returning('radius')
          .execute();
        if (inserted.length > 0) return { agent, skill, radius, reason, updatedAt: at };
        let select = trx
          .selectFrom('fleetgate_learned_floors')
          .select('radius')
          .where('agent', '=', agent)
          .where('skill', '=', skill);
        if (options.kind === 'postgres') select = select.forUpdate();
        const row = await select.executeTakeFirst();
        const current = row !== undefined && isBlastRadius(row.radius) ? row.radius : undefined;
        if (current !== undefined && BLAST_ORDER[current] >= BLAST_ORDER[radius]) return undefined;
        await trx
          .updateTable('fleetgate_learned_floors')
          .set({ radius, reason, updated_at: at })
          .where('agent', '=', agent)
          .where('skill', '=', skill)
          .execute();
        return { agent, skill, radius, reason, updatedAt: at };
      });
      if (raised !== undefined) options.onRaised?.(raised);
    },
  };
}

/**
 * Every learned floor in the store, for the fleet directory to apply as operator floors. Rows whose
 * radius is not a known radius are skipped.
 */
export async function listLearnedFloors<DB extends AlertsDatabase>(
  database: Kysely<DB>,
): Promise<LearnedFloor[]> {
  const rows = await narrow(database)
    .selectFrom('fleetgate_learned_floors')
    .selectAll()
    .orderBy('agent')
    .orderBy('skill')
    .execute();
  const out: LearnedFloor[] = [];
  for (const row of rows) {
    if (!isBlastRadius(row.radius)) continue;
    out.push({
      agent: row.agent,
      skill: row.skill,
      radius: row.radius,
      reason: row.reason,
      updatedAt: Number(row.updated_at),
    });
  }
  return out;
}
