/**
 * The effective declarations of a skill (`declaration-book.ts`): what its card declares, raised by
 * the level the narrowing ratchet holds and by the operator and learned floors.
 */
import type { BlastRadius, HitlMode } from '../protocol/index.js';
import { maxHitlMode, maxRadius } from '../protocol/index.js';
import type { AgentEntry } from './agent-config.js';
import type { BlastRegistry, HitlModeRegistry } from './blast-registry.js';
import type { DeclarationRatchet } from './ratchet.js';

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

/** Where the book reads operator floors: the agent directory. */
export interface OperatorFloorSource {
  get(name: string): Pick<AgentEntry, 'floors'> | undefined;
  readonly version: number;
}

/**
 * Computes effective radii and hitl modes; the radii are cached, since the policy asks on every
 * call and dashboards for every skill.
 */
export class EffectiveDeclarations {
  readonly #registries: { blast: BlastRegistry; hitlMode: HitlModeRegistry };
  readonly #ratchet: DeclarationRatchet;
  readonly #directory: OperatorFloorSource;
  readonly #floors: FloorSource | undefined;
  /** Effective radii by agent and skill, valid while the versions they were derived from hold. */
  readonly #cache = new Map<string, Map<string, EffectiveRadius>>();
  readonly #versions = [-1, -1, -1, -1];

  constructor(
    registries: { blast: BlastRegistry; hitlMode: HitlModeRegistry },
    ratchet: DeclarationRatchet,
    directory: OperatorFloorSource,
    floors: FloorSource | undefined,
  ) {
    this.#registries = registries;
    this.#ratchet = ratchet;
    this.#directory = directory;
    this.#floors = floors;
  }

  #operatorFloor(agent: string, skill: string): BlastRadius | undefined {
    return this.#directory.get(agent)?.floors.get(skill);
  }

  /** The floor of a skill: max(operator floor, learned floor), and which one it is. */
  floor(agent: string, skill: string): Pick<EffectiveRadius, 'floor' | 'floorSource'> {
    const operator = this.#operatorFloor(agent, skill);
    const learned = this.#floors?.floor(agent, skill);
    const floor = maxRadius(operator, learned);
    const floorSource =
      floor === undefined ? undefined : floor === operator ? 'operator' : 'learned';
    return { floor, floorSource };
  }

  #computeRadius(agent: string, skill: string): EffectiveRadius {
    const { declaration, stale } = this.#registries.blast.lookup(agent, skill);
    const declared = declaration?.radius;
    const accepted = this.#ratchet.accepted('blast', agent, skill);
    const { floor, floorSource } = this.floor(agent, skill);
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
      pending: this.#ratchet.pending('blast', agent, skill),
      floor,
      floorSource,
      stale,
    };
  }

  /** The effective radius of a skill (frozen, shared by every caller until something changes). */
  radius(agent: string, skill: string): EffectiveRadius {
    // The policy asks on every call and dashboards for every skill: answer from a cache that any
    // change of the registry, ratchet, directory or learned floors invalidates.
    const versions = this.#versions;
    const cache = this.#cache;
    const blast = this.#registries.blast.version;
    const held = this.#ratchet.version;
    const dir = this.#directory.version;
    const learned = this.#floors?.version ?? 0;
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
      found = Object.freeze(this.#computeRadius(agent, skill));
      if (skills === undefined) {
        skills = new Map();
        cache.set(agent, skills);
      }
      skills.set(skill, found);
    }
    return found;
  }

  /** The effective hitl mode of a skill. */
  hitlMode(agent: string, skill: string): EffectiveHitlMode {
    const { declaration, stale } = this.#registries.hitlMode.lookup(agent, skill);
    const declared = declaration?.mode;
    const accepted = this.#ratchet.accepted('hitl', agent, skill);
    const mode = declared === undefined ? undefined : maxHitlMode(declared, accepted);
    const source =
      mode === undefined || stale ? 'unknown' : mode === declared ? 'declared' : 'acknowledged';
    return {
      mode,
      source,
      declared,
      accepted,
      pending: this.#ratchet.pending('hitl', agent, skill),
      vetoTtlMs: declaration?.vetoTtlMs,
      stale,
    };
  }
}
