/** The `ops.alert.<kind>` record and how it is published (deterministic id, one place). */
import type { EventBus, StandingSubscriber } from '../bus/index.js';
import { standingSubscriber } from '../bus/index.js';
import type { EventFor, FleetgateTopics, OpsAlertEvent } from '../protocol/index.js';
import { deterministicEventId } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { BlastRadius } from '../protocol/index.js';
import type { AlertKind, Severity } from './severity.js';

/** An alert, as published on `ops.alert.<kind>`. */
export interface OpsAlert {
  kind: AlertKind;
  severity: Severity;
  agent: string;
  skill: string;
  /** The radius the severity was scaled by; `unknown` when undeclared or stale. */
  radius: BlastRadius | 'unknown';
  message: string;
  evidence: Record<string, unknown>;
}

/**
 * The id of the alert of `kind` caused by source event `sourceId`: the same cause always gives
 * the same id, so re-processing an event (redelivery, a second replica) never duplicates an alert.
 */
export function alertEventId(kind: AlertKind, sourceId: string): string {
  return deterministicEventId('ops.alert', kind, sourceId);
}

/** How an alert is told: its id (see {@link alertEventId}) and the cause's correlation id. */
export interface AlertOptions {
  id: string;
  correlationId?: string | undefined;
}

/**
 * Where a raised alert goes. By default it is published on the bus ({@link publishAlert}); a
 * gateway writes it into its store's outbox instead, so that it is durable, kept in the event log
 * (`tail --from`, a feed's resume) and published once even when raised again for the same cause.
 */
export type AlertSink = (alert: OpsAlert, options: AlertOptions) => Promise<void>;

/** Publishes `alert` on `ops.alert.<kind>` with `id` (see {@link alertEventId}). */
export async function publishAlert(
  bus: Pick<EventBus, 'publish'>,
  alert: OpsAlert,
  options: AlertOptions,
): Promise<void> {
  const payload: OpsAlertEvent = alert;
  await bus.publish(`ops.alert.${alert.kind}`, payload, {
    id: options.id,
    ...defined({ correlationId: options.correlationId }),
  });
}

/** The sink of a raiser: `sink` when given, else publishing on `bus`. */
export function alertSinkOf(
  bus: Pick<EventBus, 'publish'>,
  sink: AlertSink | undefined,
): AlertSink {
  return sink ?? ((alert, options) => publishAlert(bus, alert, options));
}

/** Raises alerts from the events of `P`: a durable subscriber between start and stop. */
export interface AlertRaiser<P extends string> extends StandingSubscriber {
  /** Handles one event; resolves to the alert it raised, if any. */
  handle(event: EventFor<FleetgateTopics, P>): Promise<OpsAlert | undefined>;
}

/**
 * A raiser of alerts from one kind of event: `handle` decides on an event (and publishes the
 * alert, if any); started, it is a durable subscriber named `name` of `pattern`.
 */
export function alertRaiser<P extends string>(
  bus: EventBus,
  pattern: P,
  name: string,
  handle: AlertRaiser<P>['handle'],
): AlertRaiser<P> {
  return { ...standingSubscriber(bus, pattern, handle, { name, durable: true }), handle };
}
