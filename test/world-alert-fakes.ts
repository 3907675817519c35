/** In-test implementations of the alerts ports (fakes implementing the interfaces). */
import type {
  BlastRadius,
  DeclarationLookup,
  EffectiveBlast,
  EffectiveHitl,
} from '../src/protocol/index.js';
import { maxRadius } from '../src/protocol/index.js';
import type { FloorWriter } from '../src/alerts/index.js';

/** One skill's declarations in a {@link FakeDeclarations}. */
export interface FakeSkill {
  radius?: BlastRadius;
  domains?: string[];
  stale?: boolean;
}

/** A {@link DeclarationLookup} over a fixed table; floors widen the effective radius. */
export class FakeDeclarations implements DeclarationLookup {
  readonly floors = new Map<string, BlastRadius>();

  constructor(private readonly skills: Record<string, FakeSkill>) {}

  blast(agent: string, skill: string): EffectiveBlast {
    const s = this.skills[`${agent}/${skill}`];
    const floor = this.floors.get(`${agent}/${skill}`);
    return { radius: maxRadius(s?.radius, floor), stale: s?.stale ?? false };
  }

  hitlMode(): EffectiveHitl {
    return { mode: undefined, vetoTtlMs: undefined, stale: false };
  }

  effectDomains(agent: string, skill: string): readonly string[] | undefined {
    return this.skills[`${agent}/${skill}`]?.domains;
  }
}

/** A {@link FloorWriter} that raises floors of a {@link FakeDeclarations} and records the calls. */
export class FakeFloorWriter implements FloorWriter {
  readonly calls: { agent: string; skill: string; radius: BlastRadius; reason: string }[] = [];
  failWith: Error | undefined;

  constructor(private readonly declarations?: FakeDeclarations) {}

  raiseFloor(agent: string, skill: string, radius: BlastRadius, reason: string): Promise<void> {
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    this.calls.push({ agent, skill, radius, reason });
    const key = `${agent}/${skill}`;
    this.declarations?.floors.set(key, maxRadius(this.declarations.floors.get(key), radius)!);
    return Promise.resolve();
  }
}
