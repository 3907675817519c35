/**
 * Retention of the gateway's bookkeeping tables: sent outbox rows, terminal task records, ended
 * dispatch records and the A2A proxy's ended tasks (the clients' view of those dispatches, with
 * their push configurations and deliveries) are deleted once older than their configured age, on
 * a timer. Nothing in flight is ever deleted: an unsent outbox row, a task not yet terminal, a
 * dispatch or proxy task still running or waiting stay whatever their age.
 */
import { periodicSweep } from './periodic-sweep.js';
import { pruneOutbox } from '../bus/index.js';
import type { DispatchRecordStore } from '../dispatch/index.js';
import type { TaskRecordStore } from '../tasks/index.js';
import type { GatewayStore } from './migrations.js';
import type { ProxyTaskStore } from './proxy/task-types.js';

/** Ages in milliseconds; 0 keeps those rows forever. */
export interface RetentionPolicy {
  /** Sent outbox rows (default 7 days; keep it longer than the bus's duplicate window). */
  outboxMs: number;
  /** Terminal task records (default 7 days; longer than the longest tracked task). */
  tasksMs: number;
  /** Ended dispatch records, and the proxy's ended tasks (default 30 days). */
  dispatchesMs: number;
  /** Time between sweeps (default 1 hour); 0: only when {@link RetentionSweeper.sweep} is called. */
  intervalMs: number;
}

/** What one sweep deleted, by table. */
export interface RetentionResult {
  outbox: number;
  tasks: number;
  dispatches: number;
  /** The A2A proxy's ended tasks (with their push configurations and deliveries). */
  proxyTasks: number;
}

/** Runs the retention sweeps. */
export interface RetentionSweeper {
  /** Sweeps now (also what the timer runs). */
  sweep(): Promise<RetentionResult>;
  start(): void;
  /** Stops the timer and waits for a sweep in progress. */
  stop(): Promise<void>;
}

/** Options of {@link createRetentionSweeper}. */
export interface RetentionSweeperOptions {
  store: GatewayStore;
  tasks: Pick<TaskRecordStore, 'prune'>;
  dispatches: Pick<DispatchRecordStore, 'prune'>;
  /** The A2A proxy's tasks: pruned with the dispatches they show. */
  proxyTasks: Pick<ProxyTaskStore, 'prune'>;
  policy: RetentionPolicy;
  now?: () => number;
  /** A failed sweep (the next one tries again). */
  onError: (error: unknown) => void;
}

/** Creates the sweeper; {@link RetentionSweeper.start} starts its timer. */
export function createRetentionSweeper(options: RetentionSweeperOptions): RetentionSweeper {
  const { policy } = options;
  const now = options.now ?? Date.now;

  const before = (ageMs: number, at: number): number | undefined =>
    ageMs > 0 ? at - ageMs : undefined;

  async function sweepOnce(): Promise<RetentionResult> {
    const at = now();
    const outbox = before(policy.outboxMs, at);
    const tasks = before(policy.tasksMs, at);
    const dispatches = before(policy.dispatchesMs, at);
    return {
      outbox: outbox === undefined ? 0 : await pruneOutbox(options.store.db, outbox),
      tasks: tasks === undefined ? 0 : await options.tasks.prune(tasks),
      dispatches: dispatches === undefined ? 0 : await options.dispatches.prune(dispatches),
      proxyTasks: dispatches === undefined ? 0 : await options.proxyTasks.prune(dispatches),
    };
  }

  return periodicSweep(sweepOnce, policy.intervalMs, options.onError);
}
