import type { Task } from '@a2a-js/sdk';

import type { CollectedEvent, EventCollector } from '../bus/index.js';
import { FleetgateError } from '../protocol/index.js';
import type { CallOutcome, SkillCallChain } from '../extensions/index.js';
import { isTerminalState, normalizeTaskState } from '../protocol/index.js';

/**
 * The outcome `after` hooks get for a task at its terminal state: `{ ok: true }` for `completed`,
 * `{ ok: false, error: FLEETGATE_TASK_FAILED, task }` for `failed`, `canceled` and `rejected`.
 */
export function outcomeForTask(task: Task): CallOutcome {
  const state = normalizeTaskState(task.status?.state);
  if (state === 'completed') return { ok: true, task };
  return {
    ok: false,
    task,
    error: new FleetgateError('FLEETGATE_TASK_FAILED', `The task ended ${state}.`, {
      details: { taskId: task.id, state },
    }),
  };
}

/** A call whose task was not terminal when the agent answered; its `after` hooks still wait. */
export interface PendingCall {
  readonly agent: string;
  readonly skill: string;
  readonly correlationId: string;
  readonly taskId: string;
  /** `Date.now()` when the call was handed over. */
  readonly since: number;
}

/** What {@link TerminalRouter.onTerminal} did. */
export type TerminalResult =
  /** The task's call was pending here and this path claimed it: the `after` hooks ran. */
  | { readonly ran: true; readonly outcome: CallOutcome; readonly failure?: FleetgateError }
  /** Nothing to do: not terminal, unknown here, or another path claimed it first. */
  | { readonly ran: false; readonly reason: 'not-terminal' | 'not-pending' | 'claimed' };

/** Which path saw a task's terminal state. */
export type TerminalPath =
  'reply' | 'stream' | 'poll' | 'push' | 'resubscribe' | 'recovery' | 'timeout';

/** What a path claims when it finishes a task. */
export interface TerminalClaim {
  agent: string;
  skill: string;
  correlationId: string;
  taskId: string;
  state: ReturnType<typeof normalizeTaskState>;
  via: TerminalPath;
  /** Epoch milliseconds the call started. */
  startedAt: number;
}

/**
 * Claims a task terminal durably and, in the same transaction, keeps the events its `after` hooks
 * produced (the outbox). Resolves true for the one path, process or replica that wins.
 */
export type TerminalCommit = (claim: TerminalClaim, events: CollectedEvent[]) => Promise<boolean>;

/** Options of {@link TerminalRouter}. */
export interface TerminalRouterOptions {
  /**
   * Exactly-once across paths, restarts and replicas: the `after` hooks run with their events
   * collected (the extensions publish through `collector`), then `commit` claims the task and
   * writes those events in one transaction; a path that loses the claim drops them.
   */
  durable?: { collector: EventCollector; commit: TerminalCommit };
  /**
   * Claims the right to finish one task, first caller wins. The default claims in memory (enough
   * for one process); the task tracker issue passes a durable compare-and-set so restarts and
   * replicas never finish a task twice.
   */
  claim?: (agent: string, taskId: string) => Promise<boolean>;
}

interface Entry {
  chain: SkillCallChain;
  info: PendingCall;
}

/**
 * The single terminal seam: **every** path that sees a task's terminal state — the blocking reply,
 * the end of a stream, and later the poller, the push receiver and restart recovery — calls
 * {@link onTerminal}. The first call for a task claims it and runs the call's `after` hooks once;
 * every later call is a no-op.
 */
export class TerminalRouter {
  readonly #pending = new Map<string, Entry>();
  readonly #claim: ((agent: string, taskId: string) => Promise<boolean>) | undefined;
  readonly #durable: TerminalRouterOptions['durable'];

  constructor(options: TerminalRouterOptions = {}) {
    this.#claim = options.claim;
    this.#durable = options.durable;
  }

  /** Registers the chain of a call whose task `taskId` has not finished yet. */
  track(taskId: string, chain: SkillCallChain): PendingCall {
    const info: PendingCall = {
      agent: chain.ctx.agent,
      skill: chain.ctx.skill,
      correlationId: chain.ctx.correlationId,
      taskId,
      since: Date.now(),
    };
    this.#pending.set(taskId, { chain, info });
    return info;
  }

  /** The calls still waiting for their terminal task. */
  pending(): PendingCall[] {
    return [...this.#pending.values()].map((e) => e.info);
  }

  /**
   * Hands a task in its terminal state to the call that started it: claims the task, then runs
   * the `after` hooks (reverse order) with {@link outcomeForTask}. Safe to call from several
   * paths and several times.
   */
  async onTerminal(task: Task, via: TerminalPath = 'poll'): Promise<TerminalResult> {
    if (!isTerminalState(normalizeTaskState(task.status?.state))) {
      return { ran: false, reason: 'not-terminal' };
    }
    const entry = this.#pending.get(task.id);
    if (entry === undefined) return { ran: false, reason: 'not-pending' };
    // Synchronous delete before any await: a second path in this process sees `not-pending`.
    this.#pending.delete(task.id);
    return this.#complete(task, entry.chain, via);
  }

  /**
   * Finishes a task whose call started in another process (restart recovery, another replica):
   * `chain` was rebuilt with {@link SkillCallChain.resumeAfterBefore}. Exactly once only with a
   * durable commit.
   */
  resume(task: Task, chain: SkillCallChain, via: TerminalPath): Promise<TerminalResult> {
    if (!isTerminalState(normalizeTaskState(task.status?.state))) {
      return Promise.resolve({ ran: false, reason: 'not-terminal' });
    }
    if (this.#pending.has(task.id)) return this.onTerminal(task, via);
    return this.#complete(task, chain, via);
  }

  async #complete(task: Task, chain: SkillCallChain, via: TerminalPath): Promise<TerminalResult> {
    const outcome = outcomeForTask(task);
    if (this.#durable !== undefined) {
      const { collector, commit } = this.#durable;
      const { value: failure, events } = await collector.collect(() => chain.runAfter(outcome));
      const ctx = chain.ctx;
      const won = await commit(
        {
          agent: ctx.agent,
          skill: ctx.skill,
          correlationId: ctx.correlationId,
          taskId: task.id,
          state: normalizeTaskState(task.status?.state),
          via,
          startedAt: ctx.startedAt,
        },
        events,
      );
      if (!won) return { ran: false, reason: 'claimed' };
      return failure === undefined ? { ran: true, outcome } : { ran: true, outcome, failure };
    }
    if (this.#claim !== undefined && !(await this.#claim(chain.ctx.agent, task.id))) {
      return { ran: false, reason: 'claimed' };
    }
    const failure = await chain.runAfter(outcome);
    return failure === undefined ? { ran: true, outcome } : { ran: true, outcome, failure };
  }

  /**
   * The reply path of a call whose task was already terminal when the agent answered: the same as
   * {@link track} then {@link onTerminal}, without storing an entry no other path could see in
   * between (both steps would run in one synchronous stretch). Any older pending entry of the task
   * is dropped, as `track` would have replaced it.
   */
  async finish(
    task: Task,
    chain: SkillCallChain,
    via: TerminalPath = 'reply',
  ): Promise<TerminalResult> {
    if (!isTerminalState(normalizeTaskState(task.status?.state))) {
      this.track(task.id, chain);
      return { ran: false, reason: 'not-terminal' };
    }
    this.#pending.delete(task.id);
    return this.#complete(task, chain, via);
  }

  /**
   * Drops a pending call without running its hooks: another process or replica finished the task
   * (its claim won there). Returns whether there was one.
   */
  discard(taskId: string): boolean {
    return this.#pending.delete(taskId);
  }

  /**
   * Gives up on a pending call (the tracker could not reach the agent, the caller canceled): its
   * `after` hooks run with `{ ok: false, error }`.
   */
  async abandon(taskId: string, error: FleetgateError): Promise<TerminalResult> {
    const entry = this.#pending.get(taskId);
    if (entry === undefined) return { ran: false, reason: 'not-pending' };
    this.#pending.delete(taskId);
    const outcome: CallOutcome = { ok: false, error };
    const failure = await entry.chain.runAfter(outcome);
    return failure === undefined ? { ran: true, outcome } : { ran: true, outcome, failure };
  }
}
