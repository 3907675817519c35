/**
 * Versioned store migrations, kept in code (no files to ship or find at run time) and run in name
 * order by kysely's Migrator at start. Later issues append their migrations to
 * {@link FLEETGATE_MIGRATIONS}; never edit or rename one that has shipped.
 *
 * Column types stay portable: `text`, `integer`, `bigint` work on SQLite and PostgreSQL alike;
 * where a dialect needs its own spelling (auto-increment keys) the migration receives the kind.
 */
import type { Kysely, MigrationProvider, Migration } from 'kysely';
import { Migrator, sql } from 'kysely';
import { FleetgateError } from '../errors/index.js';
import { POLICY_MIGRATIONS } from '../policy/index.js';

/** Which database engine a store runs on. */
export type StoreKind = 'sqlite' | 'postgres';

/** One migration; `kind` lets it choose dialect-specific column types. */
export interface StoreMigration {
  up(db: Kysely<unknown>, kind: StoreKind): Promise<void>;
  down?(db: Kysely<unknown>, kind: StoreKind): Promise<void>;
}

/**
 * The column type of an auto-incrementing 64-bit primary key: `bigserial` on PostgreSQL,
 * `integer` on SQLite (an INTEGER PRIMARY KEY is the 64-bit rowid). For use by later migrations.
 *
 * @example
 * ```ts
 * .addColumn('seq', sql.raw(serialKeyType(kind)), (c) => c.primaryKey())
 * ```
 */
export function serialKeyType(kind: StoreKind): 'bigserial' | 'integer' {
  return kind === 'postgres' ? 'bigserial' : 'integer';
}

/** Every Fleetgate migration, in order of their names. */
export const FLEETGATE_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0001_outbox': {
    async up(db, kind) {
      await db.schema
        .createTable('fleetgate_outbox')
        .addColumn('seq', sql.raw(serialKeyType(kind)), (col) => {
          const pk = col.primaryKey();
          // SQLite: INTEGER PRIMARY KEY AUTOINCREMENT never reuses a key after deletes.
          return kind === 'sqlite' ? pk.autoIncrement() : pk;
        })
        .addColumn('id', 'text', (col) => col.notNull().unique())
        .addColumn('topic', 'text', (col) => col.notNull())
        .addColumn('payload', 'text', (col) => col.notNull())
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('time', 'text', (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('sent_at', 'bigint')
        .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('last_error', 'text')
        .execute();
      // The relay scans unsent rows in order; a partial index keeps that cheap as sent rows pile up.
      await db.schema
        .createIndex('fleetgate_outbox_unsent')
        .on('fleetgate_outbox')
        .column('seq')
        .where(sql.ref('sent_at'), 'is', null)
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_outbox').execute();
    },
  },
  '0002_fleet': {
    async up(db) {
      // The narrowing ratchet of blast-v1 radii and hitl-mode-v1 modes (src/fleet/ratchet.ts).
      await db.schema
        .createTable('fleetgate_declaration_ratchet')
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('kind', 'text', (col) => col.notNull())
        .addColumn('accepted', 'text', (col) => col.notNull())
        .addColumn('pending', 'text')
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addColumn('acknowledged_at', 'bigint')
        .addColumn('acknowledged_by', 'text')
        .addPrimaryKeyConstraint('fleetgate_declaration_ratchet_pk', ['agent', 'skill', 'kind'])
        .execute();
      // The last good card of every agent (src/fleet/card-cache.ts).
      await db.schema
        .createTable('fleetgate_agent_card')
        .addColumn('agent', 'text', (col) => col.primaryKey())
        .addColumn('url', 'text', (col) => col.notNull())
        .addColumn('card', 'text', (col) => col.notNull())
        .addColumn('digest', 'text', (col) => col.notNull())
        .addColumn('etag', 'text')
        .addColumn('last_modified', 'text')
        .addColumn('fetched_at', 'bigint', (col) => col.notNull())
        .addColumn('changed_at', 'bigint', (col) => col.notNull())
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_agent_card').execute();
      await db.schema.dropTable('fleetgate_declaration_ratchet').execute();
    },
  },
  '0003_world': {
    async up(db, kind) {
      // World state (src/world/store-tables.ts): domains, applied event ids, the audit log.
      await db.schema
        .createTable('fleetgate_world_domains')
        .addColumn('name', 'text', (col) => col.primaryKey())
        .addColumn('version', 'bigint', (col) => col.notNull())
        .addColumn('state', 'text', (col) => col.notNull())
        .addColumn('base_state', 'text', (col) => col.notNull())
        .addColumn('base_version', 'bigint', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createTable('fleetgate_world_events')
        .addColumn('event_id', 'text', (col) => col.primaryKey())
        .addColumn('applied_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('fleetgate_world_events_applied_at')
        .on('fleetgate_world_events')
        .column('applied_at')
        .execute();
      await db.schema
        .createTable('fleetgate_world_audit')
        .addColumn('seq', sql.raw(serialKeyType(kind)), (col) => {
          const pk = col.primaryKey();
          return kind === 'sqlite' ? pk.autoIncrement() : pk;
        })
        .addColumn('domain', 'text', (col) => col.notNull())
        .addColumn('path', 'text', (col) => col.notNull())
        .addColumn('op', 'text', (col) => col.notNull())
        .addColumn('value', 'text')
        .addColumn('previous', 'text')
        .addColumn('next', 'text')
        .addColumn('status', 'text', (col) => col.notNull())
        .addColumn('reason', 'text')
        .addColumn('version', 'bigint')
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('task_id', 'text', (col) => col.notNull())
        .addColumn('event_id', 'text', (col) => col.notNull())
        .addColumn('entry_index', 'integer', (col) => col.notNull())
        .addColumn('time', 'text', (col) => col.notNull())
        .addColumn('recorded_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('fleetgate_world_audit_domain_seq')
        .on('fleetgate_world_audit')
        .columns(['domain', 'seq'])
        .execute();
      await db.schema
        .createIndex('fleetgate_world_audit_domain_path')
        .on('fleetgate_world_audit')
        .columns(['domain', 'path', 'seq'])
        .execute();
      await db.schema
        .createIndex('fleetgate_world_audit_recorded_at')
        .on('fleetgate_world_audit')
        .column('recorded_at')
        .execute();
      // Operator floors learned from blast violations (src/alerts/store-tables.ts).
      await db.schema
        .createTable('fleetgate_learned_floors')
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('radius', 'text', (col) => col.notNull())
        .addColumn('reason', 'text', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('fleetgate_learned_floors_pk', ['agent', 'skill'])
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_learned_floors').execute();
      await db.schema.dropTable('fleetgate_world_audit').execute();
      await db.schema.dropTable('fleetgate_world_events').execute();
      await db.schema.dropTable('fleetgate_world_domains').execute();
    },
  },
  '0004_tasks': {
    async up(db) {
      // Durable task records and the terminal claim (src/tasks/task-records.ts).
      await db.schema
        .createTable('fleetgate_task')
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('task_id', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('state', 'text', (col) => col.notNull())
        .addColumn('push_token_hash', 'text')
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addColumn('terminal_at', 'bigint')
        .addColumn('terminal_via', 'text')
        .addPrimaryKeyConstraint('fleetgate_task_pk', ['agent', 'task_id'])
        .execute();
      await db.schema
        .createIndex('fleetgate_task_by_id')
        .on('fleetgate_task')
        .column('task_id')
        .execute();
      await db.schema
        .createIndex('fleetgate_task_in_flight')
        .on('fleetgate_task')
        .column('created_at')
        .where(sql.ref('terminal_at'), 'is', null)
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_task').execute();
    },
  },
  '0005_dispatch': {
    async up(db) {
      // Durable dispatch records (src/dispatch/dispatch-records.ts).
      await db.schema
        .createTable('fleetgate_dispatch')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('status', 'text', (col) => col.notNull())
        .addColumn('task_id', 'text')
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addColumn('result', 'text')
        .execute();
      await db.schema
        .createIndex('fleetgate_dispatch_by_task')
        .on('fleetgate_dispatch')
        .columns(['agent', 'task_id'])
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_dispatch').execute();
    },
  },
  // Approvals, standing approvals and their audit (src/policy/store-tables.ts), owned by the
  // policy room; listed here until each room hands its migrations to openStore itself.
  ...POLICY_MIGRATIONS,
};

/** Options of {@link migrateToLatest}. */
export interface MigrateOptions {
  /** Migrations to run (default {@link FLEETGATE_MIGRATIONS}). */
  migrations?: Readonly<Record<string, StoreMigration>>;
  /** PostgreSQL schema holding the migration bookkeeping tables. */
  schema?: string;
}

/**
 * Runs every pending migration and returns the names it ran. On PostgreSQL the Migrator holds an
 * advisory lock, so replicas starting together migrate once.
 *
 * @throws FleetgateError `FLEETGATE_STORE_MIGRATION_FAILED` naming the failed migration.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  kind: StoreKind,
  options: MigrateOptions = {},
): Promise<string[]> {
  const migrations = options.migrations ?? FLEETGATE_MIGRATIONS;
  const provider: MigrationProvider = {
    getMigrations: () =>
      Promise.resolve(
        Object.fromEntries(
          Object.entries(migrations).map(([name, m]): [string, Migration] => [
            name,
            {
              up: (d) => m.up(d, kind),
              ...(m.down === undefined ? {} : { down: (d: Kysely<unknown>) => m.down!(d, kind) }),
            },
          ]),
        ),
      ),
  };
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'fleetgate_migration',
    migrationLockTableName: 'fleetgate_migration_lock',
    ...(options.schema === undefined ? {} : { migrationTableSchema: options.schema }),
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results.find((r) => r.status === 'Error')?.migrationName;
    throw new FleetgateError(
      'FLEETGATE_STORE_MIGRATION_FAILED',
      `Store migration ${failed ?? '(unknown)'} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
      { cause: error, details: { migration: failed } },
    );
  }
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
