/**
 * An agent that cannot list its tasks, as every A2A v0.3 agent: its SDK handler with `ListTasks`
 * refused (UnsupportedOperation), for `startOpsAgent({ decorateHandler })`.
 */
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';

/** Refuses `ListTasks`, telling `onAsked` each time it is asked. */
export function withoutListTasks(
  onAsked: () => void = () => undefined,
): (handler: A2ARequestHandler) => A2ARequestHandler {
  return (handler) => {
    const unlisted = Object.create(handler) as A2ARequestHandler;
    unlisted.listTasks = () => {
      onAsked();
      return Promise.reject(new UnsupportedOperationError('ListTasks is not supported'));
    };
    return unlisted;
  };
}
