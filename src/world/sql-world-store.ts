/**
 * The {@link WorldStore} on SQLite or PostgreSQL. Each unit of work is one database transaction:
 * the event-id claims, domain rows, audit rows and outbox rows commit together, so a redelivered
 * event (another replica, a restart, a bus re-send) finds its id claimed and is skipped. On
 * PostgreSQL the domain rows are locked (`FOR UPDATE`, in name order, so two replicas never
 * deadlock) for the rest of the transaction; SQLite runs one writer at a time anyway.
 *
 * A domain's state is kept in rows (`fleetgate_world_values`, see `value-rows.ts`): a unit of work
 * reads the rows its entries need and writes the rows they changed, so a tiny `inc` costs the same
 * in a domain of 10 KiB as in one of 100 MiB. The domain row keeps the version, the time, the
 * base for replay, and in `state` a small header (the domain's size in bytes, the next row
 * position).
 *
 * One implementation per database, chosen once by {@link createSqlWorldStore}:
 * `sqlite-world-store.ts` (prepared statements on a SQLite store's direct access) and
 * `kysely-world-store.ts` (PostgreSQL, and SQLite without the direct access); what they share is
 * in `sql-world-base.ts`.
 */
import type { Kysely } from 'kysely';
import { KyselyWorldStore } from './kysely-world-store.js';
import type { WorldOutbox } from './outbox-port.js';
import { DEFAULT_AUDIT_VALUE_MAX_BYTES, type SqlWorldStore } from './sql-world-base.js';
import type { SqliteAccess } from '../store/index.js';
import { SqliteWorldStore } from './sqlite-world-store.js';
import type { SqlWorldDatabase } from './store-tables.js';

export { SqlWorldStore } from './sql-world-base.js';
export type { SqlWorldDatabase } from './store-tables.js';

/** Options of {@link createSqlWorldStore}. */
export interface SqlWorldStoreOptions<DB extends SqlWorldDatabase = SqlWorldDatabase> {
  /**
   * The store's kysely instance (`openStore(url).db`), migrated to `0003_world` or later, with the
   * outbox's migrations. Any database type that includes the world tables will do.
   */
  db: Kysely<DB>;
  /** The database engine (`openStore(url).kind`). */
  kind: 'sqlite' | 'postgres';
  /**
   * Writes the emissions into the transactional outbox, in the unit of work's transaction: the
   * bus's `OUTBOX_WRITERS`.
   */
  outbox: WorldOutbox;
  /** Called after a unit of work that wrote outbox rows committed, e.g. `relay.notify`. */
  onCommitted?: () => void;
  /**
   * A SQLite store's direct access (`store.sqlite`): every method runs as prepared statements,
   * units of work in the store's group-committed writes, sharing a commit with the writes queued
   * beside them. Buys `store-paths`' `world_direct_saves_us_per_call` (~245 µs, ~16% of a proxied
   * call's gateway CPU). Without it (PostgreSQL), through kysely.
   */
  sqlite?: SqliteAccess | undefined;
  /**
   * Largest `previous` / `next` value of an audit record written whole, as JSON bytes (default
   * 8 KiB); a larger one is written as an `AuditSummary`. The operand (`value`) is always whole:
   * replay needs it.
   */
  auditValueMaxBytes?: number;
}

/**
 * Creates the SQL {@link WorldStore} over an open store: on SQLite with its direct access, the
 * prepared-statement implementation; otherwise the kysely one.
 *
 * @example
 * ```ts
 * const store = await openStore('sqlite:./data/fleetgate.db');
 * const relay = createOutboxRelay({ db: store.db, sqlite: store.sqlite, bus });
 * const world = createSqlWorldStore({
 *   db: store.db,
 *   kind: store.kind,
 *   outbox: OUTBOX_WRITERS,
 *   sqlite: store.sqlite,
 *   onCommitted: relay.notify,
 * });
 * ```
 */
export function createSqlWorldStore<DB extends SqlWorldDatabase>(
  options: SqlWorldStoreOptions<DB>,
): SqlWorldStore {
  const settings = {
    outbox: options.outbox,
    onCommitted: options.onCommitted,
    auditMax: options.auditValueMaxBytes ?? DEFAULT_AUDIT_VALUE_MAX_BYTES,
  };
  if (options.kind === 'sqlite' && options.sqlite !== undefined) {
    return new SqliteWorldStore(options.sqlite, settings);
  }
  // Kysely's type parameter is invariant; a database with more tables than these is still one
  // this store can use, so it is narrowed to the tables the store touches.
  const db = options.db as unknown as Kysely<SqlWorldDatabase>;
  return new KyselyWorldStore(db, options.kind, settings);
}
