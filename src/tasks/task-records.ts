/**
 * Durable task records with the terminal claim: the types (`task-record-types.ts`) and the store
 * on either database, one implementation each (`task-records-sqlite.ts`, `task-records-kysely.ts`).
 */
import type { Kysely } from 'kysely';
import type { SqliteAccess } from '../store/index.js';
import type { ClaimDatabase, TaskRecordStore } from './task-record-types.js';
import { kyselyTaskRecords } from './task-records-kysely.js';
import { sqliteTaskRecords } from './task-records-sqlite.js';

export type {
  ClaimDatabase,
  TaskRecord,
  TaskRecordStore,
  TasksDatabase,
  TaskTable,
} from './task-record-types.js';

/** Options of {@link createStoreTaskRecords}. */
export interface StoreTaskRecordsOptions {
  /**
   * A SQLite store's direct access (`store.sqlite`): the records are kept by prepared statements,
   * their writes group-committed with the rest of the turn (claims of calls ending together share
   * one commit). Buys `store-paths`' `tasks_direct_saves_us_per_call` (~130 µs, ~9% of a proxied
   * call's gateway CPU). Without it (PostgreSQL), through kysely.
   */
  sqlite?: SqliteAccess | undefined;
}

/** Task records in the store (SQLite or PostgreSQL). */
export function createStoreTaskRecords<DB extends ClaimDatabase>(
  database: Kysely<DB>,
  options: StoreTaskRecordsOptions = {},
): TaskRecordStore {
  if (options.sqlite !== undefined) return sqliteTaskRecords(options.sqlite);
  // kysely's types are invariant in DB; the constraint guarantees the table exists.
  return kyselyTaskRecords(database as unknown as Kysely<ClaimDatabase>);
}
