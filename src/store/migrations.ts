/**
 * Versioned store migrations, kept in code (no files to ship or find at run time) and run in name
 * order by kysely's Migrator at start. Each domain owns its migrations; the caller composes them
 * ({@link composeMigrations}) and passes them in. Never edit or rename one that has shipped.
 *
 * A migration declares the tables and indexes it creates ({@link StoreMigration}, schema.ts spells
 * them for the engine); what it does besides (moving data) is code that receives the kind.
 */
import type { Kysely, MigrationProvider, Migration } from 'kysely';
import { Migrator, sql } from 'kysely';
import { FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { StoreKind, StoreMigration } from './schema.js';
import { runDown, runUp } from './schema.js';

export type { StoreKind, StoreMigration } from './schema.js';
export { serialKeyType } from './schema.js';

/** The table where the Migrator records the migrations that ran. */
const MIGRATION_TABLE = 'fleetgate_migration';

/** Migrations by name; kysely's Migrator runs them in name order. */
export type StoreMigrations = Readonly<Record<string, StoreMigration>>;

/**
 * Joins the migrations of several domains into one list for {@link migrateToLatest}. Each domain
 * owns its tables and migrations; the store knows none of them. Two domains may contribute parts
 * of one name (a migration that created tables of both when it shipped): the parts run in the
 * order the lists are given, and `down` in reverse, as one migration.
 *
 * @example
 * ```ts
 * const migrations = composeMigrations(OUTBOX_MIGRATIONS, FLEET_MIGRATIONS, WORLD_MIGRATIONS);
 * await openStore(url, { migrations });
 * ```
 */
export function composeMigrations(...lists: readonly StoreMigrations[]): StoreMigrations {
  const parts = new Map<string, StoreMigration[]>();
  for (const list of lists) {
    for (const [name, migration] of Object.entries(list)) {
      const same = parts.get(name);
      if (same === undefined) parts.set(name, [migration]);
      else same.push(migration);
    }
  }
  const names = [...parts.keys()].sort();
  return Object.freeze(
    Object.fromEntries(
      names.map((name): [string, StoreMigration] => {
        const list = parts.get(name)!;
        return [
          name,
          {
            async up(db, kind) {
              for (const m of list) await runUp(db, kind, m);
            },
            async down(db, kind) {
              for (const m of [...list].reverse()) await runDown(db, kind, m);
            },
          },
        ];
      }),
    ),
  );
}

/** Options of {@link migrateToLatest}. */
export interface MigrateOptions {
  /** Migrations to run, by name (see {@link composeMigrations}). */
  migrations: StoreMigrations;
  /** PostgreSQL schema holding the migration bookkeeping tables. */
  schema?: string;
}

/** What {@link migrateToLatest} did. */
export interface MigrationOutcome {
  /** The migrations it ran, in order. */
  ran: string[];
  /**
   * Migrations the store records that this release does not know, all newer than its own: a newer
   * release migrated the store (it runs here unchanged, since migrations only add).
   */
  newer: string[];
}

/**
 * The names of the migrations the store records, or undefined when it has no migration table (no
 * gateway ever opened it).
 */
async function recordedMigrations(
  db: Kysely<unknown>,
  kind: StoreKind,
  schema: string | undefined,
): Promise<Set<string> | undefined> {
  const exists =
    kind === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master
          where type = 'table' and name = ${MIGRATION_TABLE}`.execute(db)
      : await sql<{ name: string }>`select to_regclass(${
          schema === undefined ? MIGRATION_TABLE : `"${schema}".${MIGRATION_TABLE}`
        })::text as name`.execute(db);
  if (exists.rows[0]?.name == null) return undefined;
  const table = schema === undefined ? db : db.withSchema(schema);
  const rows = await (table as Kysely<Record<typeof MIGRATION_TABLE, { name: string }>>)
    .selectFrom(MIGRATION_TABLE)
    .select('name')
    .execute();
  return new Set(rows.map((r) => r.name));
}

/**
 * The migrations a store records beyond `known`. A store a newer release migrated, with every
 * known migration run and only newer ones besides, opens as it is: migrations only add, so this
 * release runs on it as its replicas did during the roll (a rollback, an old replica restarted).
 * Anything else is refused naming what differs, never migrated further.
 */
function newerMigrations(recorded: ReadonlySet<string>, known: readonly string[]): string[] {
  const unknown = [...recorded].filter((name) => !known.includes(name)).sort();
  if (unknown.length === 0) return [];
  const pending = known.filter((name) => !recorded.has(name));
  const newest = [...known].sort().at(-1) ?? '';
  if (pending.length === 0 && unknown.every((name) => name > newest)) return unknown;
  throw new FleetgateError(
    'FLEETGATE_STORE_MIGRATION_FAILED',
    `The store was migrated by another release of Fleetgate: it records migration${
      unknown.length === 1 ? '' : 's'
    } ${unknown.join(', ')}, which this release does not know${
      pending.length === 0 ? '' : `, and lacks ${pending.join(', ')}`
    }. Run the release that migrated it (or a newer one), or restore the store's backup from before that upgrade`,
    { details: { unknown, pending } },
  );
}

/** A migration run that failed before running anything because some other schema was dropped. */
function otherSchemaVanished(
  outcome: { error?: unknown; results?: readonly { status: string }[] },
  schema: string | undefined,
): boolean {
  const error = outcome.error as { code?: unknown; message?: unknown } | undefined;
  if (error?.code !== '3F000' || (outcome.results ?? []).length > 0) return false;
  return !(schema !== undefined && String(error.message).includes(`"${schema}"`));
}

/**
 * Runs every pending migration and says which it ran. On PostgreSQL the Migrator holds an
 * advisory lock, so replicas starting together migrate once. A store a newer release migrated
 * (every migration of this release run, and newer ones) is left as it is: `newer` names them.
 *
 * @throws FleetgateError `FLEETGATE_STORE_MIGRATION_FAILED` naming the failed migration, or the
 * migrations of another release that this one cannot run beside.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  kind: StoreKind,
  options: MigrateOptions,
): Promise<MigrationOutcome> {
  const { migrations } = options;
  const recorded = await recordedMigrations(db, kind, options.schema);
  const newer = recorded === undefined ? [] : newerMigrations(recorded, Object.keys(migrations));
  if (newer.length > 0) return { ran: [], newer };
  const provider: MigrationProvider = {
    getMigrations: () =>
      Promise.resolve(
        Object.fromEntries(
          Object.entries(migrations).map(([name, m]): [string, Migration] => [
            name,
            { up: (d) => runUp(d, kind, m), down: (d) => runDown(d, kind, m) },
          ]),
        ),
      ),
  };
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: 'fleetgate_migration_lock',
    ...defined({ migrationTableSchema: options.schema }),
  });
  let outcome = await migrator.migrateToLatest();
  // The migrator looks for its table through the catalog of every schema; a schema another
  // program drops at that moment fails the lookup (SQLSTATE 3F000) without concerning this store.
  // Nothing ran then: a second look settles it.
  for (let attempt = 1; attempt < 4 && otherSchemaVanished(outcome, options.schema); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    outcome = await migrator.migrateToLatest();
  }
  const { error, results = [] } = outcome;
  if (error !== undefined) {
    const failed = results.find((r) => r.status === 'Error')?.migrationName;
    throw new FleetgateError(
      'FLEETGATE_STORE_MIGRATION_FAILED',
      `Store migration ${failed ?? '(unknown)'} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
      { cause: error, details: { migration: failed } },
    );
  }
  return {
    ran: results.filter((r) => r.status === 'Success').map((r) => r.migrationName),
    newer: [],
  };
}

/**
 * Checks, without writing anything, that every migration of `options.migrations` has run: what a
 * command that must not set up a store (it only reads, or writes into tables a gateway made) does
 * instead of {@link migrateToLatest}.
 *
 * @throws FleetgateError `FLEETGATE_STORE_NOT_INITIALISED` when the store has no migration table
 * (no gateway ever opened it) or misses some migrations (a gateway of an older release did).
 */
export async function verifyMigrated(
  db: Kysely<unknown>,
  kind: StoreKind,
  options: MigrateOptions & { url: string },
): Promise<void> {
  const { schema, url } = options;
  const ran = await recordedMigrations(db, kind, schema);
  if (ran === undefined) {
    throw new FleetgateError(
      'FLEETGATE_STORE_NOT_INITIALISED',
      `The store ${url} has not been initialised by a gateway (it has no Fleetgate tables${
        schema === undefined ? '' : ` in schema ${schema}`
      }); start a gateway on it first (\`fleetgate start\`)`,
      { details: { url, ...defined({ schema }) } },
    );
  }
  const missing = Object.keys(options.migrations).filter((name) => !ran.has(name));
  if (missing.length > 0) {
    throw new FleetgateError(
      'FLEETGATE_STORE_NOT_INITIALISED',
      `The store ${url} was set up by an older gateway: migration${
        missing.length === 1 ? '' : 's'
      } ${missing.join(', ')} not run yet; start a gateway of this release on it first (\`fleetgate start\`)`,
      { details: { url, missing } },
    );
  }
}
