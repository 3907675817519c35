/**
 * How both buses report a failure (a handler that threw, an event dropped or refused), so that
 * the in-memory and the JetStream bus word and route it alike.
 */
import { isFleetgateError, type SystemErrorEvent } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { PublishOptions, UnreportedErrorHandler } from './types.js';

/** What {@link createFailureReporter} needs of its bus. */
export interface ReportingBus {
  /** True once the bus can publish no more reports. */
  reportsClosed: () => boolean;
  /** Publishes a report on `system.error`, calling `onRefused` if it could not be published. */
  publishReport: (
    payload: SystemErrorEvent,
    options: PublishOptions,
    onRefused: (reportError: unknown) => void,
  ) => void;
  /** Gets the failures that cannot be published. */
  onUnreported: UnreportedErrorHandler;
}

/** Reports one failure of a bus, met by `source` on an event of `topic` (if any). */
export type ReportFailure = (
  error: unknown,
  source: string,
  topic: string | undefined,
  eventId: string | undefined,
  correlationId?: string,
) => void;

/**
 * Reports the failures of `bus` on `system.error`, unless one is about a `system.error` event
 * itself or the bus reports no more: then, as when its report is refused, the unreported-error
 * handler gets it. A failure without a code of its own counts as a failed handler.
 */
export function createFailureReporter(bus: ReportingBus): ReportFailure {
  return (error, source, topic, eventId, correlationId) => {
    const context = { source, topic, eventId };
    if (topic === 'system.error' || bus.reportsClosed()) {
      bus.onUnreported(error, context);
      return;
    }
    // The code in its field and the message without it.
    const payload = {
      source,
      message: error instanceof Error ? error.message : String(error),
      code: isFleetgateError(error) ? error.code : 'FLEETGATE_BUS_HANDLER_FAILED',
      ...defined({ topic, eventId }),
    };
    bus.publishReport(payload, defined({ correlationId }), (reportError) =>
      bus.onUnreported(error, { ...context, reportError }),
    );
  };
}
