/**
 * The world-state tables: row types and the `0003_world` migration that creates them. The
 * composition root hands {@link WORLD_MIGRATIONS} to the store (migration names are permanent).
 */
import type { Generated, Kysely } from 'kysely';
import { sql } from 'kysely';
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

/**
 * A migration as the store runs it (kysely's Migrator, in name order). Declared here rather than
 * imported, so this folder depends on no other; the store's `StoreMigration` has the same shape.
 */
interface WorldMigration {
  up(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<void>;
  down?(db: Kysely<unknown>, kind: 'sqlite' | 'postgres'): Promise<void>;
}

/** The world-state migrations (`fleetgate_world_domains`, `_events`, `_audit`, `_values`), by name. */
export const WORLD_MIGRATIONS: Readonly<Record<string, WorldMigration>> = {
  '0003_world': {
    async up(db, kind) {
      // World state: domains, applied event ids, the audit log.
      await db.schema
        .createTable('fleetgate_world_domains')
        .addColumn('name', 'text', (col) => col.primaryKey())
        .addColumn('version', 'bigint', (col) => col.notNull())
        .addColumn('state', 'text', (col) => col.notNull())
        .addColumn('base_state', 'text', (col) => col.notNull())
        .addColumn('base_version', 'bigint', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createTable('fleetgate_world_events')
        .addColumn('event_id', 'text', (col) => col.primaryKey())
        .addColumn('applied_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('fleetgate_world_events_applied_at')
        .on('fleetgate_world_events')
        .column('applied_at')
        .execute();
      await db.schema
        .createTable('fleetgate_world_audit')
        .addColumn('seq', sql.raw(kind === 'postgres' ? 'bigserial' : 'integer'), (col) => {
          const pk = col.primaryKey();
          return kind === 'sqlite' ? pk.autoIncrement() : pk;
        })
        .addColumn('domain', 'text', (col) => col.notNull())
        .addColumn('path', 'text', (col) => col.notNull())
        .addColumn('op', 'text', (col) => col.notNull())
        .addColumn('value', 'text')
        .addColumn('previous', 'text')
        .addColumn('next', 'text')
        .addColumn('status', 'text', (col) => col.notNull())
        .addColumn('reason', 'text')
        .addColumn('version', 'bigint')
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('task_id', 'text', (col) => col.notNull())
        .addColumn('event_id', 'text', (col) => col.notNull())
        .addColumn('entry_index', 'integer', (col) => col.notNull())
        .addColumn('time', 'text', (col) => col.notNull())
        .addColumn('recorded_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('fleetgate_world_audit_domain_seq')
        .on('fleetgate_world_audit')
        .columns(['domain', 'seq'])
        .execute();
      await db.schema
        .createIndex('fleetgate_world_audit_domain_path')
        .on('fleetgate_world_audit')
        .columns(['domain', 'path', 'seq'])
        .execute();
      await db.schema
        .createIndex('fleetgate_world_audit_recorded_at')
        .on('fleetgate_world_audit')
        .column('recorded_at')
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_world_audit').execute();
      await db.schema.dropTable('fleetgate_world_events').execute();
      await db.schema.dropTable('fleetgate_world_domains').execute();
    },
  },
  // After the policy room's 0100 migration, which stores already ran (name order only).
  '0102_world_values': {
    async up(db, kind) {
      // Domains as rows: an update writes the rows it changes, not the whole domain.
      await db.schema
        .createTable('fleetgate_world_values')
        .addColumn('domain', 'text', (col) => col.notNull())
        // Byte order on PostgreSQL too, so a subtree is one index range ([P., P/)).
        .addColumn('path', kind === 'postgres' ? sql`text collate "C"` : 'text', (col) =>
          col.notNull(),
        )
        .addColumn('kind', 'text', (col) => col.notNull())
        .addColumn('value', 'text')
        .addColumn('pos', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('fleetgate_world_values_pk', ['domain', 'path'])
        .execute();
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
    async down(db) {
      await db.schema.dropTable('fleetgate_world_values').execute();
    },
  },
  '0301_world_audit_path_index': {
    async up(db) {
      // No query reads through (domain, path, seq): the history's path filter (the path or what
      // lies below it) cannot use it on either engine, it reads (domain, seq) newest first. Yet
      // every audit row had to be placed in it at its path, which touched a page per distinct
      // path in each unit of work and made up most of the cost of writing the audit log.
      await db.schema.dropIndex('fleetgate_world_audit_domain_path').ifExists().execute();
    },
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
