/**
 * What a card does to the declaration book (`declaration-book.ts`): its declarations replace the
 * agent's in the registries, the ratchet observes each radius and mode, and the changes come back
 * as `fleet.declaration.changed` payloads.
 */
import type { DeclarationChangedEvent, Declarations } from '../protocol/index.js';
import { BLAST_V1_URI, EFFECT_DOMAIN_V1_URI, HITL_MODE_V1_URI } from '../protocol/index.js';
import type { BlastRegistry, EffectDomainRegistry, HitlModeRegistry } from './blast-registry.js';
import type { Provenance } from './declaration-registry.js';
import type { DeclarationRatchet, RatchetObservation } from './ratchet.js';

/** The declaration registries the book fills (it is their only writer). */
export interface FleetRegistries {
  blast: BlastRegistry;
  hitlMode: HitlModeRegistry;
  effectDomain: EffectDomainRegistry;
}

/** What the book writes a card into. */
export interface DeclarationWriter {
  registries: FleetRegistries;
  ratchet: DeclarationRatchet;
  /** Agents whose card the book has seen: a first card announces no removed skills. */
  known: Set<string>;
}

const NOTHING: ReadonlyMap<string, never> = new Map<string, never>();

const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

/** Replaces an agent's declarations in the registries (no ratchet observation, no events). */
export function replaceDeclarations(
  writer: DeclarationWriter,
  agent: string,
  d: Declarations,
  provenance: Provenance,
): void {
  const { registries } = writer;
  writer.known.add(agent);
  registries.blast.replaceAgent(agent, d.blast, provenance);
  registries.hitlMode.replaceAgent(agent, d.hitlMode, provenance);
  registries.effectDomain.replaceAgent(agent, d.effectDomain, provenance);
}

/**
 * Applies a freshly read card (see `DeclarationBook.apply`) and returns the
 * `fleet.declaration.changed` payloads to publish.
 */
export async function applyDeclarations(
  writer: DeclarationWriter,
  agent: string,
  d: Declarations,
  provenance: Provenance,
): Promise<DeclarationChangedEvent[]> {
  const { registries, ratchet } = writer;
  const firstCard = !writer.known.has(agent);
  // A first card has nothing before it: skip copying three empty maps.
  const oldBlast = firstCard ? NOTHING : registries.blast.forAgent(agent);
  const oldHitl = firstCard ? NOTHING : registries.hitlMode.forAgent(agent);
  const oldDomains = firstCard ? NOTHING : registries.effectDomain.forAgent(agent);
  replaceDeclarations(writer, agent, d, provenance);

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
