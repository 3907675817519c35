import { z } from 'zod';

/** Human-in-the-loop modes, least gated to most gated. */
export const HITL_MODES = ['autonomous', 'notification', 'veto', 'gated', 'compound'] as const;

/** How a skill call is approved before it runs. */
export type HitlMode = (typeof HITL_MODES)[number];

/** Rank of each mode: `autonomous` 0 … `compound` 4. */
export const HITL_ORDER: Readonly<Record<HitlMode, number>> = {
  autonomous: 0,
  notification: 1,
  veto: 2,
  gated: 3,
  compound: 4,
};

/** zod schema of a {@link HitlMode}. */
export const hitlModeSchema = z.enum(HITL_MODES);

/** True when `value` is one of {@link HITL_MODES}. */
export function isHitlMode(value: unknown): value is HitlMode {
  return typeof value === 'string' && Object.hasOwn(HITL_ORDER, value);
}

/** Negative when `a` is less gated than `b`, 0 when equal, positive when more gated. */
export function compareHitlMode(a: HitlMode, b: HitlMode): number {
  return HITL_ORDER[a] - HITL_ORDER[b];
}

/** The most gated of the given modes, ignoring `undefined`. */
export function maxHitlMode(...modes: readonly (HitlMode | undefined)[]): HitlMode | undefined {
  let most: HitlMode | undefined;
  for (const m of modes) {
    if (m !== undefined && (most === undefined || HITL_ORDER[m] > HITL_ORDER[most])) most = m;
  }
  return most;
}
