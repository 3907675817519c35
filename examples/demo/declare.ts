/**
 * Card declarations of the demo agents, from one table per agent: blast-v1 radius, hitl-mode-v1
 * mode and effect-domain-v1 domains per skill, plus cost-v1.
 */
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
} from '../../src/protocol/index.js';
import type { ExampleExtensionDeclaration } from '../agents/harness.js';

/** What one demo skill declares. */
export interface DemoSkill {
  radius: string;
  mode: string;
  vetoTtlMs?: number;
  domains: string[];
  description: string;
}

/** The card's extension entries for a table of skills. */
export function declare(
  skills: Readonly<Record<string, DemoSkill>>,
): ExampleExtensionDeclaration[] {
  const blast: Record<string, unknown> = {};
  const hitl: Record<string, unknown> = {};
  const domains: Record<string, unknown> = {};
  for (const [id, s] of Object.entries(skills)) {
    blast[id] = { radius: s.radius };
    hitl[id] =
      s.vetoTtlMs === undefined ? { mode: s.mode } : { mode: s.mode, vetoTtlMs: s.vetoTtlMs };
    domains[id] = { domains: s.domains };
  }
  return [
    { uri: BLAST_V1_URI, params: { skills: blast } },
    { uri: HITL_MODE_V1_URI, params: { skills: hitl } },
    { uri: EFFECT_DOMAIN_V1_URI, params: { skills: domains } },
    { uri: COST_V1_URI },
  ];
}

/** The card's skill list for a table of skills. */
export function skillList(
  skills: Readonly<Record<string, DemoSkill>>,
): { id: string; description: string }[] {
  return Object.entries(skills).map(([id, s]) => ({ id, description: s.description }));
}
