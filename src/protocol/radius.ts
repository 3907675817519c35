import { createOrderedScale } from './ordered-scale.js';

/** Blast radii, narrowest to widest. */
export const BLAST_RADII = ['self', 'project', 'repo', 'fleet', 'public'] as const;

/** How wide a skill's effect can be. */
export type BlastRadius = (typeof BLAST_RADII)[number];

/** The blast radii as an ordered scale: compare, max, at-least and parse in one place. */
export const RADIUS_SCALE = createOrderedScale(BLAST_RADII);

/** Rank of each radius: `self` 0 … `public` 4. */
export const BLAST_ORDER: Readonly<Record<BlastRadius, number>> = RADIUS_SCALE.order;

/** True when `value` is one of {@link BLAST_RADII}. */
export const isBlastRadius: (value: unknown) => value is BlastRadius = RADIUS_SCALE.is;

/** Negative when `a` is narrower than `b`, 0 when equal, positive when wider (a sort comparator). */
export const compareRadius: (a: BlastRadius, b: BlastRadius) => number = RADIUS_SCALE.compare;

/**
 * The widest of the given radii, ignoring `undefined`; `undefined` when none is given.
 *
 * @example
 * ```ts
 * maxRadius('self', undefined, 'repo') // 'repo'
 * ```
 */
export const maxRadius: (
  ...radii: readonly (BlastRadius | undefined)[]
) => BlastRadius | undefined = RADIUS_SCALE.max;

/** True when `radius` is as wide as `threshold` or wider (`radiusAtLeast('fleet', 'repo')`). */
export const radiusAtLeast: (radius: BlastRadius, threshold: BlastRadius) => boolean =
  RADIUS_SCALE.atLeast;

/** `value` when it is a blast radius, else `undefined`. */
export const parseRadius: (value: unknown) => BlastRadius | undefined = RADIUS_SCALE.parse;
