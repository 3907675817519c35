/**
 * The deployment a store belongs to: an id made once, the first time a gateway on the store asks
 * for it, and kept in the store. Replicas on one store read the same id; a store of its own
 * (another database, another `?schema=`, another SQLite file) makes its own. The JetStream bus
 * records the id of the deployment that owns its stream, so a gateway whose store is another
 * deployment's is refused before it touches the stream (`createJetStreamEventBus`'s `deployment`).
 *
 * A backup restored keeps its id (it is the same deployment); a copy of a store started as a
 * second deployment would too, so a new deployment starts on a store of its own.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { StoreMigration } from '../store/index.js';

/** A fact about the store as a whole, by name (migration `0850_service_meta`). */
export interface ServiceMetaTable {
  name: string;
  value: string;
}

/** The table of facts about the store. */
export interface ServiceMetaDatabase {
  fleetgate_service_meta: ServiceMetaTable;
}

/** The row of {@link ServiceMetaTable} that holds the deployment id. */
const DEPLOYMENT = 'deployment';

/** The service room's table of facts about the store. */
export const SERVICE_META_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  // After every migration that shipped (the Migrator runs names in order, never out of it).
  '0850_service_meta': {
    tables: {
      fleetgate_service_meta: {
        columns: {
          name: 'text primary key',
          value: 'text not null',
        },
      },
    },
  },
};

/**
 * The deployment id of the store: read, or made (a random UUID) when the store has none yet.
 * Replicas starting together on a new store agree: the first row written stands.
 */
export async function deploymentIdOf<DB extends ServiceMetaDatabase>(
  database: Kysely<DB>,
): Promise<string> {
  // kysely's types are invariant in DB; the constraint guarantees the table exists.
  const db = database as unknown as Kysely<ServiceMetaDatabase>;
  await sql`
    insert into fleetgate_service_meta (name, value) values (${DEPLOYMENT}, ${randomUUID()})
    on conflict (name) do nothing`.execute(db);
  const row = await db
    .selectFrom('fleetgate_service_meta')
    .select(['value'])
    .where('name', '=', DEPLOYMENT)
    .executeTakeFirstOrThrow();
  return row.value;
}
