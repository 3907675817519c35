/**
 * Card declarations of the demo agents, from one table per agent: blast-v1 radius, hitl-mode-v1
 * mode and effect-domain-v1 domains per skill, plus cost-v1.
 */
import type { AgentCard } from '@a2a-js/sdk';
import {
  declareBlast,
  declareCost,
  declareEffectDomain,
  declareHitlMode,
} from '../../src/agent/index.js';
import type { BlastRadius, HitlMode } from '../../src/protocol/index.js';

/** What one demo skill declares. */
export interface DemoSkill {
  radius: BlastRadius;
  mode: HitlMode;
  vetoTtlMs?: number;
  domains: string[];
  description: string;
}

/**
 * Declares a table of skills on the card with the agent-author kit: blast-v1, hitl-mode-v1,
 * effect-domain-v1 and cost-v1 (each helper checks what it writes as the gateway reads it).
 */
export function declare(
  skills: Readonly<Record<string, DemoSkill>>,
): (card: AgentCard) => AgentCard {
  const table = Object.entries(skills);
  return (card) =>
    declareCost(
      declareEffectDomain(
        declareHitlMode(
          declareBlast(card, Object.fromEntries(table.map(([id, s]) => [id, s.radius]))),
          Object.fromEntries(
            table.map(([id, s]) => [
              id,
              s.vetoTtlMs === undefined ? s.mode : { mode: s.mode, vetoTtlMs: s.vetoTtlMs },
            ]),
          ),
        ),
        Object.fromEntries(table.map(([id, s]) => [id, { domains: s.domains }])),
      ),
    );
}

/** The card's skill list for a table of skills. */
export function skillList(
  skills: Readonly<Record<string, DemoSkill>>,
): { id: string; description: string }[] {
  return Object.entries(skills).map(([id, s]) => ({ id, description: s.description }));
}
