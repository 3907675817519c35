/**
 * The proxy's durable tasks and push configurations (SQLite or PostgreSQL): one row per client
 * call, keyed by the gateway's task id (the dispatch's), unique per agent, caller and message id —
 * a client that sends the same message again gets the same task, never a second dispatch. The
 * types (`task-types.ts`) and the store on either database, one implementation each
 * (`task-store-sqlite.ts`, `task-store-kysely.ts`).
 */
import type { Kysely } from 'kysely';
import type { TaskStateName } from '../../protocol/index.js';
import { isTerminalState } from '../../protocol/index.js';
import type { SqliteAccess } from '../../store/index.js';
import type { ProxyDatabase } from './store-tables.js';
import { kyselyProxyTaskStore } from './task-store-kysely.js';
import { sqliteProxyTaskStore } from './task-store-sqlite.js';
import type { ProxyTaskStore } from './task-types.js';

export type {
  ClientProtocol,
  DeliveryKey,
  ProxyPushConfig,
  ProxyTask,
  ProxyTaskStore,
} from './task-types.js';
export { UNSENT_PUSH_GRACE_MS } from './task-rows.js';

/** Options of {@link createProxyTaskStore}. */
export interface ProxyTaskStoreOptions {
  /**
   * A SQLite store's direct access (`store.sqlite`): the store is kept by prepared statements,
   * their writes group-committed with the rest of the turn (a call's opening and moves share the
   * commits of the calls beside it). Buys `store-paths`' `proxy_direct_saves_us_per_call` (~185 µs,
   * ~12% of a proxied call's gateway CPU). Without it (PostgreSQL), through kysely.
   */
  sqlite?: SqliteAccess | undefined;
}

/** The proxy's store on a kysely database holding {@link ProxyDatabase} (SQLite or PostgreSQL). */
export function createProxyTaskStore<DB extends ProxyDatabase>(
  database: Kysely<DB>,
  options: ProxyTaskStoreOptions = {},
): ProxyTaskStore {
  if (options.sqlite !== undefined) return sqliteProxyTaskStore(options.sqlite);
  // kysely's types are invariant in DB; the constraint guarantees the tables exist.
  return kyselyProxyTaskStore(database as unknown as Kysely<ProxyDatabase>);
}

/** True for a state a task never leaves. */
export function ended(state: TaskStateName): boolean {
  return isTerminalState(state);
}
