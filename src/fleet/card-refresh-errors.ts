/**
 * How the card refresher (`card-refresher.ts`) reports a failure that is not a card's fault (a
 * publish or a cache write that threw): never swallowed, and never failing a refresh.
 */
import type { EventBus } from '../bus/index.js';
import { warnUnreportedError } from '../bus/index.js';
import { isFleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';

/** Where the refresher's own failures go (`CardRefresherOptions.onError`). */
export type RefreshErrorHandler = (
  error: unknown,
  context: { agent?: string; topic?: string; source: string },
) => void;

/** The default handler: published on `system.error`, or a process warning when that fails too. */
export function refreshErrorReporter(
  bus: Pick<EventBus, 'publish'> | undefined,
): RefreshErrorHandler {
  return (error: unknown, context: { agent?: string; topic?: string; source: string }): void => {
    const message = error instanceof Error ? error.message : String(error);
    if (bus === undefined) {
      warnUnreportedError(error, context);
      return;
    }
    // The reporter never throws: a bus that throws (even synchronously) while it is reporting a
    // failed publish must not turn into an unhandled rejection of a scheduled refresh.
    let report: Promise<unknown>;
    try {
      report = bus.publish('system.error', {
        source: `fleet:${context.source}`,
        message: context.agent === undefined ? message : `${context.agent}: ${message}`,
        ...(isFleetgateError(error) ? { code: error.code } : {}),
        ...defined({ topic: context.topic }),
      });
    } catch (again) {
      warnUnreportedError(again, { ...context, error: message });
      return;
    }
    report.catch((again: unknown) => warnUnreportedError(again, { ...context, error: message }));
  };
}

/** Runs a side effect whose failure must not fail the refresh: reported, never swallowed. */
export async function guarded(
  onError: RefreshErrorHandler,
  agent: string,
  what: string,
  effect: () => Promise<unknown>,
): Promise<void> {
  try {
    await effect();
  } catch (error) {
    onError(error, { agent, source: what });
  }
}
