import type { Task } from '@a2a-js/sdk';

import { readTask, type NormalizedTask } from '../protocol/index.js';

// A memo, not shared state: keyed weakly by the task object, so several after hooks of one call
// (effect-domain-v1, cost-v1) normalise the terminal task once and nothing outlives the task.
const normalized = new WeakMap<Task, NormalizedTask>();

/** The task in the protocol's normalised shape, computed once per task object. */
export function normalizedTask(task: Task): NormalizedTask {
  let view = normalized.get(task);
  if (view === undefined) {
    view = readTask(task);
    normalized.set(task, view);
  }
  return view;
}
