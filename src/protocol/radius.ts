import { z } from 'zod';

/** Blast radii, narrowest to widest. */
export const BLAST_RADII = ['self', 'project', 'repo', 'fleet', 'public'] as const;

/** How wide a skill's effect can be. */
export type BlastRadius = (typeof BLAST_RADII)[number];

/** Rank of each radius: `self` 0 … `public` 4. */
export const BLAST_ORDER: Readonly<Record<BlastRadius, number>> = {
  self: 0,
  project: 1,
  repo: 2,
  fleet: 3,
  public: 4,
};

/** zod schema of a {@link BlastRadius}. */
export const blastRadiusSchema = z.enum(BLAST_RADII);

/** True when `value` is one of {@link BLAST_RADII}. */
export function isBlastRadius(value: unknown): value is BlastRadius {
  return typeof value === 'string' && Object.hasOwn(BLAST_ORDER, value);
}

/** Negative when `a` is narrower than `b`, 0 when equal, positive when wider (a sort comparator). */
export function compareRadius(a: BlastRadius, b: BlastRadius): number {
  return BLAST_ORDER[a] - BLAST_ORDER[b];
}

/**
 * The widest of the given radii, ignoring `undefined`; `undefined` when none is given.
 *
 * @example
 * ```ts
 * maxRadius('self', undefined, 'repo') // 'repo'
 * ```
 */
export function maxRadius(...radii: readonly (BlastRadius | undefined)[]): BlastRadius | undefined {
  let widest: BlastRadius | undefined;
  for (const r of radii) {
    if (r !== undefined && (widest === undefined || BLAST_ORDER[r] > BLAST_ORDER[widest]))
      widest = r;
  }
  return widest;
}
