/**
 * Opens the store selected by URL: SQLite through better-sqlite3 (a file in WAL mode, the
 * embedded default) or PostgreSQL through pg, both behind kysely, and runs the migrations the
 * caller hands in. Each driver is loaded only when a URL names it: importing the store costs
 * neither.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { Dialect } from 'kysely';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { PoolConfig } from 'pg';
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { StoreKind, StoreMigrations } from './migrations.js';
import { migrateToLatest, verifyMigrated } from './migrations.js';
import type { GuardedPool, StoreTimeouts } from './pg-pool.js';
import { guardPool, timeoutConfig } from './pg-pool.js';
import type { SqliteAccess } from './sqlite-access.js';
import { createSqliteAccess } from './sqlite-access.js';
import type { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { createSqliteCheckpointer } from './sqlite-checkpointer.js';

/** Options of {@link openStore}. */
export interface StoreOptions {
  /**
   * `true` (the default unless `readOnly`): run pending migrations on open, creating the SQLite
   * file and its directory when missing. `'verify'` (the default with `readOnly`): create and run
   * nothing, fail with `FLEETGATE_STORE_NOT_INITIALISED` when a migration has not run. `false`:
   * neither.
   */
  migrate?: boolean | 'verify';
  /**
   * Open for reading only: the SQLite file is opened read-only (it must exist), every PostgreSQL
   * session is read-only, no schema is created and nothing migrates. For commands that only look.
   */
  readOnly?: boolean;
  /**
   * Migrations to run, by name: every domain's, composed by the caller (the gateway passes
   * `GATEWAY_MIGRATIONS`). The store knows no table of its own.
   */
  migrations: StoreMigrations;
  /**
   * PostgreSQL only: the schema every table lives in, created when missing (default: the
   * server's `search_path`, normally `public`). Lets several gateways or test runs share a database.
   */
  schema?: string;
  /** PostgreSQL only: most pooled connections (default 10). */
  poolSize?: number;
  /**
   * PostgreSQL only: `application_name` of the pooled connections (default `fleetgate`), so an
   * operator can tell them apart in `pg_stat_activity`.
   */
  applicationName?: string;
  /**
   * PostgreSQL only: connect, statement and read timeouts (defaults in
   * `DEFAULT_STORE_TIMEOUTS`: 10 s, 30 s, 40 s). A query past one fails with
   * `FLEETGATE_STORE_TIMEOUT`.
   */
  timeouts?: StoreTimeouts;
  /**
   * PostgreSQL only: called when a pooled connection fails, idle or in use (the server restarted,
   * a proxy or an operator dropped it). The pool discards that connection and the next query
   * opens a new one; the query that was running fails with `FLEETGATE_STORE_UNAVAILABLE`.
   * Without a listener the error would end the process. Default: count it
   * ({@link Store.connectionErrors}) and go on.
   */
  onError?: (error: Error) => void;
}

/**
 * An open store over the tables of `DB` (the caller's composed database type: each domain
 * declares its own tables).
 */
export interface Store<DB = unknown> {
  /** The kysely instance; use `db.transaction()` for atomic writes. */
  readonly db: Kysely<DB>;
  readonly kind: StoreKind;
  /**
   * SQLite only: direct prepared statements on the same connection, with group-committed writes,
   * for the hot paths (see `sqlite-access.ts`). Undefined on PostgreSQL.
   */
  readonly sqlite?: SqliteAccess;
  /** The URL without password. */
  readonly url: string;
  /** Names of the migrations this open ran. */
  readonly migrated: readonly string[];
  /**
   * Migrations a newer release ran on the store that this one does not know (it opened the store
   * as it is: migrations only add); empty as a rule.
   */
  readonly newer: readonly string[];
  /** Errors of idle pooled connections so far (PostgreSQL; always 0 on SQLite). */
  readonly idleErrors: number;
  /** Pooled connections lost so far, idle or in use (PostgreSQL; always 0 on SQLite). */
  readonly connectionErrors: number;
  /** Closes the database or the pool. Idempotent. */
  close(): Promise<void>;
}

/** What a store URL selects. */
export type StoreLocation =
  { kind: 'sqlite'; file: string } | { kind: 'postgres'; connectionString: string };

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/u;
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
      throw invalidUrl(
        url,
        'not a valid URL (percent-encode reserved characters such as / @ : in the password)',
        cause,
      );
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

/**
 * The URL with every secret replaced by `***`: the password of the user part, however it is
 * written (`u:pa/ss@host`, `u:p@ss@host`, unencoded reserved characters included: the user part
 * runs to the last `@`), and `password=` / `sslpassword=` query parameters. Anything that cannot
 * be told apart from a password is hidden with it.
 */
export function redactStoreUrl(url: string): string {
  let out = url;
  const scheme = out.indexOf('://');
  if (scheme >= 0) {
    const start = scheme + 3;
    const at = out.lastIndexOf('@');
    if (at > start) {
      const colon = out.indexOf(':', start);
      if (colon >= 0 && colon < at) out = `${out.slice(0, colon + 1)}***${out.slice(at)}`;
    }
  }
  return out.replace(/([?&;\s](?:ssl)?password=)[^&;\s]*/giu, '$1***');
}

const redact = redactStoreUrl;

/**
 * Opens (and by default migrates) the store at `url`, loading only the driver the URL names.
 *
 * @example
 * ```ts
 * const store = await openStore<AppDatabase>('sqlite:./data/fleetgate.db', { migrations });
 * const store = await openStore('postgres://fleetgate@db:5432/fleetgate', { migrations, schema: 'gw' });
 * ```
 */
export async function openStore<DB = unknown>(
  url: string,
  options: StoreOptions,
): Promise<Store<DB>> {
  const location = parseStoreUrl(url);
  const schema = options.schema;
  if (schema !== undefined && (location.kind !== 'postgres' || !SCHEMA_NAME.test(schema))) {
    throw invalidUrl(url, `schema ${JSON.stringify(schema)} needs postgres and [a-z0-9_]`);
  }
  const readOnly = options.readOnly === true;
  const migrate = options.migrate ?? (readOnly ? 'verify' : true);
  if (readOnly && migrate === true) {
    throw invalidUrl(url, 'a store opened read-only cannot be migrated');
  }
  let idleErrors = 0;
  let connectionErrors = 0;
  const onError = options.onError;
  let dialect: Dialect;
  let sqliteAccess: SqliteAccess | undefined;
  let checkpointer: SqliteCheckpointer | undefined;
  if (location.kind === 'sqlite') {
    const database = await openSqlite(
      location.file,
      { readOnly, create: !readOnly && migrate !== 'verify' },
      url,
    );
    if (location.file !== ':memory:' && !readOnly) {
      checkpointer = createSqliteCheckpointer(database, location.file, (error) => {
        process.emitWarning(
          `SQLite checkpoints of ${location.file} went back to the committing thread: ${error.message}`,
          { type: 'FleetgateWarning' },
        );
      });
    }
    const worker = checkpointer;
    const shared = createSqliteAccess(database, {
      ...(worker === undefined ? {} : { onCommit: () => worker.committed() }),
    });
    dialect = shared.dialect;
    sqliteAccess = shared.access;
  } else {
    dialect = new PostgresDialect({
      pool: await openPool(
        {
          connectionString: location.connectionString,
          max: options.poolSize ?? 10,
          application_name: options.applicationName ?? 'fleetgate',
          ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
          ...timeoutConfig(options.timeouts),
        },
        () => {
          idleErrors += 1;
        },
        (error) => {
          connectionErrors += 1;
          onError?.(error);
        },
        readOnly,
      ),
    });
  }
  const db = new Kysely<DB>({ dialect });
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    // Writes queued on the direct access commit first (nothing is dropped on the way out).
    await sqliteAccess?.idle();
    await checkpointer?.close();
    await db.destroy();
  };
  try {
    if (location.kind === 'postgres') {
      // The first connection tells a server that cannot be reached, refuses the credentials or
      // has no such database apart from a migration that fails.
      await sql`select 1`.execute(db).catch((error: unknown) => {
        throw postgresOpenError(error, url);
      });
    }
    if (schema !== undefined && migrate === true) {
      // Replicas starting together: `if not exists` alone races on the catalog (a duplicate-key
      // error for all but one), so the schema is created under a lock named after it.
      await db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`fleetgate.schema.${schema}`}))`.execute(
          trx,
        );
        await sql`create schema if not exists ${sql.id(schema)}`.execute(trx);
      });
    }
    const db0 = db as unknown as Kysely<unknown>;
    const context = { migrations: options.migrations, ...defined({ schema }) };
    const { ran: migrated, newer } =
      migrate === true
        ? await migrateToLatest(db0, location.kind, context)
        : { ran: [], newer: [] };
    if (migrate === 'verify')
      await verifyMigrated(db0, location.kind, { ...context, url: redact(url) });
    return {
      db,
      kind: location.kind,
      ...defined({ sqlite: sqliteAccess }),
      url: redact(url),
      migrated,
      newer,
      get idleErrors() {
        return idleErrors;
      },
      get connectionErrors() {
        return connectionErrors;
      },
      close,
    };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/** PostgreSQL error fields the classification reads (pg errors and Node socket errors). */
interface DriverError {
  code?: unknown;
  message?: unknown;
  errors?: unknown;
}

/** Node's socket error codes that mean "the server cannot be reached". */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/**
 * Names what went wrong on the first PostgreSQL connection: the server cannot be reached, it
 * refused the credentials, or the database does not exist. Anything else passes through.
 */
function postgresOpenError(error: unknown, url: string): unknown {
  // The guarded pool already coded it: a server that does not answer in time stays a timeout;
  // one that is away is told apart (unreachable, credentials, database) from the pg error inside.
  if (isFleetgateError(error, 'FLEETGATE_STORE_TIMEOUT')) return error;
  if (isFleetgateError(error, 'FLEETGATE_STORE_UNAVAILABLE') && error.cause !== undefined) {
    return postgresOpenError(error.cause, url);
  }
  const e = (error ?? {}) as DriverError;
  // Node reports a host with several addresses (localhost: ::1 and 127.0.0.1) as an
  // AggregateError with an empty message; its parts carry the reason.
  const first = Array.isArray(e.errors) ? ((e.errors[0] ?? {}) as DriverError) : e;
  const code =
    typeof e.code === 'string' ? e.code : typeof first.code === 'string' ? first.code : '';
  const text =
    [e.message, first.message].find((m): m is string => typeof m === 'string' && m !== '') ?? code;
  const where = redact(url);
  const details = { url: where, driverCode: code };
  if (UNREACHABLE.has(code) || /timeout|terminated unexpectedly/iu.test(text)) {
    return new FleetgateError(
      'FLEETGATE_STORE_CONNECT_FAILED',
      `Cannot reach PostgreSQL for store ${where}: ${text}`,
      { cause: error, details },
    );
  }
  // SQLSTATE 28P01 invalid_password, 28000 invalid_authorization_specification.
  if (code === '28P01' || code === '28000') {
    return new FleetgateError(
      'FLEETGATE_STORE_AUTH_FAILED',
      `PostgreSQL refused the credentials of store ${where}: ${text}`,
      { cause: error, details },
    );
  }
  // SQLSTATE 3D000 invalid_catalog_name.
  if (code === '3D000') {
    return new FleetgateError(
      'FLEETGATE_STORE_DATABASE_MISSING',
      `The database of store ${where} does not exist: ${text}`,
      { cause: error, details },
    );
  }
  return error;
}

/**
 * A pg pool (pg loaded on first use), guarded ({@link guardPool}): every connection error, idle or
 * in use, goes to `onConnectionError` (an `error` event without a listener would throw from the
 * event emitter and end the process); the pool's own idle-error event is counted by `onIdleError`.
 */
async function openPool(
  config: PoolConfig,
  onIdleError: (error: Error) => void,
  onConnectionError: (error: Error) => void,
  readOnly: boolean,
): Promise<GuardedPool> {
  const pg = (await import('pg')).default;
  // PostgreSQL returns BIGINT (int8) as a string by default; our bigint columns hold epoch ms and
  // sequence numbers, far below 2^53, so numbers are the honest type.
  const getTypeParser = ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8_OID) return (value: string) => Number(value);
    const parser: unknown =
      format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid);
    return parser;
  }) as typeof pg.types.getTypeParser;
  const pool = new pg.Pool({ ...config, types: { getTypeParser } });
  pool.on('error', onIdleError);
  if (readOnly) {
    // Queued on the new connection before any query of the caller: the server refuses writes.
    // A connection that cannot take it fails its next query too; the failure is reported as an
    // error of a pooled connection.
    pool.on('connect', (client) => {
      client
        .query('set session characteristics as transaction read only')
        .catch((error: unknown) =>
          onIdleError(error instanceof Error ? error : new Error(String(error))),
        );
    });
  }
  return guardPool(pool, onConnectionError);
}

async function openSqlite(
  file: string,
  mode: { readOnly: boolean; create: boolean },
  url: string,
): Promise<BetterSqlite3.Database> {
  const Database = (await import('better-sqlite3')).default;
  const memory = file === ':memory:';
  let database: BetterSqlite3.Database;
  try {
    const fresh = memory || !existsSync(file) || statSync(file).size === 0;
    if (!memory && !mode.create && !existsSync(file)) {
      throw new FleetgateError(
        'FLEETGATE_STORE_NOT_INITIALISED',
        `No store at ${file}: it has not been initialised by a gateway; start a gateway on it first (\`fleetgate start\`) or pass the store URL of one`,
        { details: { url: redact(url), file } },
      );
    }
    if (!memory && mode.create) createDirectory(dirname(file));
    database = new Database(file, {
      readonly: mode.readOnly && !memory,
      fileMustExist: !mode.create,
    });
    // WAL lets readers run beside the single writer; NORMAL sync is durable across process crashes
    // in WAL mode (only an OS crash may lose the last transactions). A reader changes neither.
    if (!mode.readOnly) {
      // A new file's page size, set before its first write fixes it (a store that exists keeps
      // its own). See SQLITE_PAGE_BYTES.
      if (fresh) database.pragma(`page_size = ${SQLITE_PAGE_BYTES}`);
      database.pragma('journal_mode = WAL');
      database.pragma('synchronous = NORMAL');
    }
    database.pragma('busy_timeout = 5000');
    database.pragma('foreign_keys = ON');
    // Savepoint and statement journals in memory: a group commit's savepoints never open, write
    // and unlink a temporary file. (Nothing durable lives there: they only undo within a write.)
    database.pragma('temp_store = MEMORY');
    // The page cache's size: see SQLITE_CACHE_KIB.
    database.pragma(`cache_size = ${-SQLITE_CACHE_KIB}`);
  } catch (error) {
    if (error instanceof FleetgateError) throw error;
    throw new FleetgateError(
      'FLEETGATE_STORE_OPEN_FAILED',
      `Cannot open the SQLite store ${file}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error, details: { url: redact(url), file } },
    );
  }
  cachePreparedStatements(database, STATEMENT_CACHE_SIZE);
  return database;
}

/**
 * Creates a directory and its missing parents one level at a time. Node's recursive `mkdirSync`
 * never returns on some paths (under `/proc` it loops at full CPU) and reports a file in the way
 * as `EEXIST`; here the first level that cannot be made fails, naming it.
 */
function createDirectory(dir: string): void {
  const missing: string[] = [];
  for (let current = dir; ;) {
    let isDirectory: boolean;
    try {
      isDirectory = statSync(current).isDirectory();
    } catch (error) {
      const parent = dirname(current);
      if ((error as { code?: unknown }).code !== 'ENOENT' || parent === current) throw error;
      missing.push(current);
      current = parent;
      continue;
    }
    if (!isDirectory) throw new Error(`${current} is not a directory`);
    break;
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level);
    } catch (error) {
      const reason =
        error instanceof Error ? error.message.replace(/^[A-Z]+: /u, '') : String(error);
      throw new Error(`cannot create directory ${level} (${reason})`, { cause: error });
    }
  }
}

/**
 * The page size of a new SQLite store. A call's commits each change a row or two in each of about
 * twenty tables and indexes, and a commit writes every page it changed whole into the log (and a
 * checkpoint writes it again into the file): with 2 KiB pages a call writes 30% fewer bytes than
 * with SQLite's default of 4 KiB (`gateway_store_write_kib_per_request` 129 → 90; proxied calls
 * 170 → 117), for the same CPU. 1 KiB pages wrote 42% fewer bytes but cost CPU (deeper trees,
 * rows spilling onto overflow pages).
 */
const SQLITE_PAGE_BYTES = 2048;

/**
 * The SQLite page cache of a store, in KiB: SQLite's own default, 2 MiB. A larger cache saves
 * reads (pages of the indexes keyed by random ids, read from the OS's file cache) but costs more
 * at every commit: when a B-tree rebalances, SQLite moves a page through the number of the lock
 * page (1 GiB ÷ page size) and the commit after it then walks the cache's whole hash table, as
 * long as the database is under 1 GiB. Buys `gateway-dispatch`'s `gateway_cpu_vs_agent` ~5%
 * (1.96 with 32 MiB, 1.85) and `proxy-vs-direct`'s `gateway_cpu_ms_per_call` ~5%; on a 290 MB
 * file, a commit of five rows into a table with two random-key indexes costs 129 µs of CPU
 * against 234 µs with 32 MiB (37 reads from the file per commit against 27).
 */
const SQLITE_CACHE_KIB = 2 * 1024;

/** Distinct SQL texts whose prepared statements a SQLite store keeps. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * Keeps the prepared statement of each SQL text. The SQL builder prepares every query it runs,
 * and preparing costs more than running most of them; the queries are few and repeat (values are
 * bound parameters), so a small cache holds them all, the oldest text leaving first when it fills.
 * SQLite re-prepares a kept statement by itself after a schema change. Safe because every query
 * runs to completion before the next starts (the driver is synchronous and never streams).
 */
function cachePreparedStatements(database: BetterSqlite3.Database, size: number): void {
  const prepare = database.prepare.bind(database);
  const cache = new Map<string, BetterSqlite3.Statement>();
  database.prepare = ((source: string) => {
    let statement = cache.get(source);
    if (statement === undefined) {
      statement = prepare(source);
      if (cache.size >= size) cache.delete(cache.keys().next().value!);
      cache.set(source, statement);
    }
    return statement;
  }) as typeof database.prepare;
}
