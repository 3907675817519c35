/**
 * The ports through which the alerts read declarations and persist learned floors. The fleet
 * directory (card broker and registries) implements them and the composition root wires them;
 * `src/alerts` never imports `src/fleet`.
 */
import type { BlastRadius } from '../protocol/index.js';

/** What the reconciliation needs to know about a skill, from the card broker's registries. */
export interface DeclarationLookup {
  /** Effective radius = max(declared, acknowledged, operator floor); radius undefined = unknown. stale = the card is stale. */
  effectiveRadius(
    agent: string,
    skill: string,
  ): { radius: BlastRadius | undefined; stale: boolean };
  /** Domains the skill declared in effect-domain-v1 params; undefined when the agent declared none for it. */
  declaredDomains(agent: string, skill: string): readonly string[] | undefined;
}

/** Persists a learned operator floor (learnFloors: true). */
export interface FloorWriter {
  raiseFloor(agent: string, skill: string, radius: BlastRadius, reason: string): Promise<void>;
}
