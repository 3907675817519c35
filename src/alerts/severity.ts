/**
 * Alert severity scaled by blast radius: one function maps the base severity of an alert kind and
 * the radius of the skill to the severity the alert carries. The same failure on a `public` skill
 * is a much bigger signal than on a `self` skill.
 */
import type { AlertSeverity } from '../protocol/index.js';
import type { BlastRadius } from '../protocol/index.js';
import { BLAST_ORDER } from '../protocol/index.js';

/** Alert severities, lowest to highest (the `severity` of `ops.alert.*` on the bus). */
export const ALERT_SEVERITIES = [
  'info',
  'warning',
  'error',
  'critical',
] as const satisfies readonly AlertSeverity[];

/** One of {@link ALERT_SEVERITIES}; the bus's `AlertSeverity`. */
export type Severity = AlertSeverity;

/** The alert kinds Fleetgate raises, published on `ops.alert.<kind>`. */
export const ALERT_KINDS = [
  'undeclared_effect',
  'blast_violation',
  'action_quality',
  'radius_widened',
  'outcome_unknown',
] as const;

/** One of {@link ALERT_KINDS}. */
export type AlertKind = (typeof ALERT_KINDS)[number];

/** Base severity of each alert kind: what it means on a skill of radius `project` or `repo`. */
export const ALERT_BASE_SEVERITY: Readonly<Record<AlertKind, Severity>> = {
  undeclared_effect: 'warning',
  blast_violation: 'error',
  action_quality: 'warning',
  radius_widened: 'warning',
  // A call that may or may not have run: a person must look, more urgently the wider it reaches.
  outcome_unknown: 'error',
};

/** Steps each radius moves a base severity: down one for `self`, up one for `fleet`, up two for `public`. */
const RADIUS_SHIFT: Readonly<Record<BlastRadius, number>> = {
  self: -1,
  project: 0,
  repo: 0,
  fleet: 1,
  public: 2,
};

const RANK: Readonly<Record<Severity, number>> = { info: 0, warning: 1, error: 2, critical: 3 };

/** Options of {@link scaleSeverity}. */
export interface SeverityOptions {
  /** The radius an unknown (or stale) radius counts as (default `public`: assume the worst). */
  unknownRadius?: BlastRadius;
}

/**
 * The severity of an alert of base severity `base` on a skill of radius `radius`. Monotonic in the
 * radius; `self` is never above the base; `public` is at least `error`; `unknown` counts as
 * `options.unknownRadius` (default `public`).
 *
 * | base \ radius | self | project | repo | fleet | public |
 * |---|---|---|---|---|---|
 * | info | info | info | info | warning | error |
 * | warning | info | warning | warning | error | critical |
 * | error | warning | error | error | critical | critical |
 * | critical | error | critical | critical | critical | critical |
 *
 * @example
 * ```ts
 * scaleSeverity('warning', 'public') // 'critical'
 * scaleSeverity('warning', 'self')   // 'info'
 * ```
 */
export function scaleSeverity(
  base: Severity,
  radius: BlastRadius | 'unknown',
  options: SeverityOptions = {},
): Severity {
  const r = radius === 'unknown' ? (options.unknownRadius ?? 'public') : radius;
  let rank = Math.min(Math.max(RANK[base] + RADIUS_SHIFT[r], 0), ALERT_SEVERITIES.length - 1);
  if (BLAST_ORDER[r] === BLAST_ORDER.public) rank = Math.max(rank, RANK.error);
  return ALERT_SEVERITIES[rank]!;
}

/** Negative when `a` is lower than `b`, 0 when equal, positive when higher. */
export function compareSeverity(a: Severity, b: Severity): number {
  return RANK[a] - RANK[b];
}
