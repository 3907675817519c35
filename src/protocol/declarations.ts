/**
 * `readDeclarations`: the blast-v1, hitl-mode-v1 and effect-domain-v1 declarations of an agent
 * card, read entry by entry with a diagnostic for every problem.
 */
import type {
  BlastDeclaration,
  Declarations,
  Diagnostic,
  EffectDomainDeclaration,
  HitlModeDeclaration,
  Report,
} from './declaration-types.js';
import type { Reader } from './declaration-skill-map.js';
import { emptyRecord, readSkillMap, skillPath } from './declaration-skill-map.js';
import { RADIUS_SCALE } from './radius.js';
import { HITL_MODE_SCALE } from './hitl.js';
import { isRecord, jsonPath, preview } from './json-path.js';
import { LIMITS } from './limits.js';
import type { OrderedScale } from './ordered-scale.js';
import {
  BLAST_V1_URI,
  canonicalExtensionUri,
  EFFECT_DOMAIN_V1_URI,
  EXTENSION_URIS,
  HITL_MODE_V1_URI,
} from './uris.js';

export type {
  BlastDeclaration,
  DeclaredExtension,
  Declarations,
  Diagnostic,
  DiagnosticSeverity,
  EffectDomainDeclaration,
  HitlModeDeclaration,
} from './declaration-types.js';

function readNote(
  entry: Record<string, unknown>,
  base: string,
  id: string,
  report: Report,
): string | undefined {
  if (entry.note === undefined) return undefined;
  if (typeof entry.note !== 'string') {
    report(
      skillPath(base, id, 'note'),
      'warning',
      `must be a string; ignored (got ${preview(entry.note)})`,
    );
    return undefined;
  }
  if (entry.note.length > LIMITS.noteLength) {
    report(
      skillPath(base, id, 'note'),
      'warning',
      `is longer than ${LIMITS.noteLength} characters; cut`,
    );
    return entry.note.slice(0, LIMITS.noteLength);
  }
  return entry.note;
}

/** Reads the required `key` of an entry as one of the scale's names; else an error. */
function readScaleName<T extends string>(
  scale: OrderedScale<T>,
  key: string,
  entry: Record<string, unknown>,
  base: string,
  id: string,
  report: Report,
): T | undefined {
  const value = entry[key];
  if (scale.is(value)) return value;
  const expected = `expected one of ${scale.values.join(', ')}`;
  report(
    skillPath(base, id, key),
    'error',
    value === undefined
      ? `is missing; ${expected}`
      : `unknown ${key} ${preview(value)}; ${expected}`,
  );
  return undefined;
}

const readBlast: Reader<BlastDeclaration> = (entry, base, id, report) => {
  const radius = readScaleName(RADIUS_SCALE, 'radius', entry, base, id, report);
  if (radius === undefined) return undefined;
  const note = readNote(entry, base, id, report);
  return note === undefined ? { radius } : { radius, note };
};

const readHitl: Reader<HitlModeDeclaration> = (entry, base, id, report) => {
  const mode = readScaleName(HITL_MODE_SCALE, 'mode', entry, base, id, report);
  if (mode === undefined) return undefined;
  const declaration: HitlModeDeclaration = { mode };
  if (entry.vetoTtlMs !== undefined) {
    const ttl = entry.vetoTtlMs;
    if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl <= 0) {
      report(
        skillPath(base, id, 'vetoTtlMs'),
        'error',
        `must be a positive integer (got ${preview(ttl)})`,
      );
      return undefined;
    }
    declaration.vetoTtlMs = ttl;
  }
  if (entry.reviewer !== undefined) {
    if (entry.reviewer === 'operator') declaration.reviewer = 'operator';
    else {
      report(
        skillPath(base, id, 'reviewer'),
        'warning',
        `unknown reviewer ${preview(entry.reviewer)}; only "operator" is defined, ignored`,
      );
    }
  }
  const note = readNote(entry, base, id, report);
  if (note !== undefined) declaration.note = note;
  return declaration;
};

const readDomains: Reader<EffectDomainDeclaration> = (entry, base, id, report) => {
  const domains = entry.domains;
  if (
    !Array.isArray(domains) ||
    domains.some((d) => typeof d !== 'string' || d.trim() === '' || d.length > LIMITS.nameLength)
  ) {
    report(
      skillPath(base, id, 'domains'),
      'error',
      `must be a list of non-empty strings of at most ${LIMITS.nameLength} characters (got ${preview(domains)})`,
    );
    return undefined;
  }
  if (domains.length > LIMITS.skillDomains) {
    report(
      skillPath(base, id, 'domains'),
      'error',
      `has ${domains.length} domains, more than the limit of ${LIMITS.skillDomains}`,
    );
    return undefined;
  }
  return { domains: [...new Set(domains as string[])] };
};

/** `capabilities.extensions[i]` for every entry read: one string each, not one per card read. */
const EXTENSION_PATHS: readonly string[] = Array.from({ length: LIMITS.cardExtensions }, (_, i) =>
  jsonPath('capabilities.extensions', i),
);

/** The {@link Report} that adds to `diagnostics`. */
function reportInto(diagnostics: Diagnostic[]): Report {
  // Returned, not bound to a name in readDeclarations: a named arrow per card read would be one
  // more function to name (under a loader that keeps names) for every card.
  return (path, severity, message, code) => {
    const diagnostic: Diagnostic = { path: path === '' ? '$' : path, severity, message };
    if (code !== undefined) diagnostic.code = code;
    diagnostics.push(diagnostic);
  };
}

/**
 * Reads `card.skills` into `result.skills`; returns the skill ids a declaration may name, or
 * undefined when the card lists no skills.
 */
function readCardSkills(
  card: Record<string, unknown>,
  result: Declarations,
  report: Report,
): Set<string> | undefined {
  let knownSkills: Set<string> | undefined;
  if (Array.isArray(card.skills)) {
    const listed: unknown[] = card.skills;
    if (listed.length > LIMITS.cardSkills) {
      report(
        'skills',
        'error',
        `lists ${listed.length} skills, more than the limit of ${LIMITS.cardSkills}; only the first ${LIMITS.cardSkills} are read`,
        'FLEETGATE_LIMIT_EXCEEDED',
      );
    }
    /** Each skill id read, at the index that first lists it. */
    const first = new Map<string, number>();
    listed.slice(0, LIMITS.cardSkills).forEach((skill: unknown, i) => {
      if (!isRecord(skill) || typeof skill.id !== 'string' || skill.id === '') {
        report(jsonPath(jsonPath('skills', i), 'id'), 'warning', 'skill has no string id');
        return;
      }
      const at = first.get(skill.id);
      if (at === undefined) first.set(skill.id, i);
      else {
        // A2A requires skill ids unique within a card: skills and their declarations are keyed
        // by id, so one of the two would silently win.
        report(
          jsonPath(jsonPath('skills', i), 'id'),
          'error',
          `skill id ${JSON.stringify(skill.id)} is listed twice (skills[${at}] and skills[${i}]); skill ids must be unique within a card: a gateway keys declarations by skill id, so one of the two silently wins`,
        );
      }
    });
    const read = new Set(first.keys());
    result.skills = [...read];
    // Whether a declaration names a listed skill is answered from the whole list (the card is
    // already within its byte limit): a skill past the first LIMITS.cardSkills is listed, and a
    // warning saying otherwise would send the author looking for a mistake that is not there.
    knownSkills = read;
    if (listed.length > LIMITS.cardSkills) {
      knownSkills = new Set(read);
      for (const skill of listed.slice(LIMITS.cardSkills)) {
        if (isRecord(skill) && typeof skill.id === 'string') knownSkills.add(skill.id);
      }
    }
  } else if (card.skills !== undefined) {
    report('skills', 'warning', `must be a list of skills (got ${preview(card.skills)})`);
  }
  return knownSkills;
}

/**
 * Reads the entries of `capabilities.extensions` (up to the limit) into `result`: each URI once
 * (aliases resolved), and the skill map of each extension Fleetgate reads.
 */
function readExtensions(
  extensions: unknown[],
  result: Declarations,
  knownSkills: ReadonlySet<string> | undefined,
  report: Report,
): void {
  /** Where each canonical URI was first declared, and under which URI. */
  const seen = new Map<string, { path: string; uri: string }>();
  extensions.slice(0, LIMITS.cardExtensions).forEach((raw: unknown, i) => {
    const base = EXTENSION_PATHS[i] ?? jsonPath('capabilities.extensions', i);
    if (!isRecord(raw)) {
      report(base, 'error', `must be an object (got ${preview(raw)})`);
      return;
    }
    if (typeof raw.uri !== 'string' || raw.uri === '') {
      report(jsonPath(base, 'uri'), 'error', 'must be a non-empty string');
      return;
    }
    const canonicalUri = canonicalExtensionUri(raw.uri);
    const first = seen.get(canonicalUri);
    if (first !== undefined) {
      // An older alias beside the canonical URI is one extension under two names, not a repeat.
      const names =
        first.uri === raw.uri
          ? `${canonicalUri} is declared twice`
          : `${raw.uri === canonicalUri ? first.uri : raw.uri} is the older name of ${canonicalUri}, which is declared under both names`;
      report(
        jsonPath(base, 'uri'),
        'warning',
        `${names}; the declaration at ${first.path} is used (keep one entry, under ${canonicalUri})`,
      );
      return;
    }
    seen.set(canonicalUri, { path: base, uri: raw.uri });
    if (canonicalUri !== raw.uri) {
      report(
        jsonPath(base, 'uri'),
        'warning',
        `${raw.uri} is the older name of ${canonicalUri}; it is treated as that extension`,
      );
    }
    const known = (EXTENSION_URIS as readonly string[]).includes(canonicalUri);
    result.declared.push({
      uri: raw.uri,
      canonicalUri,
      required: raw.required === true,
      known,
      path: base,
    });
    result.extensions.push(canonicalUri);
    switch (canonicalUri) {
      case BLAST_V1_URI:
        result.blast = readSkillMap(raw.params, base, readBlast, knownSkills, report, true);
        break;
      case HITL_MODE_V1_URI:
        result.hitlMode = readSkillMap(raw.params, base, readHitl, knownSkills, report, true);
        break;
      case EFFECT_DOMAIN_V1_URI: {
        const before = result.diagnostics.length;
        result.effectDomain = readSkillMap(
          raw.params,
          base,
          readDomains,
          knownSkills,
          report,
          false,
        );
        // Declaring the extension says the agent reports deltas; with no domains for any skill,
        // every delta it reports is outside its declaration.
        if (Object.keys(result.effectDomain).length === 0 && result.diagnostics.length === before) {
          report(
            jsonPath(jsonPath(base, 'params'), 'skills'),
            'warning',
            'declares no domains for any skill: every delta the agent reports raises ops.alert.undeclared_effect; list the domains of each skill that reports deltas (params.skills.<skill>.domains)',
          );
        }
        break;
      }
      default:
        break;
    }
  });
}

/**
 * Reads the blast-v1, hitl-mode-v1 and effect-domain-v1 declarations of an agent card (any JSON),
 * with a diagnostic for every problem. Never throws; a bad entry never hides the good ones.
 *
 * @example
 * ```ts
 * const { blast, diagnostics } = readDeclarations(card);
 * blast.pr_review?.radius // 'repo'
 * ```
 */
export function readDeclarations(card: unknown): Declarations {
  const result: Declarations = {
    declared: [],
    extensions: [],
    blast: emptyRecord<BlastDeclaration>(),
    hitlMode: emptyRecord<HitlModeDeclaration>(),
    effectDomain: emptyRecord<EffectDomainDeclaration>(),
    skills: [],
    diagnostics: [],
  };
  const report = reportInto(result.diagnostics);
  if (!isRecord(card)) {
    report('', 'error', `the agent card must be a JSON object (got ${preview(card)})`);
    return result;
  }

  const knownSkills = readCardSkills(card, result, report);

  const capabilities = card.capabilities;
  if (capabilities === undefined) return result;
  if (!isRecord(capabilities)) {
    report('capabilities', 'error', `must be an object (got ${preview(capabilities)})`);
    return result;
  }
  const extensions = capabilities.extensions;
  if (extensions === undefined) return result;
  if (!Array.isArray(extensions)) {
    report('capabilities.extensions', 'error', `must be a list (got ${preview(extensions)})`);
    return result;
  }
  if (extensions.length > LIMITS.cardExtensions) {
    report(
      'capabilities.extensions',
      'error',
      `has ${extensions.length} entries, more than the limit of ${LIMITS.cardExtensions}; the rest are ignored`,
      'FLEETGATE_LIMIT_EXCEEDED',
    );
  }

  readExtensions(extensions, result, knownSkills, report);
  return result;
}
