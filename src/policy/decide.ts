/**
 * `decide`: blast-v1 composed with hitl-mode-v1. Pure and deterministic: the same facts and rules
 * give the same decision, so a replica, the CLI's `policy explain` and the re-check before a call
 * goes out all agree.
 */
import type { BlastRadius, HitlMode } from '../protocol/index.js';
import { BLAST_ORDER, HITL_ORDER, maxRadius } from '../protocol/index.js';
import type {
  Decision,
  DecisionInput,
  PolicyOverride,
  PolicyRules,
  Reason,
  StandingGrant,
} from './types.js';

/**
 * The override that applies to an agent/skill: exact agent and skill first, then exact agent,
 * then exact skill, then `*`/`*`.
 */
export function findOverride(
  overrides: readonly PolicyOverride[],
  agent: string,
  skill: string,
): PolicyOverride | undefined {
  let best: PolicyOverride | undefined;
  let bestScore = -1;
  for (const o of overrides) {
    if ((o.agent !== '*' && o.agent !== agent) || (o.skill !== '*' && o.skill !== skill)) continue;
    const score = (o.agent === agent ? 2 : 0) + (o.skill === skill ? 1 : 0);
    if (score > bestScore) {
      best = o;
      bestScore = score;
    }
  }
  return best;
}

function clock(at: number): string {
  return new Date(at).toISOString().slice(11, 16);
}

function atLeast(radius: BlastRadius, threshold: BlastRadius | undefined): boolean {
  return threshold !== undefined && BLAST_ORDER[radius] >= BLAST_ORDER[threshold];
}

function higher(a: HitlMode, b: HitlMode): HitlMode {
  return HITL_ORDER[b] > HITL_ORDER[a] ? b : a;
}

/** The grant that covers a call at `radius`, if any (live, uses left, wide enough). */
function coveringGrant(
  grants: readonly StandingGrant[] | undefined,
  input: DecisionInput,
  radius: BlastRadius | null,
): StandingGrant | undefined {
  if (grants === undefined) return undefined;
  for (const g of grants) {
    if (g.agent !== input.agent || g.skill !== input.skill) continue;
    if (input.now !== undefined && g.expiresAt <= input.now) continue;
    if (g.usesLeft !== null && g.usesLeft <= 0) continue;
    if (radius !== null && BLAST_ORDER[radius] > BLAST_ORDER[g.maxRadius]) continue;
    return g;
  }
  return undefined;
}

/** What the steps of {@link decide} share: the call's facts, the rules, and the reasons so far. */
interface DecideStep {
  input: DecisionInput;
  rules: PolicyRules;
  override: PolicyOverride | undefined;
  reasons: Reason[];
}

/** Step 1 of {@link decide}: the effective radius, each fact that made it named in `reasons`. */
function effectiveRadiusOf({ input, rules, reasons }: DecideStep): BlastRadius | undefined {
  const r = input.radius;
  // A stale card's declarations are not trusted: fall back to the unknown rule, but never below
  // what is already known (the ratchet and the floor).
  let effective: BlastRadius | undefined;
  const unknown = r.stale || r.declared === undefined;
  if (r.stale) {
    const times = r.failures === undefined ? '' : ` ${r.failures} refreshes`;
    reasons.push({ kind: 'card-stale', detail: `card stale${times}: declarations not trusted` });
  } else if (r.declared === undefined) {
    // Declared but refused is not "none declared": the author looks for a typo, not a missing entry.
    const detail =
      r.refused === undefined
        ? 'no blast-v1 radius declared'
        : `blast-v1 radius declared but refused (${r.refused.path}: ${r.refused.message})`;
    reasons.push({ kind: 'radius-unknown', detail });
  } else {
    reasons.push({ kind: 'declared-radius', detail: `declared ${r.declared}` });
  }
  if (unknown) {
    const rule = rules.unknownRadius === 'proceed' ? undefined : rules.unknownRadius;
    reasons.push({
      kind: 'unknown-rule',
      detail:
        rule === undefined
          ? 'unknown radius proceeds (policy.unknownRadius: proceed)'
          : `unknown radius counts as ${rule} (policy.unknownRadius)`,
    });
    effective = maxRadius(rule, r.stale ? r.radius : undefined, r.accepted, r.floor);
  } else {
    effective = maxRadius(r.declared, r.accepted, r.radius, r.floor);
  }
  if (
    r.pending !== undefined &&
    r.accepted !== undefined &&
    BLAST_ORDER[r.accepted] > BLAST_ORDER[r.pending]
  ) {
    reasons.push({
      kind: 'narrowing-pending',
      detail: `narrowed to ${r.pending}, still gated as ${r.accepted} until acknowledged`,
    });
  }
  if (r.floor !== undefined && (effective === undefined || r.floor === effective)) {
    const declared = r.declared === undefined ? -1 : BLAST_ORDER[r.declared];
    if (BLAST_ORDER[r.floor] > declared) {
      const why = r.floorSource?.reason === undefined ? '' : ` after ${r.floorSource.reason}`;
      const at = r.floorSource?.at === undefined ? '' : ` at ${clock(r.floorSource.at)}`;
      reasons.push({ kind: 'floor', detail: `floor raised to ${r.floor}${why}${at}` });
    }
  }
  return effective;
}

/**
 * Step 3 of {@link decide}: the declared mode raised by the radius thresholds (blast-v1 composed
 * with hitl-mode-v1) and by the override's `minMode`; never lowered.
 */
function raiseMode(
  { input, rules, override, reasons }: DecideStep,
  declaredMode: HitlMode,
  effective: BlastRadius | undefined,
): HitlMode {
  let mode = declaredMode;
  if (override?.action === 'allow') {
    reasons.push({
      kind: 'override-allow',
      detail: `override allows ${input.agent}/${input.skill}: radius thresholds waived${override.note === undefined ? '' : ` (${override.note})`}`,
    });
  } else if (effective !== undefined) {
    let byRadius: HitlMode | undefined;
    let threshold = '';
    if (atLeast(effective, rules.approvalAtOrAbove)) {
      byRadius = 'gated';
      threshold = `approvalAtOrAbove ${rules.approvalAtOrAbove}`;
    } else if (atLeast(effective, rules.vetoAtOrAbove)) {
      byRadius = 'veto';
      threshold = `vetoAtOrAbove ${rules.vetoAtOrAbove}`;
    } else if (atLeast(effective, rules.notifyAtOrAbove)) {
      byRadius = 'notification';
      threshold = `notifyAtOrAbove ${rules.notifyAtOrAbove}`;
    }
    if (byRadius !== undefined) {
      // Named even when the declared mode is already as strict: the approver sees both facts.
      reasons.push({ kind: 'threshold', detail: `${effective} ≥ ${threshold}: ${byRadius}` });
      if (HITL_ORDER[byRadius] > HITL_ORDER[mode]) mode = byRadius;
    }
  }
  if (override?.minMode !== undefined && HITL_ORDER[override.minMode] > HITL_ORDER[mode]) {
    mode = higher(mode, override.minMode);
    reasons.push({
      kind: 'override-min-mode',
      detail: `override raises ${input.agent}/${input.skill} to ${override.minMode}`,
    });
  }
  return mode;
}

/**
 * Decides how a call runs.
 *
 * - Effective radius: the declared radius raised by the acknowledged level and the operator floor;
 *   an unknown or stale radius counts as `rules.unknownRadius` (never lowering what is known).
 * - Mode: the declared mode (none → `autonomous`), raised by the radius thresholds and the
 *   override's `minMode`. Policy only tightens: the result is never below the declared mode.
 * - A standing approval covering the call is named in `standing` (the mode stays what it is).
 *
 * @example
 * ```ts
 * decide({ agent: 'ops', skill: 'pr_review', radius: broker.effectiveRadius('ops', 'pr_review'),
 *   hitl: broker.effectiveHitlMode('ops', 'pr_review') }, DEFAULT_POLICY_RULES).mode // 'gated'
 * ```
 */
export function decide(input: DecisionInput, rules: PolicyRules): Decision {
  const h = input.hitl;
  const reasons: Reason[] = [];
  const override = findOverride(rules.overrides, input.agent, input.skill);
  const step: DecideStep = { input, rules, override, reasons };

  // 1. The effective radius (stale or unknown: the unknown rule, never below what is known).
  const effective = effectiveRadiusOf(step);

  // 2. The declared mode (hitl-mode-v1), which policy never lowers.
  const declaredMode: HitlMode = h.mode ?? 'autonomous';
  if (h.mode === undefined) {
    reasons.push({ kind: 'mode-undeclared', detail: 'no hitl-mode-v1 mode declared: autonomous' });
  } else {
    reasons.push({ kind: 'declared-mode', detail: `declared mode ${h.mode}` });
    if (h.pending !== undefined && HITL_ORDER[h.pending] < HITL_ORDER[h.mode]) {
      reasons.push({
        kind: 'narrowing-pending',
        detail: `mode narrowed to ${h.pending}, still ${h.mode} until acknowledged`,
      });
    }
  }

  // 3. The radius thresholds and the override's minMode.
  const mode = raiseMode(step, declaredMode, effective);

  const decision: Decision = {
    mode,
    effectiveRadius: effective ?? null,
    reasons,
    approvers: 1,
  };
  if (mode === 'veto') decision.vetoTtlMs = h.vetoTtlMs ?? rules.vetoWindowMs;
  if (mode === 'gated' || mode === 'compound') {
    const n =
      effective === 'public'
        ? rules.approvers.public
        : effective === 'fleet'
          ? rules.approvers.fleet
          : 1;
    decision.approvers = Math.max(1, n);
    if (decision.approvers > 1) {
      reasons.push({
        kind: 'approvers',
        detail: `${effective} calls need ${decision.approvers} distinct approvers`,
      });
    }
  }
  if (h.reviewer === 'operator') {
    decision.reviewer = 'operator';
    reasons.push({ kind: 'reviewer-operator', detail: 'reviewer operator: a human decides' });
  } else if (mode === 'veto' || mode === 'gated' || mode === 'compound') {
    const grant = coveringGrant(input.standing, input, decision.effectiveRadius);
    if (grant !== undefined) {
      decision.standing = grant.id;
      const uses = grant.usesLeft === null ? '' : `, ${grant.usesLeft} use(s) left`;
      reasons.push({
        kind: 'standing-approval',
        detail: `standing approval ${grant.id} by ${grant.grantedBy} up to ${grant.maxRadius}${uses}`,
      });
    }
  }
  if (override?.action === 'deny') {
    const why = override.note ?? `policy override denies ${input.agent}/${input.skill}`;
    decision.deny = { reason: why };
    reasons.push({ kind: 'override-deny', detail: why });
  }
  return decision;
}
