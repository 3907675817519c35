/**
 * The declaration book: its interface and the factory over its two parts — what a card writes
 * (`declaration-changes.ts`) and what is in effect (`effective-declarations.ts`).
 */
import type {
  BlastRadius,
  DeclarationChangedEvent,
  Declarations,
  HitlModeDeclaration,
} from '../protocol/index.js';
import type { FleetRegistries } from './declaration-changes.js';
import { applyDeclarations, replaceDeclarations } from './declaration-changes.js';
import type { Provenance } from './declaration-registry.js';
import type {
  EffectiveHitlMode,
  EffectiveRadius,
  FloorSource,
  OperatorFloorSource,
} from './effective-declarations.js';
import { EffectiveDeclarations } from './effective-declarations.js';
import type { DeclarationRatchet } from './ratchet.js';

export type {
  EffectiveHitlMode,
  EffectiveRadius,
  EffectiveSource,
  FloorSource,
  OperatorFloorSource,
} from './effective-declarations.js';
export type { FleetRegistries } from './declaration-changes.js';

/** Options of {@link createDeclarationBook}. */
export interface DeclarationBookOptions {
  registries: FleetRegistries;
  ratchet: DeclarationRatchet;
  /** Operator floors (`agents[].floors` of the config). */
  directory: OperatorFloorSource;
  /** Learned floors. */
  floors?: FloorSource;
}

/**
 * The effective declarations of the fleet, in one place: what cards declare (the registries), the
 * narrowing ratchet, operator floors and learned floors. The card refresher feeds it; the policy,
 * alerts, dashboards and the stamping extensions read it. It is the only writer of the blast,
 * hitl-mode and effect-domain registries.
 */
export interface DeclarationBook {
  /**
   * Applies a freshly read card: replaces the agent's declarations as a whole, lets the ratchet
   * observe each radius and mode, and returns the `fleet.declaration.changed` payloads to publish
   * (nothing is published here).
   */
  apply(
    agent: string,
    declarations: Declarations,
    provenance: Provenance,
  ): Promise<DeclarationChangedEvent[]>;
  /** Puts back a cached card's declarations at start-up (no ratchet observation, no events). */
  restore(agent: string, declarations: Declarations, provenance: Provenance): void;
  /** Marks an agent's declarations stale (its card failed repeatedly) or fresh. */
  setStale(agent: string, stale: boolean): void;
  /** Forgets an agent (removed from the directory). */
  clear(agent: string): void;
  /** The configured floor of a skill, raised by a learned floor when there is one. */
  floor(agent: string, skill: string): BlastRadius | undefined;
  effectiveRadius(agent: string, skill: string): EffectiveRadius;
  effectiveHitlMode(agent: string, skill: string): EffectiveHitlMode;
  /** The domains a skill declared in effect-domain-v1 params; undefined when it declared none. */
  declaredDomains(agent: string, skill: string): readonly string[] | undefined;
  /**
   * What the blast-v1 and hitl-mode-v1 extensions stamp: the effective radius and mode, so an
   * agent is never told a narrower level than the one the gate applies.
   */
  readonly stamps: {
    radius(agent: string, skill: string): BlastRadius | undefined;
    hitlMode(agent: string, skill: string): HitlModeDeclaration | undefined;
  };
}

/**
 * Creates the declaration book.
 *
 * @example
 * ```ts
 * const book = createDeclarationBook({ registries, ratchet, directory, floors: learned });
 * book.effectiveRadius('quinn', 'pr_review'); // { radius: 'repo', source: 'declared', … }
 * ```
 */
export function createDeclarationBook(options: DeclarationBookOptions): DeclarationBook {
  const { registries, ratchet, directory, floors } = options;
  const effective = new EffectiveDeclarations(registries, ratchet, directory, floors);
  /** Agents whose card the book has seen: a first card announces no removed skills. */
  const known = new Set<string>();
  const writer = { registries, ratchet, known };

  function effectiveRadius(agent: string, skill: string): EffectiveRadius {
    return effective.radius(agent, skill);
  }

  function effectiveHitlMode(agent: string, skill: string): EffectiveHitlMode {
    return effective.hitlMode(agent, skill);
  }

  return {
    apply: (agent, d, provenance) => applyDeclarations(writer, agent, d, provenance),
    restore: (agent, d, provenance) => replaceDeclarations(writer, agent, d, provenance),
    setStale(agent, stale) {
      registries.blast.setStale(agent, stale);
      registries.hitlMode.setStale(agent, stale);
      registries.effectDomain.setStale(agent, stale);
    },
    clear(agent) {
      known.delete(agent);
      registries.blast.clearAgent(agent);
      registries.hitlMode.clearAgent(agent);
      registries.effectDomain.clearAgent(agent);
    },
    floor: (agent, skill) => effective.floor(agent, skill).floor,
    effectiveRadius,
    effectiveHitlMode,
    declaredDomains: (agent, skill) => registries.effectDomain.get(agent, skill)?.domains,
    stamps: {
      radius: (agent, skill) => effectiveRadius(agent, skill).radius,
      hitlMode(agent, skill) {
        const m = effectiveHitlMode(agent, skill);
        if (m.mode === undefined) return undefined;
        // The veto window belongs to a declared veto; a mode raised past it carries none.
        return m.vetoTtlMs === undefined || m.mode !== m.declared
          ? { mode: m.mode }
          : { mode: m.mode, vetoTtlMs: m.vetoTtlMs };
      },
    },
  };
}
