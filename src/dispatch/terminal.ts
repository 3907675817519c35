import type { Task } from '@a2a-js/sdk';

import { FleetgateError } from '../protocol/index.js';
import type { CallOutcome, SkillCallChain } from '../extensions/index.js';
import { isTerminalState, normalizeTaskState } from '../protocol/index.js';
import {
  afterWin,
  claimDurably,
  keyOf,
  memoryClaim,
  replayClaims,
  settledWith,
  stopClaims,
  type ClaimState,
} from './terminal-claims.js';
import type {
  ChainSource,
  ClaimGroup,
  HeldCall,
  JournaledClaim,
  SettlePath,
  SettleResult,
  SettledTask,
  TaskCall,
  TaskTerminalOptions,
} from './terminal-types.js';

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

/**
 * The outcome `after` hooks get for a task its agent no longer knows (`forgotten`): not the task's
 * end (the agent never said how it ended) but `FLEETGATE_CALL_OUTCOME_UNKNOWN`.
 */
function forgottenOutcome(agent: string, task: Task): CallOutcome {
  return {
    ok: false,
    task,
    error: new FleetgateError(
      'FLEETGATE_CALL_OUTCOME_UNKNOWN',
      `Agent ${agent} no longer knows task ${task.id}: whether the call ran is unknown. Check at the agent before sending it again.`,
      { details: { agent, taskId: task.id } },
    ),
  };
}

/**
 * The single terminal of a task: every path that sees a task end — the blocking reply, the end of
 * a stream, a follow-up call answering it, the tracker's poll, push, resubscribe, recovery,
 * timeout, and its giving up on a task the agent forgot — calls {@link settle}. The first path
 * claims the task (durably with `durable`) and runs the call's `after` hooks once; every later
 * path is a no-op.
 *
 * Memory: a held call is four small fields; the `after` chain is rebuilt at settle time.
 */
export interface TaskTerminal {
  /** Where chains are rebuilt from; the fleet client binds itself when it is created. */
  bindChains(source: ChainSource): void;
  /** Keeps the call of a task that has not ended yet (replaces an older one of the same task). */
  hold(call: TaskCall, taskId: string): HeldCall;
  /** The calls held, waiting for their task to end. */
  held(): HeldCall[];
  /**
   * Settles a task at its terminal state: claims it, then runs the `after` hooks (reverse order)
   * with {@link outcomeForTask}. The call is the held one of `(agent, task.id)`, else
   * `options.call` (the task record's, for a call that started in another process). A reply path
   * passes the call's own `chain`, which replaces any held call of the task. Safe to call from
   * several paths, several times. When the claim itself fails (a database error) the held call is
   * put back and the error thrown, so the path can retry.
   */
  settle(
    agent: string,
    task: Task,
    via?: SettlePath,
    options?: {
      chain?: SkillCallChain;
      call?: TaskCall;
      group?: ClaimGroup;
      /** The answer settling the task is the first that named it (see {@link SettledTask.fresh}). */
      fresh?: boolean;
    },
  ): Promise<SettleResult>;
  /** Drops a held call without running hooks: the task settled elsewhere. Returns whether held. */
  release(agent: string, taskId: string): boolean;
  /** Gives up on a held call: its `after` hooks run with `{ ok: false, error }`. */
  abandon(agent: string, taskId: string, error: FleetgateError): Promise<SettleResult>;
  /** Tasks whose claim waits for the store to come back. */
  retrying(): number;
  /**
   * Stops retrying claims: each waiting claim is tried once more now; one that still fails is
   * reported (`claim-abandoned`) and dropped from memory — a task with a task record is claimed
   * by the next start's recovery. Call it when the process shuts down. With a journal
   * (`durable.journal`) the claims still waiting are written to it instead (`claim-journaled`).
   */
  stop(): Promise<void>;
  /**
   * Commits claims a stopped terminal journaled: each is claimed with its events; a won claim
   * tells `onCommitted` and `onSettled` as a live one does; one another path already made is
   * dropped. Resolves with the claims the store still could not take (to keep again).
   */
  replay(claims: readonly JournaledClaim[]): Promise<JournaledClaim[]>;
}

interface Held {
  skill: string;
  correlationId: string;
  startedAt: number;
  since: number;
}

/** What the terminal's methods share: the claim side's state, the held calls and the chains. */
interface TerminalState extends ClaimState {
  /** The calls held, by {@link keyOf}. */
  readonly held: Map<string, Held>;
  /** The claim without the outbox: `options.claim`, else in memory. */
  readonly claim: (agent: string, taskId: string) => Promise<boolean>;
  /** Where chains are rebuilt from, once the fleet client is bound. */
  chains: ChainSource | undefined;
}

/** The options of one {@link TaskTerminal.settle}. */
type SettleOptions = NonNullable<Parameters<TaskTerminal['settle']>[3]>;

function rebuild(terminal: TerminalState, call: TaskCall): Promise<SkillCallChain> {
  if (terminal.chains === undefined) {
    return Promise.reject(
      new FleetgateError('FLEETGATE_CALL_FAILED', 'The task terminal has no fleet client bound.'),
    );
  }
  return terminal.chains(call);
}

/**
 * Claims the task and runs the call's `after` hooks: with `durable` the hooks run first (their
 * events go with the claim), else the claim comes first.
 */
async function run(
  terminal: TerminalState,
  task: Task,
  via: SettlePath,
  call: TaskCall,
  given: SkillCallChain | undefined,
  group: ClaimGroup | undefined,
  fresh: boolean,
): Promise<SettleResult> {
  const chain = given ?? (await rebuild(terminal, call)).resumeAfterBefore();
  const outcome = via === 'forgotten' ? forgottenOutcome(call.agent, task) : outcomeForTask(task);
  const settled: SettledTask = fresh
    ? { agent: call.agent, taskId: task.id, task, via, call, fresh }
    : { agent: call.agent, taskId: task.id, task, via, call };
  const durable = terminal.options.durable;
  if (durable !== undefined) {
    return claimDurably(terminal, durable, { settled, chain, outcome, group });
  }
  if (!(await terminal.claim(call.agent, task.id))) {
    return { settled: false, reason: 'claimed' };
  }
  const failure = await chain.runAfter(outcome);
  await afterWin(terminal, settled, []);
  return settledWith(outcome, failure);
}

/** {@link TaskTerminal.settle}: finds the task's call, then {@link run}s it once. */
async function settleTask(
  terminal: TerminalState,
  agent: string,
  task: Task,
  via: SettlePath,
  settleOptions: SettleOptions,
): Promise<SettleResult> {
  if (!isTerminalState(normalizeTaskState(task.status?.state))) {
    return { settled: false, reason: 'not-terminal' };
  }
  const { held } = terminal;
  const key = keyOf(agent, task.id);
  const waiting = terminal.pending.get(key);
  // Already settled here, waiting for the store: this path has nothing to add.
  if (waiting !== undefined) return { settled: false, reason: 'retrying', error: undefined };
  const entry = held.get(key);
  const chain = settleOptions.chain;
  const call: TaskCall | undefined =
    chain !== undefined
      ? {
          agent,
          skill: chain.ctx.skill,
          correlationId: chain.ctx.correlationId,
          startedAt: chain.ctx.startedAt,
        }
      : entry !== undefined
        ? { agent, ...entry }
        : settleOptions.call;
  if (call === undefined) return { settled: false, reason: 'unknown' };
  // Synchronous delete before any await: a second path in this process sees `unknown` (or,
  // with the record's call, loses the claim).
  held.delete(key);
  try {
    // Fresh only when nothing here held the task either.
    const fresh = settleOptions.fresh === true && entry === undefined;
    return await run(terminal, task, via, call, chain, settleOptions.group, fresh);
  } catch (error) {
    // The claim failed (or the chain could not be rebuilt): the task is not settled. Put the
    // held call back so the path that retries finds it.
    if (entry !== undefined && !held.has(key)) held.set(key, entry);
    throw error;
  }
}

/** {@link TaskTerminal.abandon}: the held call's `after` hooks run with the error. */
async function abandonHeld(
  terminal: TerminalState,
  agent: string,
  taskId: string,
  error: FleetgateError,
): Promise<SettleResult> {
  const key = keyOf(agent, taskId);
  const entry = terminal.held.get(key);
  if (entry === undefined) return { settled: false, reason: 'unknown' };
  terminal.held.delete(key);
  const chain = (await rebuild(terminal, { agent, ...entry })).resumeAfterBefore();
  const outcome: CallOutcome = { ok: false, error };
  return settledWith(outcome, await chain.runAfter(outcome));
}

/**
 * Creates the task terminal (see {@link TaskTerminal}).
 *
 * @example
 * ```ts
 * const collector = new EventCollector(bus);
 * registerStandardExtensions(registry, { bus: collector, blast });
 * const terminal = createTaskTerminal({
 *   durable: { records, collector, onCommitted: () => relay.notify() },
 *   onSettled: (settled) => dispatcher.onTaskSettled(settled),
 * });
 * const fleet = createFleetClient({ registry, bus: collector, cards, terminal });
 * ```
 */
export function createTaskTerminal(options: TaskTerminalOptions = {}): TaskTerminal {
  const terminal: TerminalState = {
    options,
    now: options.now ?? Date.now,
    held: new Map(),
    claim: options.claim ?? memoryClaim(10_000),
    chains: undefined,
    pending: new Map(),
    firstDelay: options.claimRetry?.initialDelayMs ?? 250,
    maxDelay: options.claimRetry?.maxDelayMs ?? 10_000,
    stopped: false,
  };
  const { held, now } = terminal;
  // The methods close over `terminal` and never use `this`: callers pass them around detached.
  return {
    bindChains(source) {
      terminal.chains = source;
    },
    hold(call, taskId) {
      const entry: Held = {
        skill: call.skill,
        correlationId: call.correlationId,
        startedAt: call.startedAt,
        since: now(),
      };
      held.set(keyOf(call.agent, taskId), entry);
      return { agent: call.agent, taskId, ...entry };
    },
    held() {
      return [...held].map(([key, h]) => {
        const at = key.indexOf('\u0000');
        return { agent: key.slice(0, at), taskId: key.slice(at + 1), ...h };
      });
    },
    settle(agent, task, via = 'poll', settleOptions = {}) {
      return settleTask(terminal, agent, task, via, settleOptions);
    },
    release(agent, taskId) {
      return held.delete(keyOf(agent, taskId));
    },
    abandon(agent, taskId, error) {
      return abandonHeld(terminal, agent, taskId, error);
    },
    retrying: () => terminal.pending.size,
    stop: () => stopClaims(terminal),
    replay: (claims) => replayClaims(terminal, claims),
  };
}
