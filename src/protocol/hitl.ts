import { createOrderedScale } from './ordered-scale.js';

/** Human-in-the-loop modes, least gated to most gated. */
export const HITL_MODES = ['autonomous', 'notification', 'veto', 'gated', 'compound'] as const;

/** How a skill call is approved before it runs. */
export type HitlMode = (typeof HITL_MODES)[number];

/** The hitl modes as an ordered scale: compare, max, at-least and parse in one place. */
export const HITL_MODE_SCALE = createOrderedScale(HITL_MODES);

/** Rank of each mode: `autonomous` 0 … `compound` 4. */
export const HITL_ORDER: Readonly<Record<HitlMode, number>> = HITL_MODE_SCALE.order;

/** True when `value` is one of {@link HITL_MODES}. */
export const isHitlMode: (value: unknown) => value is HitlMode = HITL_MODE_SCALE.is;

/** Negative when `a` is less gated than `b`, 0 when equal, positive when more gated. */
export const compareHitlMode: (a: HitlMode, b: HitlMode) => number = HITL_MODE_SCALE.compare;

/** The most gated of the given modes, ignoring `undefined`. */
export const maxHitlMode: (...modes: readonly (HitlMode | undefined)[]) => HitlMode | undefined =
  HITL_MODE_SCALE.max;

/** True when `mode` is as gated as `threshold` or more (`hitlModeAtLeast('gated', 'veto')`). */
export const hitlModeAtLeast: (mode: HitlMode, threshold: HitlMode) => boolean =
  HITL_MODE_SCALE.atLeast;

/** `value` when it is a hitl mode, else `undefined`. */
export const parseHitlMode: (value: unknown) => HitlMode | undefined = HITL_MODE_SCALE.parse;
