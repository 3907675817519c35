/**
 * Reading the per-skill map (`params.skills`) of one extension entry of an agent card, and the
 * JSON paths its diagnostics name.
 */
import type { Report } from './declaration-types.js';
import { isRecord, jsonPath, preview } from './json-path.js';
import { LIMITS } from './limits.js';

/** `<base>.params` */
const paramsPathOf = (base: string): string => jsonPath(base, 'params');
/** `<base>.params.skills` */
const skillsPathOf = (base: string): string => jsonPath(paramsPathOf(base), 'skills');
/** `<base>.params.skills.<id>`, or a key below it. */
export function skillPath(base: string, id: string, key?: string): string {
  const path = jsonPath(skillsPathOf(base), id);
  return key === undefined ? path : jsonPath(path, key);
}

/**
 * Reads one skill's entry of an extension's `params.skills`. `base` is the extension entry's path
 * and `id` the skill's: the entry's path is built only for a diagnostic ({@link skillPath}).
 */
export type Reader<T> = (
  entry: Record<string, unknown>,
  base: string,
  id: string,
  report: Report,
) => T | undefined;

/**
 * A new object without a prototype (skill ids are keys: `__proto__` or `constructor` are plain
 * keys here). Made from a literal, not with `Object.create(null)`: V8 gives the latter a hash table
 * from the start (~180 bytes, and slower to fill and list), while this one stays a compact object
 * with the same behaviour.
 */
export function emptyRecord<T>(): Record<string, T> {
  return Object.setPrototypeOf({}, null) as Record<string, T>;
}

/**
 * Reads the per-skill `params.skills` map of one extension entry. A bad entry for one skill is
 * reported and dropped; the entries beside it are kept.
 */
export function readSkillMap<T>(
  params: unknown,
  base: string,
  read: Reader<T>,
  knownSkills: ReadonlySet<string> | undefined,
  report: Report,
  requireSkills: boolean,
): Record<string, T> {
  // Paths are built only for a diagnostic: a good card never needs them.
  const out = emptyRecord<T>();
  if (params === undefined) {
    if (requireSkills) report(paramsPathOf(base), 'warning', 'is missing; no skill declarations');
    return out;
  }
  if (!isRecord(params)) {
    report(paramsPathOf(base), 'error', `must be an object (got ${preview(params)})`);
    return out;
  }
  if (params.skills === undefined) {
    if (requireSkills) report(skillsPathOf(base), 'warning', 'is missing; no skill declarations');
    return out;
  }
  if (!isRecord(params.skills)) {
    report(
      skillsPathOf(base),
      'error',
      `must be an object mapping skill ids to declarations (got ${Array.isArray(params.skills) ? 'an array' : preview(params.skills)})`,
    );
    return out;
  }
  const ids = Object.keys(params.skills);
  if (ids.length > LIMITS.cardSkills) {
    report(
      skillsPathOf(base),
      'error',
      `declares ${ids.length} skills, more than the limit of ${LIMITS.cardSkills}; only the first ${LIMITS.cardSkills} are read, the rest are ignored`,
      'FLEETGATE_LIMIT_EXCEEDED',
    );
  }
  for (const id of ids.slice(0, LIMITS.cardSkills)) {
    const entry = params.skills[id];
    if (id === '' || id.length > LIMITS.nameLength) {
      report(skillPath(base, id), 'error', `skill id must be 1 to ${LIMITS.nameLength} characters`);
      continue;
    }
    if (!isRecord(entry)) {
      report(skillPath(base, id), 'error', `must be an object (got ${preview(entry)})`);
      continue;
    }
    const value = read(entry, base, id, report);
    if (value === undefined) continue;
    if (knownSkills !== undefined && !knownSkills.has(id)) {
      report(
        skillPath(base, id),
        'warning',
        `names skill ${JSON.stringify(id)}, which is not in card.skills`,
      );
    }
    out[id] = value;
  }
  return out;
}
