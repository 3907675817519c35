/**
 * Which skill a proxied call invokes. An A2A `SendMessage` names none, so the proxy reads, in
 * order: a skill hint in the message metadata, then in the request metadata (`x-effect-domain-skill`,
 * which effect-domain-v1 callers already send, then `fleetgate.skill`); else the agent's only
 * skill; else the skill with the agent's widest effective radius gates the call (an unknown radius
 * counts as the widest: the gate fails closed), and the reason says so.
 */
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { BlastRadius } from '../../protocol/index.js';
import { BLAST_ORDER, SKILL_HINT_KEYS } from '../../protocol/index.js';

/** How the skill of a call was chosen. */
export interface ResolvedSkill {
  skill: string;
  via: 'hint' | 'only-skill' | 'widest-radius';
  /** One sentence for the client and the approver. */
  reason: string;
}

function hintIn(metadata: Record<string, unknown> | undefined): string | undefined {
  if (metadata === undefined) return undefined;
  for (const key of SKILL_HINT_KEYS) {
    const value = metadata[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/**
 * Resolves the skill of one call.
 *
 * @throws RequestMalformedError (A2A `-32602`) when the hint names a skill the agent does not
 *   have, or the agent declares no skill at all.
 */
export function resolveSkill(options: {
  agent: string;
  /** The skill ids of the agent's card, in card order. */
  skills: readonly string[];
  messageMetadata: Record<string, unknown> | undefined;
  requestMetadata: Record<string, unknown> | undefined;
  /** The effective radius of a skill; undefined when unknown. */
  radius: (skill: string) => BlastRadius | undefined;
}): ResolvedSkill {
  const { agent, skills } = options;
  const hint = hintIn(options.messageMetadata) ?? hintIn(options.requestMetadata);
  if (hint !== undefined) {
    if (!skills.includes(hint)) {
      throw new RequestMalformedError(
        `metadata "${SKILL_HINT_KEYS.join('" / "')}": agent ${agent} has no skill "${hint}" (its skills: ${skills.join(', ') || 'none'}).`,
      );
    }
    return { skill: hint, via: 'hint', reason: `skill ${hint} named in the metadata` };
  }
  if (skills.length === 1) {
    return {
      skill: skills[0]!,
      via: 'only-skill',
      reason: `${skills[0]!} is the agent's only skill`,
    };
  }
  if (skills.length === 0) {
    throw new RequestMalformedError(
      `Agent ${agent} declares no skill; name one in the metadata under "${SKILL_HINT_KEYS[0]}".`,
    );
  }
  const rank = (skill: string): number => {
    const r = options.radius(skill);
    return r === undefined ? Number.POSITIVE_INFINITY : BLAST_ORDER[r];
  };
  let widest = skills[0]!;
  for (const skill of skills) if (rank(skill) > rank(widest)) widest = skill;
  const radius = options.radius(widest) ?? 'unknown';
  return {
    skill: widest,
    via: 'widest-radius',
    reason:
      `no skill named (metadata "${SKILL_HINT_KEYS.join('" or "')}"): the call is gated as ` +
      `${widest}, the agent's widest radius (${radius})`,
  };
}
