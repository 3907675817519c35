/**
 * The policy room's vocabulary: the facts `decide` reads, the rules it applies, the structured
 * decision it returns, and the ports through which the rest of the gateway feeds it.
 */
import type { Transaction } from 'kysely';
import type { BlastRadius, FleetgateTopics, HitlMode, Reason } from '../protocol/index.js';

/**
 * What the fleet knows about a skill's radius (the card broker's `effectiveRadius` shape).
 * `radius` is max(declared, accepted, floor), `undefined` when the skill declares none.
 */
export interface RadiusFacts {
  radius: BlastRadius | undefined;
  declared: BlastRadius | undefined;
  /** The level the narrowing ratchet holds until an operator acknowledges a narrower one. */
  accepted?: BlastRadius | undefined;
  /** A narrower declared radius waiting for acknowledgement. */
  pending: BlastRadius | undefined;
  /** The operator floor (configured or learned), whichever is wider. */
  floor: BlastRadius | undefined;
  /** Where the floor came from, when known: rendered as "floor raised to fleet after …". */
  floorSource?: { reason?: string; at?: number } | undefined;
  /** True while the card is stale: its declarations are not trusted. */
  stale: boolean;
  /** Consecutive failed refreshes, when known ("card stale 3 refreshes"). */
  failures?: number | undefined;
  /**
   * The card reader's diagnostic when the card has a blast-v1 entry for the skill that it refused
   * (`radius: "galaxy"`): a radius was declared, not a valid one. `declared` is then undefined.
   */
  refused?: { path: string; message: string } | undefined;
}

/** What the fleet knows about a skill's hitl-mode-v1 declaration (`effectiveHitlMode`). */
export interface HitlFacts {
  /** max(declared, accepted); `undefined` when the skill declares no mode. */
  mode: HitlMode | undefined;
  declared: HitlMode | undefined;
  accepted?: HitlMode | undefined;
  pending: HitlMode | undefined;
  vetoTtlMs: number | undefined;
  /** `operator` forces a human decision on every call: no standing approval applies. */
  reviewer?: 'operator' | undefined;
  stale: boolean;
}

/**
 * The fleet side the policy reads: the composition root adapts the card broker to it.
 *
 * @example
 * ```ts
 * const declarations: EffectiveDeclarations = {
 *   effectiveRadius: (a, s) => broker.effectiveRadius(a, s),
 *   effectiveHitlMode: (a, s) => broker.effectiveHitlMode(a, s),
 *   domains: (a, s) => broker.declaredDomains(a, s),
 * };
 * ```
 */
export interface EffectiveDeclarations {
  effectiveRadius(agent: string, skill: string): RadiusFacts;
  effectiveHitlMode(agent: string, skill: string): HitlFacts;
  /** The effect domains the skill declared (effect-domain-v1), shown to approvers. */
  domains(agent: string, skill: string): readonly string[] | undefined;
}

/** Publishes one event on the bus (`hitl.approval.*`, `hitl.notification`). */
export type PolicyPublish = <T extends PolicyTopic>(
  topic: T,
  payload: FleetgateTopics[T],
) => Promise<void>;

/** The topics the policy room publishes. */
export type PolicyTopic =
  | 'hitl.approval.requested'
  | 'hitl.approval.decided'
  | 'hitl.approval.expired'
  | 'hitl.notification';

/** The topics the approvals inbox writes in the transactions of its own changes. */
export type InboxTopic = 'hitl.approval.voted';

/**
 * Where the approvals inbox writes the events of its changes: inside the change's transaction
 * (the store's outbox), so an event commits with the vote it tells of, or not at all. Without it
 * the inbox writes no event (a reader that only lists requests needs none).
 *
 * @example
 * ```ts
 * const events: InboxEvents = {
 *   write: async (trx, topic, payload, options) => {
 *     await writeOutboxEvent(trx, topic, payload, options);
 *   },
 *   onCommitted: () => relay.notify(),
 * };
 * ```
 */
export interface InboxEvents {
  write<T extends InboxTopic>(
    trx: Transaction<unknown>,
    topic: T,
    payload: FleetgateTopics[T],
    options: { id: string; correlationId: string; now: number },
  ): Promise<void>;
  /** After a transaction that wrote events committed (e.g. wakes the outbox relay). */
  onCommitted?(): void;
}

/** A per agent/skill override; `*` matches any agent or skill. The most specific match wins. */
export interface PolicyOverride {
  agent: string;
  skill: string;
  /** `allow` waives the radius thresholds (never the declared mode); `deny` refuses every call. */
  action?: 'allow' | 'deny' | undefined;
  /** The least mode this skill runs under. */
  minMode?: HitlMode | undefined;
  /** Shown in the reasons. */
  note?: string | undefined;
}

/** The rules `decide` applies (the config's `policy:` section, durations in milliseconds). */
export interface PolicyRules {
  /** What an unknown or stale radius counts as: a radius, or `proceed` (no radius gate). */
  unknownRadius: BlastRadius | 'proceed';
  /** Calls at or above this radius need an approval (`gated`). */
  approvalAtOrAbove: BlastRadius;
  /** Calls at or above this radius run after a veto window. */
  vetoAtOrAbove?: BlastRadius | undefined;
  /** Calls at or above this radius publish `hitl.notification`. */
  notifyAtOrAbove?: BlastRadius | undefined;
  /** Veto window when the declaration names none. */
  vetoWindowMs: number;
  /** How long an approval request stays open; expiry is a rejection. */
  approvalTtlMs: number;
  /** How long a rejection is remembered for the identical call. */
  rejectCooldownMs: number;
  /** Distinct approvers needed for `fleet` and `public` calls (others need one). */
  approvers: { fleet: number; public: number };
  overrides: readonly PolicyOverride[];
}

/** Defaults of {@link PolicyRules}: fail closed. */
export const DEFAULT_POLICY_RULES: PolicyRules = Object.freeze({
  unknownRadius: 'public',
  approvalAtOrAbove: 'repo',
  vetoWindowMs: 60_000,
  approvalTtlMs: 3_600_000,
  rejectCooldownMs: 3_600_000,
  approvers: Object.freeze({ fleet: 1, public: 2 }),
  overrides: Object.freeze([]),
});

export { REASON_KINDS } from '../protocol/index.js';
export type { Reason, ReasonKind } from '../protocol/index.js';

/** What a person grants: a standing approval of one skill up to a radius, for a time. */
export interface StandingGrantRequest {
  agent: string;
  skill: string;
  /** Calls at this radius or narrower are covered. */
  maxRadius: BlastRadius;
  by: string;
  forMs: number;
  /** Uses allowed; unlimited until expiry when absent. */
  uses?: number;
  reason?: string;
}

/** A standing approval as `decide` sees it. */
export interface StandingGrant {
  id: string;
  agent: string;
  skill: string;
  /** Calls at this radius or narrower are covered. */
  maxRadius: BlastRadius;
  grantedBy: string;
  /** Epoch ms after which the grant no longer applies. */
  expiresAt: number;
  /** Uses left; `null` for unlimited until expiry. */
  usesLeft: number | null;
}

/** What `decide` reads about one call. */
export interface DecisionInput {
  agent: string;
  skill: string;
  radius: RadiusFacts;
  hitl: HitlFacts;
  /** Live standing grants for this agent/skill (the gate filters by agent/skill and time). */
  standing?: readonly StandingGrant[];
  /** Clock for grant expiry (default: grants are taken as live). */
  now?: number;
}

/** What the policy says about one call. */
export interface Decision {
  mode: HitlMode;
  /** Present when the call is refused outright. */
  deny?: { reason: string };
  /** The radius the decision used; `null` only when an unknown radius proceeds. */
  effectiveRadius: BlastRadius | null;
  reasons: Reason[];
  /** The veto window, for `veto`. */
  vetoTtlMs?: number;
  /** Distinct approvers needed, for `gated` and `compound`. */
  approvers: number;
  /** `operator`: a human must decide every call. */
  reviewer?: 'operator';
  /** The standing approval that lets this call go without asking. */
  standing?: string;
}
