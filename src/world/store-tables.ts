/**
 * The world-state tables: row types and the `0003_world` migration that creates them. The
 * composition root hands {@link WORLD_MIGRATIONS} to the store (migration names are permanent).
 */
import type { Generated, Kysely } from 'kysely';
import type { StoreMigration } from '../store/index.js';
import type { JsonObject } from './json.js';
import {
  DEFAULT_SPLIT_DEPTH,
  decodeHeader,
  encodeHeader,
  rowBytes,
  splitState,
} from './value-rows.js';

/** `fleetgate_world_domains`: one row per domain. */
export interface WorldDomainTable {
  name: string;
  version: number;
  /**
   * Since `0102_world_values`: `{"$rows":{"bytes","next"}}`, the domain's size and next row
   * position — the state itself is in `fleetgate_world_values`. (Before: the live domain object
   * as JSON text.)
   */
  state: string;
  /** The state replay starts from (the seed, or what pruned audit rows had produced), JSON. */
  base_state: string;
  base_version: number;
  /** Epoch milliseconds. */
  updated_at: number;
}

/** `fleetgate_world_events`: ids of the `world.state.delta` events already applied. */
export interface WorldEventTable {
  event_id: string;
  /** Epoch milliseconds. */
  applied_at: number;
}

/** `fleetgate_world_audit`: every applied and rejected delta entry. */
export interface WorldAuditTable {
  seq: Generated<number>;
  domain: string;
  path: string;
  op: string;
  /** JSON text of the operand; null when the entry had none. */
  value: string | null;
  /** JSON text of the value before; null when absent. */
  previous: string | null;
  /** JSON text of the value after; null for rejected entries. */
  next: string | null;
  /** `applied` | `rejected`. */
  status: string;
  reason: string | null;
  version: number | null;
  agent: string;
  skill: string;
  task_id: string;
  event_id: string;
  entry_index: number;
  /** RFC 3339 time of the event. */
  time: string;
  /** Epoch milliseconds. */
  recorded_at: number;
}

/**
 * `fleetgate_world_values` (`0102_world_values`): a domain's state as rows, one per node down to
 * the store's split depth (see `value-rows.ts`).
 */
export interface WorldValueTable {
  domain: string;
  /** Dot-separated path of the node (`data.items.3`); byte-ordered (`COLLATE "C"` on PostgreSQL). */
  path: string;
  /** `o` object node, `a` array node, `v` value kept whole. */
  kind: string;
  /** JSON of a value row; the length of an array node; null for an object node. */
  value: string | null;
  /** Order among rows: parents first, members in the order they were added. */
  pos: number;
}

/** The world-state tables. */
export interface WorldDatabase {
  fleetgate_world_domains: WorldDomainTable;
  fleetgate_world_events: WorldEventTable;
  fleetgate_world_audit: WorldAuditTable;
  fleetgate_world_values: WorldValueTable;
}

/** The world-state migrations (`fleetgate_world_domains`, `_events`, `_audit`, `_values`), by name. */
export const WORLD_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0003_world': {
    // World state: domains, applied event ids, the audit log.
    tables: {
      fleetgate_world_domains: {
        columns: {
          name: 'text primary key',
          version: 'bigint not null',
          state: 'text not null',
          base_state: 'text not null',
          base_version: 'bigint not null',
          updated_at: 'bigint not null',
        },
      },
      fleetgate_world_events: {
        columns: { event_id: 'text primary key', applied_at: 'bigint not null' },
      },
      fleetgate_world_audit: {
        columns: {
          seq: 'serial primary key',
          domain: 'text not null',
          path: 'text not null',
          op: 'text not null',
          value: 'text',
          previous: 'text',
          next: 'text',
          status: 'text not null',
          reason: 'text',
          version: 'bigint',
          agent: 'text not null',
          skill: 'text not null',
          task_id: 'text not null',
          event_id: 'text not null',
          entry_index: 'integer not null',
          time: 'text not null',
          recorded_at: 'bigint not null',
        },
      },
    },
    indexes: {
      fleetgate_world_events_applied_at: 'fleetgate_world_events (applied_at)',
      fleetgate_world_audit_domain_seq: 'fleetgate_world_audit (domain, seq)',
      fleetgate_world_audit_domain_path: 'fleetgate_world_audit (domain, path, seq)',
      fleetgate_world_audit_recorded_at: 'fleetgate_world_audit (recorded_at)',
    },
  },
  // After the policy room's 0100 migration, which stores already ran (name order only).
  '0102_world_values': {
    // Domains as rows: an update writes the rows it changes, not the whole domain.
    tables: {
      fleetgate_world_values: {
        columns: {
          domain: 'text not null',
          // Byte order on PostgreSQL too, so a subtree is one index range ([P., P/)).
          path: 'text collate "C" not null',
          kind: 'text not null',
          value: 'text',
          pos: 'bigint not null',
        },
        primaryKey: ['domain', 'path'],
      },
    },
    async up(db) {
      // Every domain kept whole so far moves into rows.
      const store = db as Kysely<WorldDatabase>;
      const domains = await store
        .selectFrom('fleetgate_world_domains')
        .select(['name', 'state'])
        .execute();
      for (const domain of domains) {
        if (decodeHeader(domain.state) !== undefined) continue;
        const rows = splitState(JSON.parse(domain.state) as JsonObject, DEFAULT_SPLIT_DEPTH);
        let bytes = 0;
        const values = rows.map((row, i) => {
          bytes += rowBytes(row);
          return { domain: domain.name, ...row, pos: i + 1 };
        });
        for (let i = 0; i < values.length; i += 200) {
          await store
            .insertInto('fleetgate_world_values')
            .values(values.slice(i, i + 200))
            .execute();
        }
        await store
          .updateTable('fleetgate_world_domains')
          .set({ state: encodeHeader({ bytes, next: values.length + 1 }) })
          .where('name', '=', domain.name)
          .execute();
      }
    },
  },
  '0301_world_audit_path_index': {
    // No query reads through (domain, path, seq): the history's path filter (the path or what
    // lies below it) cannot use it on either engine, it reads (domain, seq) newest first. Yet
    // every audit row had to be placed in it at its path, which touched a page per distinct
    // path in each unit of work and made up most of the cost of writing the audit log.
    dropIndexes: ['fleetgate_world_audit_domain_path'],
    async down(db) {
      await db.schema
        .createIndex('fleetgate_world_audit_domain_path')
        .on('fleetgate_world_audit')
        .columns(['domain', 'path', 'seq'])
        .execute();
    },
  },
};

/**
 * The tables the SQL world store reads and writes: the world's own. Its emissions go to the
 * outbox through its `outbox` port, which is handed the transaction and names the outbox's table.
 */
export type SqlWorldDatabase = WorldDatabase;
