/**
 * The domains configuration seeds: each seed checked (a JSON object under an allowed name), and
 * the state a domain starts from when the unit of work that first touches it creates it.
 */
import { FleetgateError, FORBIDDEN_PATH_SEGMENTS } from '../protocol/index.js';
import type { JsonObject } from './json.js';
import { cloneJsonObject, isPlainObject, toJsonValue } from './json.js';
import type { StoredDomain } from './types.js';

/** The empty domain: `{ data: {} }`. */
export function emptyDomainState(): JsonObject {
  return { data: {} };
}

/** The seed of world domain `name` as a JSON object copy; throws `FLEETGATE_WORLD_SEED_INVALID`. */
export function checkSeed(name: string, seed: unknown): JsonObject {
  const copy = toJsonValue(seed);
  if (!copy.ok || !isPlainObject(copy.value)) {
    throw new FleetgateError(
      'FLEETGATE_WORLD_SEED_INVALID',
      `Seed of world domain ${JSON.stringify(name)}: ${copy.ok ? 'must be a JSON object' : copy.reason}`,
      { details: { domain: name } },
    );
  }
  if (FORBIDDEN_PATH_SEGMENTS.has(name) || !/^[^\s.]+$/u.test(name)) {
    throw new FleetgateError(
      'FLEETGATE_WORLD_SEED_INVALID',
      `World domain name ${JSON.stringify(name)} is not allowed`,
      { details: { domain: name } },
    );
  }
  return copy.value;
}

/** Makes a domain the store did not have: a copy of its seed, else {@link emptyDomainState}. */
export function initDomain(
  seeds: ReadonlyMap<string, JsonObject>,
  at: number,
): (name: string) => StoredDomain {
  return (name) => {
    const seed = seeds.get(name);
    const state = seed === undefined ? emptyDomainState() : cloneJsonObject(seed);
    return {
      name,
      version: 0,
      state,
      updatedAt: at,
      base: cloneJsonObject(state),
      baseVersion: 0,
    };
  };
}
