/**
 * `ops.alert.outcome_unknown`: a dispatch ended `FLEETGATE_CALL_OUTCOME_UNKNOWN` — its gateway
 * stopped after sending the call and the agent has no task for it, or the agent forgot the task it
 * was following — so whether it ran is unknown; the message says which, from the call's error.
 * A person must check before sending it again; the severity (base `error`) is scaled by the
 * skill's effective radius. The alert id derives from the dispatch, so it is raised once.
 */
import type { DispatchEvent, EventEnvelope } from '../protocol/index.js';
import type { AlertRaiser, OpsAlert } from './alert.js';
import { alertEventId, alertRaiser, alertSinkOf } from './alert.js';
import type { AlertRaiserOptions } from './reconciler.js';
import { ALERT_BASE_SEVERITY, scaleSeverity } from './severity.js';

/** Default subscription name of {@link createOutcomeUnknownAlerts}. */
export const OUTCOME_UNKNOWN_SUBSCRIPTION = 'alerts-outcome-unknown';

/** Raises `ops.alert.outcome_unknown` for dispatches whose outcome is unknown. */
export type OutcomeUnknownAlerts = AlertRaiser<'skill.dispatch.failed'>;

/**
 * Creates the outcome-unknown alerts (a durable subscriber of `skill.dispatch.failed`).
 *
 * @example
 * ```ts
 * const alerts = createOutcomeUnknownAlerts({ bus, declarations });
 * await alerts.start();
 * ```
 */
export function createOutcomeUnknownAlerts(options: AlertRaiserOptions): OutcomeUnknownAlerts {
  const { bus, declarations } = options;
  const sink = alertSinkOf(bus, options.sink);
  const base = options.baseSeverity?.outcome_unknown ?? ALERT_BASE_SEVERITY.outcome_unknown;

  async function handle(
    event: EventEnvelope<'skill.dispatch.failed', DispatchEvent>,
  ): Promise<OpsAlert | undefined> {
    const dispatch = event.payload;
    const error = dispatch.result?.error;
    if (error?.code !== 'FLEETGATE_CALL_OUTCOME_UNKNOWN') return undefined;
    const { radius: effective, stale } = declarations.blast(dispatch.agent, dispatch.skill);
    const radius = stale || effective === undefined ? 'unknown' : effective;
    const alert: OpsAlert = {
      kind: 'outcome_unknown',
      severity: scaleSeverity(base, radius, options.severity),
      agent: dispatch.agent,
      skill: dispatch.skill,
      radius,
      message: `${dispatch.agent}/${dispatch.skill}: dispatch ${dispatch.id} may or may not have run. ${error.message}`,
      evidence: { dispatchId: dispatch.id, error: error.message },
    };
    await sink(alert, {
      id: alertEventId('outcome_unknown', dispatch.id),
      correlationId: dispatch.correlationId,
    });
    return alert;
  }

  return alertRaiser(
    bus,
    'skill.dispatch.failed',
    options.subscriptionName ?? OUTCOME_UNKNOWN_SUBSCRIPTION,
    handle,
  );
}
