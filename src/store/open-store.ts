/**
 * Opens the store selected by URL: SQLite through better-sqlite3 (a file in WAL mode, the
 * embedded default) or PostgreSQL through pg, both behind kysely, and runs pending migrations.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { FleetgateError } from '../protocol/index.js';
import type { StoreKind, StoreMigration } from './migrations.js';
import { migrateToLatest } from './migrations.js';
import type { FleetgateDatabase } from './schema.js';

/** Options of {@link openStore}. */
export interface StoreOptions {
  /** Run pending migrations on open (default true). */
  migrate?: boolean;
  /** Migrations to run (default every Fleetgate migration). */
  migrations?: Readonly<Record<string, StoreMigration>>;
  /**
   * PostgreSQL only: the schema every table lives in, created when missing (default: the
   * server's `search_path`, normally `public`). Lets several gateways or test runs share a database.
   */
  schema?: string;
  /** PostgreSQL only: most pooled connections (default 10). */
  poolSize?: number;
}

/** An open store. */
export interface Store {
  /** The kysely instance; use `db.transaction()` for atomic writes. */
  readonly db: Kysely<FleetgateDatabase>;
  readonly kind: StoreKind;
  /** The URL without password. */
  readonly url: string;
  /** Names of the migrations this open ran. */
  readonly migrated: readonly string[];
  /** Closes the database or the pool. Idempotent. */
  close(): Promise<void>;
}

/** What a store URL selects. */
export type StoreLocation =
  { kind: 'sqlite'; file: string } | { kind: 'postgres'; connectionString: string };

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/u;
// PostgreSQL returns BIGINT (int8) as a string by default; our bigint columns hold epoch ms and
// sequence numbers, far below 2^53, so numbers are the honest type.
const INT8_OID = 20;

/**
 * Parses a store URL: `sqlite:PATH` (relative to the working directory), `sqlite::memory:`, or
 * `postgres://…` / `postgresql://…`.
 *
 * @throws FleetgateError `FLEETGATE_STORE_URL_INVALID`
 */
export function parseStoreUrl(url: string): StoreLocation {
  if (url.startsWith('sqlite:')) {
    const rest = url.slice('sqlite:'.length).replace(/^\/\/(?=\.|\/)/u, '');
    if (rest === ':memory:') return { kind: 'sqlite', file: ':memory:' };
    if (rest.length === 0) throw invalidUrl(url, 'sqlite: needs a file path');
    return { kind: 'sqlite', file: resolve(rest) };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch (cause) {
      throw invalidUrl(url, 'not a valid URL', cause);
    }
    return { kind: 'postgres', connectionString: url };
  }
  throw invalidUrl(url, 'use sqlite:PATH or postgres://…');
}

function invalidUrl(url: string, reason: string, cause?: unknown): FleetgateError {
  return new FleetgateError('FLEETGATE_STORE_URL_INVALID', `Store URL ${redact(url)}: ${reason}`, {
    cause,
    details: { url: redact(url) },
  });
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/u, '//$1:***@');
}

/**
 * Opens (and by default migrates) the store at `url`.
 *
 * @example
 * ```ts
 * const store = await openStore('sqlite:./data/fleetgate.db');
 * const store = await openStore('postgres://fleetgate@db:5432/fleetgate', { schema: 'gw' });
 * ```
 */
export async function openStore(url: string, options: StoreOptions = {}): Promise<Store> {
  const location = parseStoreUrl(url);
  const schema = options.schema;
  if (schema !== undefined && (location.kind !== 'postgres' || !SCHEMA_NAME.test(schema))) {
    throw invalidUrl(url, `schema ${JSON.stringify(schema)} needs postgres and [a-z0-9_]`);
  }
  const db =
    location.kind === 'sqlite'
      ? new Kysely<FleetgateDatabase>({
          dialect: new SqliteDialect({ database: openSqlite(location.file) }),
        })
      : new Kysely<FleetgateDatabase>({
          dialect: new PostgresDialect({
            pool: new pg.Pool({
              connectionString: location.connectionString,
              max: options.poolSize ?? 10,
              ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
              types: { getTypeParser: int8AsNumber },
            }),
          }),
        });
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await db.destroy();
  };
  try {
    if (schema !== undefined) {
      await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
    }
    const migrated =
      options.migrate === false
        ? []
        : await migrateToLatest(db as unknown as Kysely<unknown>, location.kind, {
            ...(options.migrations === undefined ? {} : { migrations: options.migrations }),
            ...(schema === undefined ? {} : { schema }),
          });
    return { db, kind: location.kind, url: redact(url), migrated, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/** pg's type parser lookup, with BIGINT (int8) parsed as a number. */
const int8AsNumber = ((oid: number, format?: 'text' | 'binary') => {
  if (oid === INT8_OID) return (value: string) => Number(value);
  const parser: unknown =
    format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid);
  return parser;
}) as typeof pg.types.getTypeParser;

function openSqlite(file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const database = new Database(file);
  // WAL lets readers run beside the single writer; NORMAL sync is durable across process crashes
  // in WAL mode (only an OS crash may lose the last transactions).
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  return database;
}
