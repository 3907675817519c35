/** `ops.alert.radius_widened`: an agent widened a skill's blast radius on its card. */
import type { EventBus } from '../bus/index.js';
import type { DeclarationChangedEvent, EventEnvelope } from '../protocol/index.js';
import { BLAST_V1_URI, isBlastRadius } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { AlertRaiser, AlertSink, OpsAlert } from './alert.js';
import { alertEventId, alertRaiser, alertSinkOf } from './alert.js';
import { scaleSeverity } from './severity.js';

/** The subscription name of {@link createRadiusWidenedAlerts}. */
export const RADIUS_WIDENED_SUBSCRIPTION = 'alerts-radius-widened';

/** Options of {@link createRadiusWidenedAlerts}. */
export interface RadiusWidenedAlertsOptions {
  bus: EventBus;
  /** Subscription name (default {@link RADIUS_WIDENED_SUBSCRIPTION}). */
  subscriptionName?: string;
  /** Where raised alerts go (default: published on `bus`). */
  sink?: AlertSink;
}

/** Raises `ops.alert.radius_widened` for every widened blast-v1 declaration. */
export type RadiusWidenedAlerts = AlertRaiser<'fleet.declaration.changed'>;

/**
 * Creates the radius-widened alerts: a subscriber of `fleet.declaration.changed` that alerts when
 * a skill's declared blast radius widened (it is in effect at once; a narrowing waits for an
 * acknowledgement instead). Severity is `warning` scaled by the new radius. The alert id derives
 * from the declaration event (its id and time), so a redelivery never doubles it.
 *
 * @example
 * ```ts
 * const widened = createRadiusWidenedAlerts({ bus });
 * await widened.start();
 * ```
 */
export function createRadiusWidenedAlerts(
  options: RadiusWidenedAlertsOptions,
): RadiusWidenedAlerts {
  const { bus } = options;
  const sink = alertSinkOf(bus, options.sink);

  async function handle(
    event: EventEnvelope<'fleet.declaration.changed', DeclarationChangedEvent>,
  ): Promise<OpsAlert | undefined> {
    const change = event.payload;
    if (change.extension !== BLAST_V1_URI || !change.widened || !isBlastRadius(change.after))
      return undefined;
    const radius = change.after;
    const alert: OpsAlert = {
      kind: 'radius_widened',
      severity: scaleSeverity('warning', radius),
      agent: change.agent,
      skill: change.skill,
      radius,
      message: `${change.agent}/${change.skill} widened its blast radius from ${String(change.before)} to ${radius} on its card; in effect now: its calls are gated as ${radius}. Confirm the change with the agent's owner`,
      evidence: { before: change.before, after: radius, declarationEventId: event.id },
    };
    await sink(alert, {
      // The declaration event's id names the card it came from: a radius widened again to the
      // same card (widened, narrowed, widened) is another cause, told apart by when it was seen.
      id: alertEventId('radius_widened', `${event.id}@${event.time}`),
      ...defined({ correlationId: event.correlationId }),
    });
    return alert;
  }

  return alertRaiser(
    bus,
    'fleet.declaration.changed',
    options.subscriptionName ?? RADIUS_WIDENED_SUBSCRIPTION,
    handle,
  );
}
