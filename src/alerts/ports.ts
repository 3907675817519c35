/**
 * The ports through which the alerts persist learned floors. Declarations are read through the
 * protocol's `DeclarationLookup`; the fleet implements both and the composition root wires them,
 * so `src/alerts` never imports `src/fleet`.
 */
import type { BlastRadius } from '../protocol/index.js';

/** Persists a learned operator floor (learnFloors: true). */
export interface FloorWriter {
  raiseFloor(agent: string, skill: string, radius: BlastRadius, reason: string): Promise<void>;
}
