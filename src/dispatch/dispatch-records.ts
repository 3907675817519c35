/**
 * Durable dispatch records: the types (`dispatch-record-types.ts`) and the store on either
 * database, one implementation each (`dispatch-records-sqlite.ts`, `dispatch-records-kysely.ts`).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { SqliteAccess } from '../store/index.js';
import type { DispatchDatabase, DispatchRecordStore } from './dispatch-record-types.js';
import { kyselyDispatchRecords } from './dispatch-records-kysely.js';
import { sqliteDispatchRecords } from './dispatch-records-sqlite.js';

export type { DispatchResult, DispatchStatus } from '../protocol/index.js';
export type {
  DispatchAnnouncement,
  DispatchDatabase,
  DispatchEventExtra,
  DispatchQuery,
  DispatchRecord,
  DispatchRecordStore,
  DispatchSend,
  DispatchSendTable,
  DispatchTable,
  DispatchTopic,
  DispatchTraceTable,
  DispatchUpdate,
  HeldDispatch,
} from './dispatch-record-types.js';
export { moveDispatch } from './dispatch-records-kysely.js';

/** Options of {@link createStoreDispatchRecords}. */
export interface StoreDispatchRecordsOptions {
  /**
   * A SQLite store's direct access (`store.sqlite`): a call's records, their events and the
   * lookups every settled task makes run as prepared statements, group-committed. Buys
   * `store-paths`' `dispatch_direct_saves_us_per_call` (~350 µs, ~23% of a proxied call's
   * gateway CPU).
   */
  sqlite?: SqliteAccess | undefined;
  /** Ids of the events written into the outbox (default: random UUIDs). */
  eventId?: () => string;
  /** Called after a unit that wrote an event committed (wake the outbox relay). */
  onCommitted?: () => void;
}

/** Dispatch records in the store (SQLite or PostgreSQL). */
export function createStoreDispatchRecords<DB extends DispatchDatabase>(
  database: Kysely<DB>,
  options: StoreDispatchRecordsOptions = {},
): DispatchRecordStore {
  const events = {
    eventId: options.eventId ?? (() => randomUUID()),
    committed: options.onCommitted ?? (() => undefined),
  };
  if (options.sqlite !== undefined) return sqliteDispatchRecords(options.sqlite, events);
  // kysely's types are invariant in DB; the constraint guarantees the tables exist.
  return kyselyDispatchRecords(database as unknown as Kysely<DispatchDatabase>, events);
}
