import type { Task } from '@a2a-js/sdk';

import { FleetgateError } from '../errors/index.js';
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

/** Options of {@link TerminalRouter}. */
export interface TerminalRouterOptions {
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

  constructor(options: TerminalRouterOptions = {}) {
    this.#claim = options.claim;
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
  async onTerminal(task: Task): Promise<TerminalResult> {
    if (!isTerminalState(normalizeTaskState(task.status?.state))) {
      return { ran: false, reason: 'not-terminal' };
    }
    const entry = this.#pending.get(task.id);
    if (entry === undefined) return { ran: false, reason: 'not-pending' };
    // Synchronous delete before any await: a second path in this process sees `not-pending`.
    this.#pending.delete(task.id);
    if (this.#claim !== undefined && !(await this.#claim(entry.info.agent, task.id))) {
      return { ran: false, reason: 'claimed' };
    }
    const outcome = outcomeForTask(task);
    const failure = await entry.chain.runAfter(outcome);
    return failure === undefined ? { ran: true, outcome } : { ran: true, outcome, failure };
  }

  /**
   * The reply path of a call whose task was already terminal when the agent answered: the same as
   * {@link track} then {@link onTerminal}, without storing an entry no other path could see in
   * between (both steps would run in one synchronous stretch). Any older pending entry of the task
   * is dropped, as `track` would have replaced it.
   */
  async finish(task: Task, chain: SkillCallChain): Promise<TerminalResult> {
    if (!isTerminalState(normalizeTaskState(task.status?.state))) {
      this.track(task.id, chain);
      return { ran: false, reason: 'not-terminal' };
    }
    this.#pending.delete(task.id);
    if (this.#claim !== undefined && !(await this.#claim(chain.ctx.agent, task.id))) {
      return { ran: false, reason: 'claimed' };
    }
    const outcome = outcomeForTask(task);
    const failure = await chain.runAfter(outcome);
    return failure === undefined ? { ran: true, outcome } : { ran: true, outcome, failure };
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
