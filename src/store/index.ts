/**
 * The store: kysely over SQLite (better-sqlite3, embedded default) or PostgreSQL (pg), selected by
 * URL, with versioned in-code migrations run at start.
 */
export { openStore, parseStoreUrl } from './open-store.js';
export type { Store, StoreLocation, StoreOptions } from './open-store.js';
export { FLEETGATE_MIGRATIONS, migrateToLatest, serialKeyType } from './migrations.js';
export type { MigrateOptions, StoreKind, StoreMigration } from './migrations.js';
export type { FleetgateDatabase } from './schema.js';
