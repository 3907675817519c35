import type { BlastRadius } from '../protocol/index.js';
import { compareRadius } from '../protocol/index.js';
import type { FloorSource } from './declaration-book.js';

/** One learned floor: the narrowest radius a skill is treated as, learned from what it did. */
export interface LearnedFloorEntry {
  agent: string;
  skill: string;
  radius: BlastRadius;
}

/**
 * The floors reconciliation learned from observed violations (`learnFloors: true`), kept in the
 * store (by the alerts) and applied by the declaration book alongside the configured ones. Pass
 * {@link raise} as the floor writer's `onRaised`, so a raise takes effect on the very next lookup.
 *
 * @example
 * ```ts
 * const learned = LearnedFloors.from(await listLearnedFloors(store.db));
 * const writer = createStoreFloorWriter({ db: store.db, kind: store.kind, onRaised: (f) => learned.raise(f) });
 * createCardBroker({ ..., floors: learned });
 * ```
 */
export class LearnedFloors implements FloorSource {
  readonly #floors = new Map<string, Map<string, BlastRadius>>();
  #version = 0;

  get version(): number {
    return this.#version;
  }

  /**
   * Starts from the floors learned so far (the alerts' `listLearnedFloors(db)`; the composition
   * root reads them, so the fleet needs nothing of the alerts).
   */
  static from(floors: Iterable<LearnedFloorEntry>): LearnedFloors {
    const learned = new LearnedFloors();
    for (const floor of floors) learned.raise(floor);
    return learned;
  }

  floor(agent: string, skill: string): BlastRadius | undefined {
    return this.#floors.get(agent)?.get(skill);
  }

  /** Applies a learned floor; a floor only ever widens. */
  raise(floor: LearnedFloorEntry): void {
    let skills = this.#floors.get(floor.agent);
    if (skills === undefined) {
      skills = new Map();
      this.#floors.set(floor.agent, skills);
    }
    const current = skills.get(floor.skill);
    if (current !== undefined && compareRadius(floor.radius, current) <= 0) return;
    skills.set(floor.skill, floor.radius);
    this.#version += 1;
  }
}
