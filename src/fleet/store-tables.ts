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
    tables: {
      // The narrowing ratchet of blast-v1 radii and hitl-mode-v1 modes (src/fleet/ratchet.ts).
      fleetgate_declaration_ratchet: {
        columns: {
          agent: 'text not null',
          skill: 'text not null',
          kind: 'text not null',
          accepted: 'text not null',
          pending: 'text',
          updated_at: 'bigint not null',
          acknowledged_at: 'bigint',
          acknowledged_by: 'text',
        },
        primaryKey: ['agent', 'skill', 'kind'],
      },
      // The last good card of every agent (src/fleet/card-cache.ts).
      fleetgate_agent_card: {
        columns: {
          agent: 'text primary key',
          url: 'text not null',
          card: 'text not null',
          digest: 'text not null',
          etag: 'text',
          last_modified: 'text',
          fetched_at: 'bigint not null',
          changed_at: 'bigint not null',
        },
      },
    },
  },
  '0101_fleet_card_failures': {
    tables: {
      // Consecutive failed refreshes per agent (src/fleet/card-cache.ts), so `stale` survives
      // restarts and short runs such as `fleetgate agents`.
      fleetgate_card_failure: {
        columns: {
          agent: 'text primary key',
          url: 'text not null',
          failures: 'integer not null',
          last_error_code: 'text not null',
          last_error_message: 'text not null',
          last_attempt_at: 'bigint not null',
        },
      },
    },
  },
};
