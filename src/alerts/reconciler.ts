/**
 * Declared-vs-observed reconciliation: for each `world.state.delta` event, compares the domains
 * the agent changed with what it declared — the effect-domain-v1 domains of the skill and its
 * effective blast radius — and raises `ops.alert.undeclared_effect` and `ops.alert.blast_violation`.
 * With `learnFloors`, a violation raises the skill's operator floor to the observed radius so the
 * next call is gated accordingly.
 */
import type { EventBus } from '../bus/index.js';
import { standingSubscriber } from '../bus/index.js';
import { FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { BlastRadius } from '../protocol/index.js';
import { BLAST_ORDER, maxRadius } from '../protocol/index.js';
import type { AlertSink, OpsAlert } from './alert.js';
import { alertEventId, alertSinkOf } from './alert.js';
import type { DeclarationLookup } from '../protocol/index.js';
import type { FloorWriter } from './ports.js';
import type { AlertKind, Severity, SeverityOptions } from './severity.js';
import { ALERT_BASE_SEVERITY, scaleSeverity } from './severity.js';

/** Default subscription (and JetStream durable consumer) name of the reconciler. */
export const RECONCILER_SUBSCRIPTION = 'alerts-reconciler';

/** Configuration of one world-state domain (`domains:` in the configuration). */
export interface DomainPolicy {
  /** A delta in this domain implies at least this radius. */
  minRadius?: BlastRadius;
}

/** Options shared by the alert raisers. */
export interface AlertRaiserOptions {
  bus: EventBus;
  declarations: DeclarationLookup;
  /** Base severity per kind (default {@link ALERT_BASE_SEVERITY}). */
  baseSeverity?: Partial<Record<AlertKind, Severity>>;
  /** How an unknown or stale radius is scaled (default: as `public`). */
  severity?: SeverityOptions;
  /** Subscription name (each raiser has its own default). */
  subscriptionName?: string;
  /** Where raised alerts go (default: published on `bus`). */
  sink?: AlertSink;
}

/** Options of {@link createReconciler}. */
export interface ReconcilerOptions extends AlertRaiserOptions {
  /** Per-domain policy (`domains:` in the configuration). */
  domains?: Readonly<Record<string, DomainPolicy>>;
  /** Raise the operator floor of a violating skill to the observed radius (default false). */
  learnFloors?: boolean;
  /** Where learned floors are persisted; required when `learnFloors` is true. */
  floorWriter?: FloorWriter;
}

/** The part of a `world.state.delta` event the reconciliation reads. */
export interface ReconcileInput {
  /** Id of the `world.state.delta` event. */
  id: string;
  correlationId?: string;
  payload: {
    source: string;
    skill: string;
    taskId: string;
    deltas: readonly { domain: unknown; path?: unknown }[];
  };
}

/** Reconciles deltas with declarations. */
export interface Reconciler {
  /** Subscribes to `world.state.delta` (durable). */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Reconciles one event and publishes its alerts; resolves to the alerts raised. */
  reconcile(event: ReconcileInput): Promise<OpsAlert[]>;
}

/** The radius a delta from a skill implies beyond `self`: any change to shared world state. */
const SHARED_STATE_RADIUS: BlastRadius = 'project';

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : (JSON.stringify(error) ?? typeof error);
}

function list(items: readonly string[]): string {
  return items.join(', ');
}

/** What a reconciliation reads: the reconciler's options, resolved once. */
interface ReconcileContext {
  options: ReconcilerOptions;
  domains: Readonly<Record<string, DomainPolicy>>;
  base: Readonly<Record<AlertKind, Severity>>;
  /** Where the alerts go. */
  sink: AlertSink;
}

/** A skill that reached past its effective radius, as one event showed it. */
interface Violation {
  agent: string;
  skill: string;
  taskId: string;
  eventId: string;
  effective: BlastRadius;
  observed: BlastRadius;
  domainFloors: readonly { domain: string; minRadius: BlastRadius }[];
  /** The radius the severity is scaled by (`unknown` while the card is stale). */
  radius: BlastRadius | 'unknown';
  /** The evidence every alert of the event carries. */
  common: Readonly<Record<string, unknown>>;
}

function minRadiusOf(
  domains: Readonly<Record<string, DomainPolicy>>,
  domain: string,
): BlastRadius | undefined {
  return Object.hasOwn(domains, domain) ? domains[domain]?.minRadius : undefined;
}

/** Reconciles one event and publishes its alerts; see {@link Reconciler.reconcile}. */
async function reconcileEvent(ctx: ReconcileContext, event: ReconcileInput): Promise<OpsAlert[]> {
  const { options, domains, base, sink } = ctx;
  const { declarations } = options;
  const { source: agent, skill, taskId, deltas } = event.payload;
  // The payload crossed a process boundary; a malformed one has nothing to reconcile (the
  // materialiser reports it on system.error).
  if (!Array.isArray(deltas)) return [];
  const touched: string[] = [];
  for (const delta of deltas as readonly { domain?: unknown }[]) {
    if (typeof delta.domain === 'string' && !touched.includes(delta.domain))
      touched.push(delta.domain);
  }
  if (touched.length === 0) return [];

  const { radius: effective, stale } = declarations.blast(agent, skill);
  const declared = declarations.effectDomains(agent, skill);
  const domainFloors = touched
    .map((domain) => ({ domain, minRadius: minRadiusOf(domains, domain) }))
    .filter((d): d is { domain: string; minRadius: BlastRadius } => d.minRadius !== undefined);
  // What the deltas show the skill reached: the widest configured minRadius of its domains, and
  // beyond `self` in any case, since it changed shared world state.
  const observed = maxRadius(SHARED_STATE_RADIUS, ...domainFloors.map((d) => d.minRadius))!;
  const scaleBy = (radius: BlastRadius | undefined): BlastRadius | 'unknown' =>
    stale || radius === undefined ? 'unknown' : radius;
  const common = { eventId: event.id, taskId, domains: touched, stale };
  const alerts: { alert: OpsAlert; error?: unknown }[] = [];

  const undeclared =
    declared === undefined ? touched : touched.filter((d) => !declared.includes(d));
  if (undeclared.length > 0) {
    const radius = scaleBy(maxRadius(effective, ...domainFloors.map((d) => d.minRadius)));
    alerts.push({
      alert: {
        kind: 'undeclared_effect',
        severity: scaleSeverity(base.undeclared_effect, radius, options.severity),
        agent,
        skill,
        radius,
        message:
          (declared === undefined
            ? `${agent}/${skill} changed ${list(undeclared)} in task ${taskId} but declared no effect-domain-v1 domains for the skill`
            : `${agent}/${skill} changed ${list(undeclared)} in task ${taskId}, outside its declared domains (${list(declared) || 'none'})`) +
          `; the change was applied: review it (fleetgate world ${undeclared[0]!} --history), then declare ${undeclared.length === 1 ? 'the domain' : 'the domains'} for the skill or have the agent stop changing ${undeclared.length === 1 ? 'it' : 'them'}`,
        evidence: {
          ...common,
          undeclaredDomains: undeclared,
          declaredDomains: declared === undefined ? null : [...declared],
        },
      },
    });
  }

  if (effective !== undefined && BLAST_ORDER[observed] > BLAST_ORDER[effective]) {
    const violation = { agent, skill, taskId, eventId: event.id, effective, observed };
    alerts.push(
      await blastViolation(ctx, { ...violation, domainFloors, radius: scaleBy(observed), common }),
    );
  }

  for (const { alert } of alerts) {
    await sink(alert, {
      id: alertEventId(alert.kind, event.id),
      ...defined({ correlationId: event.correlationId }),
    });
  }
  // A failed floor write is reported after the alert went out; the bus puts it on system.error
  // (and JetStream redelivers, which retries the write; the alert id dedupes the re-send).
  for (const { alert, error } of alerts) {
    if (error === undefined || error === null) continue;
    throw new FleetgateError(
      'FLEETGATE_FLOOR_WRITE_FAILED',
      `Raising the operator floor of ${alert.agent}/${alert.skill} failed: ${errorText(error)}`,
      { cause: error, details: { agent: alert.agent, skill: alert.skill, eventId: event.id } },
    );
  }
  return alerts.map((a) => a.alert);
}

/**
 * The `blast_violation` alert of a skill that reached past its effective radius. With
 * `learnFloors` the skill's operator floor is raised to what it reached first; a failed write comes
 * back as `error`, thrown once the alert went out.
 */
async function blastViolation(
  ctx: ReconcileContext,
  violation: Violation,
): Promise<{ alert: OpsAlert; error?: unknown }> {
  const { options, base } = ctx;
  const { agent, skill, taskId, effective, observed, domainFloors, radius, common } = violation;
  const selfSkill = effective === 'self';
  const why = [
    ...domainFloors
      .filter((d) => BLAST_ORDER[d.minRadius] > BLAST_ORDER[effective])
      .map((d) => `${d.domain} has minRadius ${d.minRadius}`),
    ...(selfSkill ? ['a self skill must not change shared world state'] : []),
  ];
  let message =
    `${agent}/${skill} has effective radius ${effective} but reached ${observed}: ` +
    `${why.join('; ')}`;
  let floorRaised: BlastRadius | undefined;
  let error: unknown;
  if (options.learnFloors === true) {
    try {
      await options.floorWriter!.raiseFloor(
        agent,
        skill,
        observed,
        `blast violation in task ${taskId} (event ${violation.eventId}): ${why.join('; ')}`,
      );
      floorRaised = observed;
      message += `; operator floor raised to ${observed}, so the next call is gated as ${observed}`;
    } catch (caught) {
      error = caught;
      message += `; raising the operator floor to ${observed} failed: ${errorText(caught)}`;
    }
  }
  return {
    alert: {
      kind: 'blast_violation',
      severity: scaleSeverity(base.blast_violation, radius, options.severity),
      agent,
      skill,
      radius,
      message,
      evidence: {
        ...common,
        effectiveRadius: effective,
        observedRadius: observed,
        domainMinRadius: Object.fromEntries(domainFloors.map((d) => [d.domain, d.minRadius])),
        ...defined({ floorRaised }),
      },
    },
    error,
  };
}

/**
 * Creates the reconciler.
 *
 * @example
 * ```ts
 * const reconciler = createReconciler({
 *   bus, declarations: fleet.declarations,
 *   domains: { deploy: { minRadius: 'public' } },
 *   learnFloors: true, floorWriter: createStoreFloorWriter({ db: store.db, kind: store.kind }),
 * });
 * await reconciler.start();
 * ```
 */
export function createReconciler(options: ReconcilerOptions): Reconciler {
  const { bus } = options;
  const domains = options.domains ?? {};
  if (options.learnFloors === true && options.floorWriter === undefined) {
    throw new TypeError('createReconciler: learnFloors needs a floorWriter');
  }
  const base = { ...ALERT_BASE_SEVERITY, ...options.baseSeverity };
  const context: ReconcileContext = {
    options,
    domains,
    base,
    sink: alertSinkOf(bus, options.sink),
  };

  function reconcile(event: ReconcileInput): Promise<OpsAlert[]> {
    return reconcileEvent(context, event);
  }

  return {
    ...standingSubscriber(bus, 'world.state.delta', reconcile, {
      name: options.subscriptionName ?? RECONCILER_SUBSCRIPTION,
      durable: true,
    }),
    reconcile,
  };
}
