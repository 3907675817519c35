/**
 * The store: kysely over SQLite (better-sqlite3, embedded default) or PostgreSQL (pg), selected by
 * URL, each driver loaded only when named, with the versioned in-code migrations its caller hands
 * in. The ground floor: it knows no domain's tables.
 */
export { openStore, parseStoreUrl } from './open-store.js';
export type { Store, StoreLocation, StoreOptions } from './open-store.js';
export { composeMigrations, migrateToLatest, serialKeyType } from './migrations.js';
export type { MigrateOptions, StoreKind, StoreMigration, StoreMigrations } from './migrations.js';
