/**
 * The store: kysely over SQLite (better-sqlite3, embedded default) or PostgreSQL (pg), selected by
 * URL, each driver loaded only when named, with the versioned in-code migrations its caller hands
 * in. The ground floor: it knows no domain's tables.
 */
export { openStore, parseStoreUrl, redactStoreUrl } from './open-store.js';
export type { Store, StoreLocation, StoreOptions } from './open-store.js';
export { DEFAULT_STORE_TIMEOUTS } from './pg-pool.js';
export type { StoreTimeouts } from './pg-pool.js';
export { composeMigrations, migrateToLatest, serialKeyType } from './migrations.js';
export type { MigrateOptions, StoreKind, StoreMigration, StoreMigrations } from './migrations.js';
export type { ColumnSpec, ColumnSpecs, IndexSpec, TableSpec } from './schema.js';
export type {
  SqliteAccess,
  SqliteRunResult,
  SqliteStatements,
  SqliteWriteOptions,
} from './sqlite-access.js';
