import type { Task } from '@a2a-js/sdk';

import { readTask, type NormalizedTask } from '../protocol/index.js';

// A one-slot memo, not shared state: the after hooks of one call (effect-domain-v1, cost-v1) run
// back to back on the same terminal task, so remembering the last task is enough to normalise it
// once. A WeakMap did the same but added every task to a weak table, which made each minor garbage
// collection dearer; a slot keeps at most one task alive a little longer.
let lastTask: Task | undefined;
let lastView: NormalizedTask | undefined;

/** The task in the protocol's normalised shape, computed once for consecutive uses of one task. */
export function normalizedTask(task: Task): NormalizedTask {
  if (task === lastTask && lastView !== undefined) return lastView;
  const view = readTask(task);
  lastTask = task;
  lastView = view;
  return view;
}
