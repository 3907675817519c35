/**
 * Card declaration helpers: blast-v1, hitl-mode-v1, effect-domain-v1 and cost-v1 entries written
 * into an agent card's `capabilities.extensions`, checked by the gateway's own reader
 * (`readDeclarations`), so a card they return passes `fleetgate lint-card`.
 */
import type {
  BlastDeclaration,
  BlastRadius,
  Diagnostic,
  EffectDomainDeclaration,
  HitlMode,
  HitlModeDeclaration,
} from '../protocol/index.js';
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  FleetgateError,
  HITL_MODE_V1_URI,
  canonicalExtensionUri,
  checkDeltaDomain,
  readDeclarations,
} from '../protocol/index.js';

/** One `capabilities.extensions` entry, as JSON cards and the SDK's `AgentExtension` both have it. */
export interface CardExtensionLike {
  uri: string;
  description?: string;
  required?: boolean;
  params?: Record<string, unknown> | undefined;
}

/**
 * The part of an agent card the helpers read and write: a JSON card (v1.0 or v0.3) or the SDK's
 * `AgentCard` object. Everything else on the card is kept as it is.
 */
export interface CardLike {
  name?: string | undefined;
  skills?: readonly { readonly id: string }[] | undefined;
  capabilities?:
    | {
        streaming?: boolean | undefined;
        pushNotifications?: boolean | undefined;
        extendedAgentCard?: boolean | undefined;
        extensions?: readonly CardExtensionLike[] | undefined;
      }
    | undefined;
}

/** A card as the helpers return it: the same card, with `capabilities.extensions` present. */
export type Declared<C extends CardLike> = C & {
  capabilities: { extensions: CardExtensionLike[] };
};

/**
 * The skill ids of a card: a literal union for a card typed `as const`, else `string`. Declaring
 * a skill the card does not list is then a compile error where the type knows the skills.
 */
export type SkillIdOf<C> = C extends { skills?: readonly (infer S)[] | undefined }
  ? S extends { readonly id: infer I extends string }
    ? I
    : string
  : string;

/** A skill's blast-v1 declaration: a radius, or a radius with a note. */
export type BlastInput = BlastRadius | BlastDeclaration;

/** A skill's hitl-mode-v1 declaration: a mode, or a mode with its options. */
export type HitlModeInput = HitlMode | HitlModeDeclaration;

/** A skill's effect-domain-v1 declaration: the domains it may change. */
export type EffectDomainInput = EffectDomainDeclaration | readonly string[];

const DESCRIPTIONS: Readonly<Record<string, string>> = {
  [BLAST_V1_URI]: 'blast-v1: how wide the effect of each skill can be',
  [HITL_MODE_V1_URI]: 'hitl-mode-v1: how a call of each skill is approved',
  [EFFECT_DOMAIN_V1_URI]: 'effect-domain-v1: the world-state changes each call made',
  [COST_V1_URI]: 'cost-v1: usage and cost of each call',
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string, details: Record<string, unknown>): FleetgateError {
  return new FleetgateError('FLEETGATE_DECLARATION_INVALID', message, { details });
}

/** The skill ids of `card.skills`; refuses a card without a list of skills. */
function cardSkills(card: CardLike, helper: string): Set<string> {
  if (!Array.isArray(card.skills)) {
    throw invalid(
      `${helper}: the card has no skills list (card.skills); declare its skills first`,
      {
        helper,
        path: 'skills',
      },
    );
  }
  const ids = new Set<string>();
  for (const skill of card.skills as readonly unknown[]) {
    if (isRecord(skill) && typeof skill.id === 'string') ids.add(skill.id);
  }
  return ids;
}

/**
 * Writes `params.skills` entries of one extension into a copy of the card and checks the result
 * with the gateway's reader. The first entry with this canonical URI is updated (an older alias is
 * renamed to the canonical URI); without one, an entry is appended.
 */
function declare<C extends CardLike>(
  card: C,
  uri: string,
  helper: string,
  skills: Readonly<Record<string, Record<string, unknown>>> | undefined,
): Declared<C> {
  if (!isRecord(card)) {
    throw invalid(`${helper}: the card must be an object`, { helper });
  }
  const ids = Object.keys(skills ?? {});
  if (ids.length > 0) {
    const known = cardSkills(card, helper);
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length > 0) {
      throw invalid(
        `${helper}: ${missing.map((id) => JSON.stringify(id)).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not in card.skills (${[...known].join(', ') || 'none'})`,
        { helper, skills: missing, path: 'skills' },
      );
    }
  }
  const capabilities = isRecord(card.capabilities) ? card.capabilities : {};
  const current: readonly CardExtensionLike[] = Array.isArray(capabilities.extensions)
    ? capabilities.extensions
    : [];
  let index = current.findIndex((e) => isRecord(e) && canonicalExtensionUri(e.uri) === uri);
  const extensions = [...current];
  const existing = index === -1 ? undefined : current[index];
  const entry: CardExtensionLike = {
    ...existing,
    uri,
    description: existing?.description || DESCRIPTIONS[uri] || uri,
    required: existing?.required ?? false,
    params: existing?.params,
  };
  // blast-v1 and hitl-mode-v1 always carry a `params.skills` map (the reader warns without one).
  const needsSkills = uri === BLAST_V1_URI || uri === HITL_MODE_V1_URI;
  if (skills !== undefined && (ids.length > 0 || needsSkills)) {
    const params = isRecord(entry.params) ? entry.params : {};
    const before = isRecord(params.skills) ? params.skills : {};
    entry.params = { ...params, skills: { ...before, ...skills } };
  }
  if (index === -1) {
    index = extensions.length;
    extensions.push(entry);
  } else {
    extensions[index] = entry;
  }
  const next = { ...card, capabilities: { ...capabilities, extensions } } as Declared<C>;
  check(next, index, helper);
  return next;
}

/** Every diagnostic the gateway's reader finds in the entry at `index` fails the helper. */
function check(card: CardLike, index: number, helper: string): void {
  const base = `capabilities.extensions[${index}]`;
  const problems: Diagnostic[] = readDeclarations(card).diagnostics.filter(
    (d) => d.path === base || d.path.startsWith(`${base}.`) || d.path.startsWith(`${base}[`),
  );
  if (problems.length === 0) return;
  throw invalid(`${helper}: ${problems.map((d) => `${d.path} ${d.message}`).join('; ')}`, {
    helper,
    diagnostics: problems,
  });
}

/**
 * The entry of a declaration given as its value alone (`'repo'`) or as an object: `key` and,
 * where set, the `optional` keys, in that order.
 */
function entryOf(
  helper: string,
  skill: string,
  key: string,
  input: unknown,
  optional: readonly string[],
): Record<string, unknown> {
  const declaration: unknown = typeof input === 'string' ? { [key]: input } : input;
  if (!isRecord(declaration)) {
    throw invalid(`${helper}: skill ${JSON.stringify(skill)} needs a ${key} or { ${key} }`, {
      skill,
    });
  }
  const entry: Record<string, unknown> = { [key]: declaration[key] };
  for (const k of optional) if (declaration[k] !== undefined) entry[k] = declaration[k];
  return entry;
}

function blastEntry(skill: string, input: BlastInput): Record<string, unknown> {
  return entryOf('declareBlast', skill, 'radius', input, [
    'note',
  ] satisfies (keyof BlastDeclaration)[]);
}

function hitlEntry(skill: string, input: HitlModeInput): Record<string, unknown> {
  return entryOf('declareHitlMode', skill, 'mode', input, [
    'vetoTtlMs',
    'reviewer',
    'note',
  ] satisfies (keyof HitlModeDeclaration)[]);
}

function domainsEntry(skill: string, input: EffectDomainInput): Record<string, unknown> {
  const domains: unknown = Array.isArray(input)
    ? input
    : (input as EffectDomainDeclaration).domains;
  if (!Array.isArray(domains)) {
    throw invalid(
      `declareEffectDomain: skill ${JSON.stringify(skill)} needs { domains: [...] } or a list of domains`,
      { skill, field: 'domains' },
    );
  }
  // The gateway accepts any non-empty name here, but a delta whose domain breaks the delta rules
  // is rejected: a domain no valid delta can name is refused now rather than never matched.
  for (const domain of domains) {
    const problem = typeof domain === 'string' ? checkDeltaDomain(domain) : 'must be a string';
    if (problem !== undefined) {
      throw invalid(
        `declareEffectDomain: skill ${JSON.stringify(skill)}: domain ${JSON.stringify(domain)} ${problem}`,
        { skill, field: 'domains', domain },
      );
    }
  }
  return { domains: [...new Set(domains as string[])] };
}

function entries<I>(
  skills: Readonly<Record<string, I | undefined>>,
  build: (skill: string, input: I) => Record<string, unknown>,
): Record<string, Record<string, unknown>> {
  // fromEntries defines own keys: a skill id such as "__proto__" stays a key, not a prototype.
  return Object.fromEntries(
    Object.entries(skills)
      .filter((pair): pair is [string, I] => pair[1] !== undefined)
      .map(([skill, input]) => [skill, build(skill, input)]),
  );
}

/**
 * Declares blast-v1 radii for skills of the card: a copy of the card is returned, the input is not
 * changed. Applying the same declarations twice gives the same card.
 *
 * @throws FleetgateError `FLEETGATE_DECLARATION_INVALID` for a skill missing from `card.skills`,
 * an unknown radius or an over-long note — whatever the gateway's reader would flag.
 *
 * @example
 * ```ts
 * card = declareBlast(card, { sitrep: 'self', pr_review: { radius: 'repo', note: 'Comments on PRs' } });
 * ```
 */
export function declareBlast<C extends CardLike>(
  card: C,
  skills: Partial<Readonly<Record<SkillIdOf<C>, BlastInput>>>,
): Declared<C> {
  return declare(card, BLAST_V1_URI, 'declareBlast', entries(skills, blastEntry));
}

/**
 * Declares hitl-mode-v1 approval modes for skills of the card (a copy is returned).
 *
 * @throws FleetgateError `FLEETGATE_DECLARATION_INVALID` for a skill missing from `card.skills`,
 * an unknown mode, or a `vetoTtlMs` that is not a positive integer.
 *
 * @example
 * ```ts
 * card = declareHitlMode(card, { sitrep: 'autonomous', deploy: { mode: 'veto', vetoTtlMs: 60_000 } });
 * ```
 */
export function declareHitlMode<C extends CardLike>(
  card: C,
  skills: Partial<Readonly<Record<SkillIdOf<C>, HitlModeInput>>>,
): Declared<C> {
  return declare(card, HITL_MODE_V1_URI, 'declareHitlMode', entries(skills, hitlEntry));
}

/**
 * Declares effect-domain-v1 (the agent reports worldstate deltas), optionally with the domains
 * each skill may change (a copy is returned). A delta outside its skill's domains is still
 * recorded by the gateway, but raises an alert.
 *
 * @throws FleetgateError `FLEETGATE_DECLARATION_INVALID` for a skill missing from `card.skills`
 * or a domain no delta could name (empty, whitespace, dots).
 *
 * @example
 * ```ts
 * card = declareEffectDomain(card, { triage: { domains: ['board'] } });
 * ```
 */
export function declareEffectDomain<C extends CardLike>(
  card: C,
  skills: Partial<Readonly<Record<SkillIdOf<C>, EffectDomainInput>>> = {},
): Declared<C> {
  return declare(card, EFFECT_DOMAIN_V1_URI, 'declareEffectDomain', entries(skills, domainsEntry));
}

/** Declares cost-v1: the agent reports usage and cost samples (a copy is returned). */
export function declareCost<C extends CardLike>(card: C): Declared<C> {
  return declare(card, COST_V1_URI, 'declareCost', undefined);
}
