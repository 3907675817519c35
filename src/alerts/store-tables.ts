/**
 * The alerts' table (learned floors): row type and migration. The composition root hands
 * {@link ALERTS_MIGRATIONS} to the store after the world's (migration names are permanent).
 */
import type { StoreMigration } from '../store/index.js';

/**
 * `fleetgate_learned_floors`: operator floors learned from blast violations (`learnFloors: true`),
 * one per (agent, skill). The fleet directory reads them as operator floors.
 */
export interface LearnedFloorTable {
  agent: string;
  skill: string;
  /** A blast radius (`self` … `public`). */
  radius: string;
  reason: string;
  /** Epoch milliseconds of the last raise. */
  updated_at: number;
}

/** The alerts tables. */
export interface AlertsDatabase {
  fleetgate_learned_floors: LearnedFloorTable;
}

/** The alerts' migrations (`fleetgate_learned_floors`), by name. */
export const ALERTS_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  // Created inside `0003_world` when that migration shipped; the name stays so an already
  // migrated store runs nothing. The store runs the parts of one name in the order given.
  '0003_world': {
    // Operator floors learned from blast violations.
    tables: {
      fleetgate_learned_floors: {
        columns: {
          agent: 'text not null',
          skill: 'text not null',
          radius: 'text not null',
          reason: 'text not null',
          updated_at: 'bigint not null',
        },
        primaryKey: ['agent', 'skill'],
      },
    },
  },
};
