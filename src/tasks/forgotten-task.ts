/**
 * When the tracker stops following a task because its agent no longer knows it (the agent
 * restarted with an in-memory task store, or lost its state): the rule, what counts towards it,
 * and the task it is settled with. Whether the call ran is then unknown, so it ends failed with
 * `FLEETGATE_CALL_OUTCOME_UNKNOWN` rather than being followed (or sent) again.
 */
import type { Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';

/**
 * When a task counts as forgotten by its agent: at least `answers` not-found answers in a row,
 * the first and the last at least `windowMs` apart. A load balancer in front of agent replicas
 * that do not share their tasks can answer "not found" now and then; an agent that restarted
 * answers it every time, for as long as one asks.
 */
export interface ForgetRule {
  /** Not-found answers in a row (default 3). */
  answers?: number;
  /**
   * The least time from the first of them to the last (default: the longest poll interval,
   * `polling.maxIntervalMs`, 30 s unless set): as long as the tracker may go without looking.
   */
  windowMs?: number;
}

/** Not-found answers about one task since the agent last showed it. */
export interface NotFoundRun {
  /** How many, in a row. */
  count: number;
  /** When the first of them came (the tracker's clock). */
  since: number;
}

/** How deep {@link isTaskNotFound} looks into `cause`s. */
const CAUSE_DEPTH = 4;

/**
 * Whether an agent answered "task not found": the SDK's `TaskNotFoundError`, from JSON-RPC
 * (-32001) or HTTP+JSON (404 with the `TASK_NOT_FOUND` reason), v1.0 or v0.3, or as the `cause`
 * of a stream's error event. A bare 404, a connection refused, a timeout or a 5xx is not: it says
 * nothing about the task.
 */
export function isTaskNotFound(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth <= CAUSE_DEPTH && current instanceof Error; depth += 1) {
    if (current instanceof TaskNotFoundError) return true;
    current = current.cause;
  }
  return false;
}

/**
 * Adds a not-found answer seen at `now` to `run` (a new run when undefined) and says whether the
 * rule is met.
 */
export function noteNotFound(
  run: NotFoundRun | undefined,
  now: number,
  rule: Required<ForgetRule>,
): { run: NotFoundRun; forgotten: boolean } {
  const next = run === undefined ? { count: 1, since: now } : { ...run, count: run.count + 1 };
  return {
    run: next,
    forgotten: next.count >= rule.answers && now - next.since >= rule.windowMs,
  };
}

/**
 * A task the gateway settles itself when the agent cannot say how it ended: `state`, nothing
 * reported (no artifacts, so no deltas), no context, history or metadata.
 */
export function standInTask(taskId: string, state: TaskState): Task {
  return {
    id: taskId,
    contextId: '',
    status: { state, message: undefined, timestamp: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

/**
 * The task a forgotten task is settled with: `failed`, nothing reported. The task terminal gives
 * its call's `after` hooks `FLEETGATE_CALL_OUTCOME_UNKNOWN` for it, and the dispatch ends with
 * that code.
 */
export function forgottenTask(taskId: string): Task {
  return standInTask(taskId, TaskState.TASK_STATE_FAILED);
}
