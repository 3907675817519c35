/**
 * Row types of the world-state tables (created by the store's `0003_world` migration). The
 * store's `FleetgateDatabase` includes {@link WorldDatabase}.
 */
import type { Generated } from 'kysely';

/** `fleetgate_world_domains`: one row per domain. */
export interface WorldDomainTable {
  name: string;
  version: number;
  /** The live domain object as JSON text. */
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

/** The world-state tables. */
export interface WorldDatabase {
  fleetgate_world_domains: WorldDomainTable;
  fleetgate_world_events: WorldEventTable;
  fleetgate_world_audit: WorldAuditTable;
}
