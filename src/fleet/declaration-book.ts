import type { DeclarationChangedEvent } from '../protocol/index.js';
import type {
  BlastRadius,
  Declarations,
  HitlMode,
  HitlModeDeclaration,
} from '../protocol/index.js';
import {
  BLAST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  maxHitlMode,
  maxRadius,
} from '../protocol/index.js';
import type { AgentEntry } from './agent-config.js';
import type { BlastRegistry, EffectDomainRegistry, HitlModeRegistry } from './blast-registry.js';
import type { Provenance } from './declaration-registry.js';
import type { DeclarationRatchet, RatchetObservation } from './ratchet.js';

/**
 * Where an effective value comes from: the card's declaration, the level the ratchet holds while
 * a narrowing waits for acknowledgement, an operator floor (config) or a learned floor
 * (reconciliation). `unknown`: nothing is declared, or the card is stale — the policy applies its
 * unknown rule.
 */
export type EffectiveSource =
  'declared' | 'acknowledged' | 'operator-floor' | 'learned-floor' | 'unknown';

/** The effective radius of a skill and what it is made of. */
export interface EffectiveRadius {
  /**
   * max(declared, accepted, floor); `undefined` when the skill declares no radius (unknown: the
   * policy applies its unknown rule, then the floor).
   */
  radius: BlastRadius | undefined;
  /** Which input `radius` comes from (the first of declared, ratchet, floor at that level). */
  source: EffectiveSource;
  declared: BlastRadius | undefined;
  /** The level the ratchet holds (a narrowing waits for acknowledgement). */
  accepted: BlastRadius | undefined;
  /** A narrower declared radius waiting for acknowledgement. */
  pending: BlastRadius | undefined;
  /** max(operator floor, learned floor). */
  floor: BlastRadius | undefined;
  /** Which floor `floor` is; the operator's when both are at the same level. */
  floorSource: 'operator' | 'learned' | undefined;
  /** True while the card is stale: the policy falls back to its unknown rule. */
  stale: boolean;
}

/** The effective hitl mode of a skill (same ratchet as radii). */
export interface EffectiveHitlMode {
  mode: HitlMode | undefined;
  source: Extract<EffectiveSource, 'declared' | 'acknowledged' | 'unknown'>;
  declared: HitlMode | undefined;
  accepted: HitlMode | undefined;
  pending: HitlMode | undefined;
  vetoTtlMs: number | undefined;
  stale: boolean;
}

/** Learned floors (raised by reconciliation), read alongside the configured ones. */
export interface FloorSource {
  floor(agent: string, skill: string): BlastRadius | undefined;
  /** Increases whenever a floor changes, so the book's lookup cache knows to recompute. */
  readonly version: number;
}

/** The declaration registries the book fills (it is their only writer). */
export interface FleetRegistries {
  blast: BlastRegistry;
  hitlMode: HitlModeRegistry;
  effectDomain: EffectDomainRegistry;
}

/** Where the book reads operator floors: the agent directory. */
export interface OperatorFloorSource {
  get(name: string): Pick<AgentEntry, 'floors'> | undefined;
  readonly version: number;
}

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

const NOTHING: ReadonlyMap<string, never> = new Map<string, never>();

const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

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
  /** Effective radii by agent and skill, valid while the versions they were derived from hold. */
  const cache = new Map<string, Map<string, EffectiveRadius>>();
  const versions = [-1, -1, -1, -1];
  /** Agents whose card the book has seen: a first card announces no removed skills. */
  const known = new Set<string>();

  function operatorFloor(agent: string, skill: string): BlastRadius | undefined {
    return directory.get(agent)?.floors.get(skill);
  }

  function floorOf(agent: string, skill: string): Pick<EffectiveRadius, 'floor' | 'floorSource'> {
    const operator = operatorFloor(agent, skill);
    const learned = floors?.floor(agent, skill);
    const floor = maxRadius(operator, learned);
    const floorSource =
      floor === undefined ? undefined : floor === operator ? 'operator' : 'learned';
    return { floor, floorSource };
  }

  function computeRadius(agent: string, skill: string): EffectiveRadius {
    const { declaration, stale } = registries.blast.lookup(agent, skill);
    const declared = declaration?.radius;
    const accepted = ratchet.accepted('blast', agent, skill);
    const { floor, floorSource } = floorOf(agent, skill);
    const radius = declared === undefined ? undefined : maxRadius(declared, accepted, floor);
    let source: EffectiveSource = 'unknown';
    if (radius !== undefined && !stale) {
      if (radius === declared) source = 'declared';
      else if (radius === accepted) source = 'acknowledged';
      else source = floorSource === 'operator' ? 'operator-floor' : 'learned-floor';
    }
    return {
      radius,
      source,
      declared,
      accepted,
      pending: ratchet.pending('blast', agent, skill),
      floor,
      floorSource,
      stale,
    };
  }

  function effectiveRadius(agent: string, skill: string): EffectiveRadius {
    // The policy asks on every call and dashboards for every skill: answer from a cache that any
    // change of the registry, ratchet, directory or learned floors invalidates.
    const blast = registries.blast.version;
    const held = ratchet.version;
    const dir = directory.version;
    const learned = floors?.version ?? 0;
    if (
      versions[0] !== blast ||
      versions[1] !== held ||
      versions[2] !== dir ||
      versions[3] !== learned
    ) {
      cache.clear();
      versions[0] = blast;
      versions[1] = held;
      versions[2] = dir;
      versions[3] = learned;
    }
    let skills = cache.get(agent);
    let found = skills?.get(skill);
    if (found === undefined) {
      found = Object.freeze(computeRadius(agent, skill));
      if (skills === undefined) {
        skills = new Map();
        cache.set(agent, skills);
      }
      skills.set(skill, found);
    }
    return found;
  }

  function effectiveHitlMode(agent: string, skill: string): EffectiveHitlMode {
    const { declaration, stale } = registries.hitlMode.lookup(agent, skill);
    const declared = declaration?.mode;
    const accepted = ratchet.accepted('hitl', agent, skill);
    const mode = declared === undefined ? undefined : maxHitlMode(declared, accepted);
    const source =
      mode === undefined || stale ? 'unknown' : mode === declared ? 'declared' : 'acknowledged';
    return {
      mode,
      source,
      declared,
      accepted,
      pending: ratchet.pending('hitl', agent, skill),
      vetoTtlMs: declaration?.vetoTtlMs,
      stale,
    };
  }

  function replace(agent: string, d: Declarations, provenance: Provenance): void {
    known.add(agent);
    registries.blast.replaceAgent(agent, d.blast, provenance);
    registries.hitlMode.replaceAgent(agent, d.hitlMode, provenance);
    registries.effectDomain.replaceAgent(agent, d.effectDomain, provenance);
  }

  async function apply(
    agent: string,
    d: Declarations,
    provenance: Provenance,
  ): Promise<DeclarationChangedEvent[]> {
    const firstCard = !known.has(agent);
    // A first card has nothing before it: skip copying three empty maps.
    const oldBlast = firstCard ? NOTHING : registries.blast.forAgent(agent);
    const oldHitl = firstCard ? NOTHING : registries.hitlMode.forAgent(agent);
    const oldDomains = firstCard ? NOTHING : registries.effectDomain.forAgent(agent);
    replace(agent, d, provenance);

    // Same declaration as before, accepted as is, nothing pending: the ratchet has nothing to do.
    // The others are observed together: one write for the card, not one per skill.
    const observations: RatchetObservation[] = [];
    for (const skill of Object.keys(d.blast)) {
      const radius = d.blast[skill]!.radius;
      const before = oldBlast.get(skill)?.radius;
      if (before === radius && ratchet.holds('blast', agent, skill, radius)) continue;
      observations.push({ kind: 'blast', skill, declared: radius, previous: before });
    }
    for (const skill of Object.keys(d.hitlMode)) {
      const mode = d.hitlMode[skill]!.mode;
      const before = oldHitl.get(skill)?.mode;
      if (before === mode && ratchet.holds('hitl', agent, skill, mode)) continue;
      observations.push({ kind: 'hitl', skill, declared: mode, previous: before });
    }
    const ratchetChanges =
      observations.length === 0 ? [] : await ratchet.observeAll(agent, observations);
    const events: DeclarationChangedEvent[] = ratchetChanges.map((c) => ({
      agent,
      skill: c.skill,
      extension: c.kind === 'blast' ? BLAST_V1_URI : HITL_MODE_V1_URI,
      before: c.before ?? null,
      after: c.after,
      widened: c.widened,
      narrowed: c.narrowed,
    }));
    if (firstCard) return events;
    // Skills whose declaration disappeared are unknown again: say so.
    const gone = (extension: string, skill: string, before: unknown): void => {
      events.push({
        agent,
        skill,
        extension,
        before,
        after: null,
        widened: false,
        narrowed: false,
      });
    };
    for (const [skill, decl] of oldBlast) {
      if (!Object.hasOwn(d.blast, skill)) gone(BLAST_V1_URI, skill, decl.radius);
    }
    for (const [skill, decl] of oldHitl) {
      if (!Object.hasOwn(d.hitlMode, skill)) gone(HITL_MODE_V1_URI, skill, decl.mode);
    }
    const skills = new Set([...oldDomains.keys(), ...Object.keys(d.effectDomain)]);
    for (const skill of skills) {
      const before = oldDomains.get(skill)?.domains;
      const after = own(d.effectDomain, skill)?.domains;
      const b = new Set(before ?? []);
      const a = new Set(after ?? []);
      const widened = [...a].some((x) => !b.has(x));
      const narrowed = [...b].some((x) => !a.has(x));
      if (widened || narrowed) {
        events.push({
          agent,
          skill,
          extension: EFFECT_DOMAIN_V1_URI,
          before: before ?? null,
          after: after ?? null,
          widened,
          narrowed,
        });
      }
    }
    return events;
  }

  return {
    apply,
    restore: replace,
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
    floor: (agent, skill) => floorOf(agent, skill).floor,
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
