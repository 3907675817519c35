/**
 * The fleet's migration: the declaration ratchet and the last good card of every agent. The
 * composition root hands it to the store (migration names are permanent).
 */
import type { StoreMigration } from '../store/index.js';

/**
 * The fleet's migrations (`fleetgate_declaration_ratchet`, `fleetgate_agent_card`,
 * `fleetgate_card_failure`), by name.
 */
export const FLEET_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0002_fleet': {
    async up(db) {
      // The narrowing ratchet of blast-v1 radii and hitl-mode-v1 modes (src/fleet/ratchet.ts).
      await db.schema
        .createTable('fleetgate_declaration_ratchet')
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('kind', 'text', (col) => col.notNull())
        .addColumn('accepted', 'text', (col) => col.notNull())
        .addColumn('pending', 'text')
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addColumn('acknowledged_at', 'bigint')
        .addColumn('acknowledged_by', 'text')
        .addPrimaryKeyConstraint('fleetgate_declaration_ratchet_pk', ['agent', 'skill', 'kind'])
        .execute();
      // The last good card of every agent (src/fleet/card-cache.ts).
      await db.schema
        .createTable('fleetgate_agent_card')
        .addColumn('agent', 'text', (col) => col.primaryKey())
        .addColumn('url', 'text', (col) => col.notNull())
        .addColumn('card', 'text', (col) => col.notNull())
        .addColumn('digest', 'text', (col) => col.notNull())
        .addColumn('etag', 'text')
        .addColumn('last_modified', 'text')
        .addColumn('fetched_at', 'bigint', (col) => col.notNull())
        .addColumn('changed_at', 'bigint', (col) => col.notNull())
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_agent_card').execute();
      await db.schema.dropTable('fleetgate_declaration_ratchet').execute();
    },
  },
  '0101_fleet_card_failures': {
    async up(db) {
      // Consecutive failed refreshes per agent (src/fleet/card-cache.ts), so `stale` survives
      // restarts and short runs such as `fleetgate agents`.
      await db.schema
        .createTable('fleetgate_card_failure')
        .addColumn('agent', 'text', (col) => col.primaryKey())
        .addColumn('url', 'text', (col) => col.notNull())
        .addColumn('failures', 'integer', (col) => col.notNull())
        .addColumn('last_error_code', 'text', (col) => col.notNull())
        .addColumn('last_error_message', 'text', (col) => col.notNull())
        .addColumn('last_attempt_at', 'bigint', (col) => col.notNull())
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_card_failure').execute();
    },
  },
};
