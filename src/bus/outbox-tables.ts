/**
 * The outbox's migration. The bus owns its table; the composition root hands this to the store
 * with every other domain's (migration names are permanent: never rename one that shipped).
 */
import type { Generated, Kysely } from 'kysely';

/** Row shape of the `fleetgate_outbox` table. */
export interface OutboxTable {
  seq: Generated<number>;
  id: string;
  topic: string;
  /** The payload as JSON text. */
  payload: string;
  correlation_id: string;
  time: string;
  /** Epoch milliseconds. */
  created_at: number;
  /** Epoch milliseconds of the acknowledgement; null while unsent. */
  sent_at: number | null;
  attempts: Generated<number>;
  last_error: string | null;
}

/**
 * Row shape of `fleetgate_outbox_parked` (migration `0101_outbox_parked`): outbox rows the relay
 * set aside because no bus will ever take them (too large, not JSON, an invalid topic), moved
 * here whole so an operator can look at them; `reason` says why.
 */
export interface OutboxParkedTable {
  id: string;
  /** The row's position in the outbox when it was parked. */
  seq: number;
  topic: string;
  payload: string;
  correlation_id: string;
  time: string;
  created_at: number;
  /** Epoch milliseconds. */
  parked_at: number;
  reason: string;
}

/** The tables the outbox needs; the store's database type includes them. */
export interface OutboxDatabase {
  fleetgate_outbox: OutboxTable;
  fleetgate_outbox_parked: OutboxParkedTable;
}

/**
 * A migration as the store runs it (kysely's Migrator, in name order). Declared here rather than
 * imported, so this folder depends on no other; the store's `StoreMigration` has the same shape.
 */
interface OutboxMigration {
  up(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<void>;
  down?(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<void>;
}

/** The outbox's migrations (`fleetgate_outbox`), by name. */
export const OUTBOX_MIGRATIONS: Readonly<Record<string, OutboxMigration>> = {
  '0001_outbox': {
    async up(db, kind) {
      // The SQL builder loads only when a store migrates: the in-process bus never needs it.
      const { sql } = await import('kysely');
      await db.schema
        .createTable('fleetgate_outbox')
        .addColumn('seq', sql.raw(kind === 'postgres' ? 'bigserial' : 'integer'), (col) => {
          const pk = col.primaryKey();
          // SQLite: INTEGER PRIMARY KEY AUTOINCREMENT never reuses a key after deletes.
          return kind === 'sqlite' ? pk.autoIncrement() : pk;
        })
        .addColumn('id', 'text', (col) => col.notNull().unique())
        .addColumn('topic', 'text', (col) => col.notNull())
        .addColumn('payload', 'text', (col) => col.notNull())
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('time', 'text', (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('sent_at', 'bigint')
        .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('last_error', 'text')
        .execute();
      // The relay scans unsent rows in order; a partial index keeps that cheap as sent rows pile up.
      await db.schema
        .createIndex('fleetgate_outbox_unsent')
        .on('fleetgate_outbox')
        .column('seq')
        .where(sql.ref('sent_at'), 'is', null)
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_outbox').execute();
    },
  },
  // Named after the policy room's 0100 migration, which stores already ran (migrations run in
  // name order and never out of it).
  '0101_outbox_parked': {
    async up(db, kind) {
      // Rows the bus can never accept (too large, not JSON) leave the outbox for this table
      // instead of being retried forever in front of every row after them.
      await db.schema
        .createTable('fleetgate_outbox_parked')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('seq', kind === 'postgres' ? 'bigint' : 'integer', (col) => col.notNull())
        .addColumn('topic', 'text', (col) => col.notNull())
        .addColumn('payload', 'text', (col) => col.notNull())
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('time', 'text', (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('parked_at', 'bigint', (col) => col.notNull())
        .addColumn('reason', 'text', (col) => col.notNull())
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_outbox_parked').execute();
    },
  },
};
