import type { Task } from '@a2a-js/sdk';

import type { CollectedEvent, EventCollector } from '../bus/index.js';
import { FleetgateError } from '../protocol/index.js';
import type { CallOutcome, SkillCallChain } from '../extensions/index.js';
import type { TaskStateName } from '../protocol/index.js';
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

/** Which path saw a task's terminal state. */
export type SettlePath =
  'reply' | 'stream' | 'poll' | 'push' | 'resubscribe' | 'recovery' | 'timeout' | 'cancel';

/**
 * What the terminal keeps of the call that started a task: enough to rebuild the call's `after`
 * chain when the task ends (the task record keeps the same four fields).
 */
export interface TaskCall {
  readonly agent: string;
  readonly skill: string;
  readonly correlationId: string;
  /** Epoch milliseconds the call started. */
  readonly startedAt: number;
}

/** A call whose task was not terminal when the agent answered; its `after` hooks still wait. */
export interface HeldCall extends TaskCall {
  readonly taskId: string;
  /** `Date.now()` when the call was held. */
  readonly since: number;
}

/** What {@link TaskTerminal.settle} did. */
export type SettleResult =
  /** This path won the task's claim: the `after` hooks ran and their events were kept. */
  | { readonly settled: true; readonly outcome: CallOutcome; readonly failure?: FleetgateError }
  /**
   * Nothing to do: not terminal, no call known for the task here (`unknown`), or another path,
   * process or replica settled it first (`claimed`).
   */
  | { readonly settled: false; readonly reason: 'not-terminal' | 'unknown' | 'claimed' }
  /**
   * The claim failed because the store is unreachable or timed out: the terminal keeps the task
   * with the events its `after` hooks produced and claims it again, backing off, until the store
   * is back (see {@link TaskTerminalOptions.claimRetry}).
   */
  | { readonly settled: false; readonly reason: 'retrying'; readonly error: unknown };

/** Told once per task, by whichever path won its claim (the dispatcher ends its record). */
export interface SettledTask {
  readonly agent: string;
  readonly taskId: string;
  readonly task: Task;
  readonly via: SettlePath;
  readonly call: TaskCall;
  /**
   * The task ended in the very answer that first named it (a call that continued no task, no
   * earlier answer held): no dispatch can be waiting for it, so there is no record to look up.
   */
  readonly fresh?: boolean;
}

/** A terminal claim kept for later: everything the claim and the winner's follow-up need. */
export interface JournaledClaim {
  readonly agent: string;
  readonly task: Task;
  readonly via: SettlePath;
  readonly state: TaskStateName;
  /** `Date.now()` when the task was seen to end. */
  readonly at: number;
  readonly call: TaskCall;
  readonly group?: ClaimGroup;
  readonly fresh?: boolean;
  readonly events: readonly CollectedEvent[];
}

/**
 * Where {@link TaskTerminal.stop} keeps the claims it could not commit because the store was away
 * (`DirectoryClaimJournal` keeps them in files); {@link TaskTerminal.replay} commits them later.
 */
export interface ClaimJournal {
  /** Writes `claims` durably (resolves once they are on disk). */
  keep(claims: readonly JournaledClaim[]): Promise<void>;
}

/** The durable claim: the task records (`createStoreTaskRecords` satisfies it). */
export interface TerminalRecords {
  /**
   * Compare-and-set of the task's terminal mark; `events` go to the outbox in the same
   * transaction. A task never recorded (a terminal reply) is recorded terminal when `call` is
   * given. Resolves once the transaction committed.
   */
  claim(
    agent: string,
    taskId: string,
    claim: {
      via: SettlePath;
      state: TaskStateName;
      at: number;
      call?: { skill: string; correlationId: string; startedAt: number };
      /** How the claim's commit may join other writes; see {@link ClaimGroup}. */
      group?: ClaimGroup;
    },
    events?: readonly CollectedEvent[],
  ): Promise<boolean>;
}

/**
 * A hint to a store that group-commits: `'loop'` lets the claim wait for the rest of the current
 * turn of the event loop, so the claims of calls ending together share one commit (other calls
 * are in flight); `'turn'` commits it as soon as the current chain of reactions has run (a call
 * alone: nothing to wait for). A store without group commit ignores it.
 */
export type ClaimGroup = 'turn' | 'loop';

/** Rebuilds the `after` chain of a call from what the terminal kept (the fleet client does). */
export type ChainSource = (call: TaskCall) => Promise<SkillCallChain>;

/** Options of {@link createTaskTerminal}. */
export interface TaskTerminalOptions {
  /**
   * Exactly-once across paths, restarts and replicas: the `after` hooks run with their events and
   * deferred effects collected (the extensions publish through `collector`), then the task record
   * is claimed with the events written to the outbox in the same transaction; the effects run
   * only for the path that won. Without it, the claim is `claim` (or in memory) and the hooks run
   * after it.
   */
  durable?: {
    records: TerminalRecords;
    collector: EventCollector;
    /** After a winning commit, e.g. `relay.notify()` so the events go out at once. */
    onCommitted?: (settled: SettledTask, events: readonly CollectedEvent[]) => void;
    /**
     * Where {@link TaskTerminal.stop} keeps the claims still waiting for the store, instead of
     * giving them up; the next start {@link TaskTerminal.replay}s them. Their deferred effects
     * (in-process cost records) are not kept; their events are.
     */
    journal?: ClaimJournal;
  };
  /**
   * A claim without the outbox: first caller wins. The default claims in memory, remembering the
   * last 10,000 settled tasks (enough for one process).
   */
  claim?: (agent: string, taskId: string) => Promise<boolean>;
  /**
   * Told once per task on the winning path, whichever it is (reply, stream, poll, push, recovery,
   * another call answering the task): the dispatcher ends its record here.
   */
  onSettled?: (settled: SettledTask) => Promise<void>;
  /**
   * Failures after the claim was won (a deferred effect, `onSettled`), and claims that failed
   * (`claim`) or were given up (`claim-abandoned`); never swallowed.
   */
  onError?: (error: unknown, context: { agent: string; taskId: string; where: string }) => void;
  /**
   * Durable claims that fail because the store is away (`FLEETGATE_STORE_UNAVAILABLE`,
   * `FLEETGATE_STORE_TIMEOUT`) are retried by the terminal itself, whichever path saw the end
   * (the blocking reply and the stream have nobody else to retry them): first after
   * `initialDelayMs` (default 250), doubling up to `maxDelayMs` (default 10,000).
   */
  claimRetry?: { initialDelayMs?: number; maxDelayMs?: number };
  now?: () => number;
}

/**
 * The single terminal of a task: every path that sees a task end — the blocking reply, the end of
 * a stream, a follow-up call answering it, the tracker's poll, push, resubscribe, recovery and
 * timeout — calls {@link settle}. The first path claims the task (durably with `durable`) and runs
 * the call's `after` hooks once; every later path is a no-op.
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
  const outcome = outcomeForTask(task);
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
