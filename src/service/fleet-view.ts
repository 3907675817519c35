/**
 * The fleet as the HTTP API and the dashboard show it: one entry per agent with its card status
 * and, per skill, the declared radius, the floor, the effective radius, the hitl mode and the
 * domains it may touch.
 */
import type { AgentCardState } from '../fleet/index.js';
import type { BlastRadius, Diagnostic, HitlMode } from '../protocol/index.js';
import { FleetgateError } from '../protocol/index.js';
import type { Gateway } from './gateway-types.js';

/** One skill of an agent, with what is in effect for it. */
export interface SkillView {
  id: string;
  name: string | undefined;
  declaredRadius: BlastRadius | null;
  floor: BlastRadius | null;
  /** max(declared, acknowledged, floor); null when unknown (the policy's unknown rule applies). */
  effectiveRadius: BlastRadius | null;
  /** A narrower radius the card declares, waiting for an operator's acknowledgement. */
  pendingRadius: BlastRadius | null;
  hitlMode: HitlMode | null;
  vetoTtlMs: number | null;
  domains: string[] | null;
}

/** One agent of the fleet. */
export interface AgentView {
  name: string;
  url: string | null;
  status: AgentCardState['status'];
  description: string | null;
  /** Epoch milliseconds. */
  lastFetchedAt: number | null;
  lastChangedAt: number | null;
  nextRefreshAt: number | null;
  failures: number;
  lastError: { code: string; message: string } | null;
  skills: SkillView[];
  diagnostics: Diagnostic[];
}

/**
 * Refuses a call to an agent that is not configured (`FLEETGATE_AGENT_UNKNOWN`) or, once its card
 * is in, to a skill the card does not offer (`FLEETGATE_SKILL_UNKNOWN`): a typo is an error
 * naming what the fleet has, never a call held for an approval that could not help it. An agent
 * whose card has not loaded is called as configured (the gate treats its unknown radius).
 */
export function checkCallTarget(
  agents: Pick<Gateway['agents'], 'state' | 'states'>,
  agent: string,
  skill: string,
): void {
  const state = agents.state(agent);
  if (state === undefined) {
    const names = agents.states().map((s) => s.name);
    throw new FleetgateError(
      'FLEETGATE_AGENT_UNKNOWN',
      `No agent named ${agent} is configured (configured: ${names.join(', ') || 'none'}).`,
      { details: { agent, agents: names } },
    );
  }
  if (state.card === undefined || state.card === null) return;
  // Every dispatch passes here: the list of the card's skills is built only to refuse.
  if (!listsSkill(state.card, skill)) {
    const skills = cardSkills(state.card).map((s) => s.id);
    throw new FleetgateError(
      'FLEETGATE_SKILL_UNKNOWN',
      `Agent ${agent} offers no skill ${skill} (it offers ${skills.join(', ') || 'none'}).`,
      { details: { agent, skill, skills } },
    );
  }
}

/**
 * Whether `card` lists a skill `skill` (a skill {@link cardSkills} would name), read in place:
 * nothing is allocated.
 */
function listsSkill(card: unknown, skill: string): boolean {
  if (skill === '' || typeof card !== 'object' || card === null) return false;
  const skills = (card as { skills?: unknown }).skills;
  if (!Array.isArray(skills)) return false;
  for (let i = 0; i < skills.length; i += 1) {
    const s: unknown = skills[i];
    if (typeof s === 'object' && s !== null && (s as { id?: unknown }).id === skill) return true;
  }
  return false;
}

/** The skills a card lists, as `{ id, name }`. */
export function cardSkills(card: unknown): { id: string; name: string | undefined }[] {
  const skills =
    typeof card === 'object' && card !== null ? (card as { skills?: unknown }).skills : undefined;
  if (!Array.isArray(skills)) return [];
  return skills.flatMap((s: unknown) => {
    if (typeof s !== 'object' || s === null) return [];
    const { id, name } = s as { id?: unknown; name?: unknown };
    return typeof id === 'string' && id !== ''
      ? [{ id, name: typeof name === 'string' ? name : undefined }]
      : [];
  });
}

/** The view of one agent's card state. */
export function agentView(gw: Pick<Gateway, 'agents'>, state: AgentCardState): AgentView {
  const broker = gw.agents;
  const card = state.card as { description?: unknown } | undefined;
  return {
    name: state.name,
    url: broker.get(state.name)?.url ?? null,
    status: state.status,
    description: typeof card?.description === 'string' ? card.description : null,
    lastFetchedAt: state.lastFetchedAt ?? null,
    lastChangedAt: state.lastChangedAt ?? null,
    nextRefreshAt: state.nextRefreshAt ?? null,
    failures: state.failures,
    lastError: state.lastError ?? null,
    skills: cardSkills(state.card).map(({ id, name }) => {
      const r = broker.effectiveRadius(state.name, id);
      const m = broker.effectiveHitlMode(state.name, id);
      return {
        id,
        name,
        declaredRadius: r.declared ?? null,
        floor: r.floor ?? null,
        effectiveRadius: r.radius ?? null,
        pendingRadius: r.pending ?? null,
        hitlMode: m.mode ?? null,
        vetoTtlMs: m.vetoTtlMs ?? null,
        domains: (() => {
          const d = broker.declaredDomains(state.name, id);
          return d === undefined ? null : [...d];
        })(),
      };
    }),
    diagnostics: state.diagnostics,
  };
}

/** Every agent of the fleet, in configuration order. */
export function fleetView(gw: Pick<Gateway, 'agents'>): AgentView[] {
  return gw.agents.states().map((state) => agentView(gw, state));
}
