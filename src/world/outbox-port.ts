/**
 * The outbox as the SQL world store writes its emissions into it: the bus's writers, handed in
 * where the store is built (the bus's `OUTBOX_WRITERS` satisfies it), so `world` imports no `bus`
 * and never names the outbox table: it hands the writers its transaction or its statements.
 */
import type { Transaction } from 'kysely';
import type { SqliteStatements } from '../store/index.js';
import type { WorldDatabase } from './store-tables.js';
import type { WorldEmission } from './types.js';

/** Writes a unit of work's emissions into the outbox, in its transaction (see the module doc). */
export interface WorldOutbox {
  /**
   * Writes `events` through the unit of work's transaction, in order (their `seq` follows the
   * array), with `created_at = now` and the event time `now`; an id already there is skipped.
   */
  writeEvents(
    executor: Transaction<WorldDatabase>,
    kind: 'sqlite' | 'postgres',
    events: readonly WorldEmission[],
    now: number,
  ): Promise<unknown>;
  /** The same rows through a SQLite store's direct statements, inside its write. */
  insertRows(sql: SqliteStatements, events: readonly WorldEmission[], now: number): unknown;
}
