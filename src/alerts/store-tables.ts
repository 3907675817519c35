/**
 * Row types of the alerts tables (created by the store's `0003_world` migration). The store's
 * `FleetgateDatabase` includes {@link AlertsDatabase}.
 */

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
