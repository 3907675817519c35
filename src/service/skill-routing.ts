/**
 * Skill routing, the blast-v1 planner tie-breaker: a dispatch that names a skill but no agent
 * goes to one of the agents offering it — fresh cards first, then the narrowest effective radius
 * (`compareRadius`; an unknown radius counts as wider than `public`), then the better recent
 * success rate from the cost summaries, then the name. The choice and the reasons are returned.
 */
import type { BlastRadius } from '../protocol/index.js';
import { FleetgateError, compareRadius } from '../protocol/index.js';
import type { Gateway } from './gateway-types.js';
import { cardSkills } from './fleet-view.js';

/** One agent that offers the skill, as the router weighed it. */
export interface RouteCandidate {
  agent: string;
  status: string;
  effectiveRadius: BlastRadius | null;
  /** Recent success rate (0 … 1) from the cost summaries; null without samples. */
  successRate: number | null;
  samples: number;
}

/** The router's choice. */
export interface SkillRoute {
  agent: string;
  /** Why this agent, in the order the rules were applied. */
  reasons: string[];
  candidates: RouteCandidate[];
}

const FRESH_FIRST: Readonly<Record<string, number>> = { fresh: 0, pending: 1, failed: 2, stale: 3 };

function byRadius(a: BlastRadius | null, b: BlastRadius | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return compareRadius(a, b);
}

/**
 * Chooses the agent for `skill`.
 *
 * @throws FleetgateError `FLEETGATE_SKILL_UNKNOWN` when no agent's card offers the skill.
 */
export function routeSkill(gw: Pick<Gateway, 'agents' | 'costs'>, skill: string): SkillRoute {
  const candidates: RouteCandidate[] = [];
  for (const state of gw.agents.states()) {
    if (!cardSkills(state.card).some((s) => s.id === skill)) continue;
    const summary = gw.costs.summary(state.name, skill);
    candidates.push({
      agent: state.name,
      status: state.status,
      effectiveRadius: gw.agents.effectiveRadius(state.name, skill).radius ?? null,
      successRate: summary === undefined || summary.samples === 0 ? null : summary.successRate,
      samples: summary?.samples ?? 0,
    });
  }
  if (candidates.length === 0) {
    throw new FleetgateError(
      'FLEETGATE_SKILL_UNKNOWN',
      `No agent of the fleet offers skill ${skill}.`,
      {
        details: { skill },
      },
    );
  }
  const ranked = [...candidates].sort(
    (a, b) =>
      (FRESH_FIRST[a.status] ?? 9) - (FRESH_FIRST[b.status] ?? 9) ||
      byRadius(a.effectiveRadius, b.effectiveRadius) ||
      (b.successRate ?? -1) - (a.successRate ?? -1) ||
      a.agent.localeCompare(b.agent),
  );
  const chosen = ranked[0]!;
  const reasons: string[] = [];
  if (ranked.length === 1) {
    reasons.push(`${chosen.agent} is the only agent offering ${skill}`);
  } else {
    const others = ranked.slice(1);
    const radius = (r: BlastRadius | null): string => r ?? 'unknown';
    if (others.some((o) => (FRESH_FIRST[o.status] ?? 9) > (FRESH_FIRST[chosen.status] ?? 9))) {
      reasons.push(`card ${chosen.status} (fresh cards first)`);
    }
    const sameStatus = others.filter((o) => o.status === chosen.status);
    if (sameStatus.some((o) => byRadius(o.effectiveRadius, chosen.effectiveRadius) > 0)) {
      reasons.push(`narrowest effective radius ${radius(chosen.effectiveRadius)}`);
    }
    const tied = sameStatus.filter(
      (o) => byRadius(o.effectiveRadius, chosen.effectiveRadius) === 0,
    );
    if (tied.some((o) => (o.successRate ?? -1) < (chosen.successRate ?? -1))) {
      reasons.push(
        `best recent success rate ${Math.round((chosen.successRate ?? 0) * 100)}% over ${chosen.samples} calls`,
      );
    } else if (tied.length > 0) {
      reasons.push('tie on status, radius and success rate: first by name');
    }
  }
  return { agent: chosen.agent, reasons, candidates: ranked };
}
