/**
 * The outbox's migration. The bus owns its table; the composition root hands this to the store
 * with every other domain's (migration names are permanent: never rename one that shipped).
 */
import type { Generated } from 'kysely';
import type { StoreMigration } from '../store/index.js';

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

/** The outbox's migrations (`fleetgate_outbox`), by name. */
export const OUTBOX_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0001_outbox': {
    tables: {
      fleetgate_outbox: {
        columns: {
          // SQLite: INTEGER PRIMARY KEY AUTOINCREMENT never reuses a key after deletes.
          seq: 'serial primary key',
          id: 'text not null unique',
          topic: 'text not null',
          payload: 'text not null',
          correlation_id: 'text not null',
          time: 'text not null',
          created_at: 'bigint not null',
          sent_at: 'bigint',
          attempts: 'integer not null default 0',
          last_error: 'text',
        },
      },
    },
    // The relay scans unsent rows in order; a partial index keeps that cheap as sent rows pile up.
    indexes: {
      fleetgate_outbox_unsent: 'fleetgate_outbox (seq) where sent_at is null',
    },
  },
  // Named after the policy room's 0100 migration, which stores already ran (migrations run in
  // name order and never out of it).
  '0101_outbox_parked': {
    // Rows the bus can never accept (too large, not JSON) leave the outbox for this table
    // instead of being retried forever in front of every row after them.
    tables: {
      fleetgate_outbox_parked: {
        columns: {
          id: 'text primary key',
          seq: 'int64 not null',
          topic: 'text not null',
          payload: 'text not null',
          correlation_id: 'text not null',
          time: 'text not null',
          created_at: 'bigint not null',
          parked_at: 'bigint not null',
          reason: 'text not null',
        },
      },
    },
  },
};
