import type { Task } from '@a2a-js/sdk';

import type { CollectedEvent, EventCollector } from '../bus/index.js';
import { FleetgateError, isStoreUnavailable } from '../protocol/index.js';
import type { CallOutcome, SkillCallChain } from '../extensions/index.js';
import type { TaskStateName } from '../protocol/index.js';
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

/** A claim waiting for the store to come back. */
interface PendingClaim {
  readonly agent: string;
  readonly taskId: string;
  /** What the journal keeps of it when the terminal stops before the store is back. */
  readonly kept: JournaledClaim;
  /** Claims again; resolves whether this process won. */
  readonly claim: () => Promise<boolean>;
  /** Runs after a won claim (events out, effects, `onSettled`). */
  readonly won: () => Promise<void>;
  delayMs: number;
  timer?: NodeJS.Timeout;
}

interface Held {
  skill: string;
  correlationId: string;
  startedAt: number;
  since: number;
}

const keyOf = (agent: string, taskId: string): string => `${agent}\u0000${taskId}`;

/** Claims a kept task with its events, as the live path does. */
function claimKept(records: TerminalRecords, kept: JournaledClaim): Promise<boolean> {
  const { skill, correlationId, startedAt } = kept.call;
  return records.claim(
    kept.agent,
    kept.task.id,
    {
      via: kept.via,
      state: kept.state,
      at: kept.at,
      call: { skill, correlationId, startedAt },
      ...(kept.group === undefined ? {} : { group: kept.group }),
    },
    kept.events,
  );
}

function settledOf(kept: JournaledClaim): SettledTask {
  const { agent, task, via, call } = kept;
  return kept.fresh === true
    ? { agent, taskId: task.id, task, via, call, fresh: true }
    : { agent, taskId: task.id, task, via, call };
}

/** The in-memory claim: first caller wins among the last `size` tasks claimed. */
function memoryClaim(size: number): (agent: string, taskId: string) => Promise<boolean> {
  const claimed = new Set<string>();
  return (agent, taskId) => {
    const key = keyOf(agent, taskId);
    if (claimed.has(key)) return Promise.resolve(false);
    claimed.add(key);
    // A Set iterates in insertion order: the first key is the oldest.
    if (claimed.size > size) claimed.delete(claimed.values().next().value!);
    return Promise.resolve(true);
  };
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
  const now = options.now ?? Date.now;
  const held = new Map<string, Held>();
  const claim = options.claim ?? memoryClaim(10_000);
  let chains: ChainSource | undefined;
  const pending = new Map<string, PendingClaim>();
  const firstDelay = options.claimRetry?.initialDelayMs ?? 250;
  const maxDelay = options.claimRetry?.maxDelayMs ?? 10_000;
  let stopped = false;

  function schedule(entry: PendingClaim): void {
    entry.timer = setTimeout(() => void retry(entry), entry.delayMs);
    entry.delayMs = Math.min(maxDelay, entry.delayMs * 2);
  }

  /**
   * One more try of a waiting claim; scheduled again while the store stays away. The last try
   * (at stop) resolves with the claim when the store is still away and a journal can keep it.
   */
  async function retry(entry: PendingClaim, last = false): Promise<JournaledClaim | undefined> {
    const key = keyOf(entry.agent, entry.taskId);
    let won: boolean;
    try {
      won = await entry.claim();
    } catch (error) {
      const context = { agent: entry.agent, taskId: entry.taskId };
      if (isStoreUnavailable(error) && !last && !stopped) {
        // Reported when it first failed; the store being away longer says nothing new.
        schedule(entry);
        return undefined;
      }
      pending.delete(key);
      if (isStoreUnavailable(error) && options.durable?.journal !== undefined) return entry.kept;
      options.onError?.(error, { ...context, where: 'claim-abandoned' });
      return undefined;
    }
    pending.delete(key);
    if (won) await entry.won();
    return undefined;
  }

  const rebuild = (call: TaskCall): Promise<SkillCallChain> => {
    if (chains === undefined) {
      return Promise.reject(
        new FleetgateError('FLEETGATE_CALL_FAILED', 'The task terminal has no fleet client bound.'),
      );
    }
    return chains(call);
  };

  const result = (outcome: CallOutcome, failure: FleetgateError | undefined): SettleResult =>
    failure === undefined ? { settled: true, outcome } : { settled: true, outcome, failure };

  async function afterWin(settled: SettledTask, effects: readonly (() => unknown)[]) {
    for (const effect of effects) {
      try {
        await effect();
      } catch (error) {
        options.onError?.(error, { agent: settled.agent, taskId: settled.taskId, where: 'effect' });
      }
    }
    if (options.onSettled === undefined) return;
    try {
      await options.onSettled(settled);
    } catch (error) {
      options.onError?.(error, { agent: settled.agent, taskId: settled.taskId, where: 'settled' });
    }
  }

  async function run(
    task: Task,
    via: SettlePath,
    call: TaskCall,
    given: SkillCallChain | undefined,
    group: ClaimGroup | undefined,
    fresh: boolean,
  ): Promise<SettleResult> {
    const chain = given ?? (await rebuild(call)).resumeAfterBefore();
    const outcome = outcomeForTask(task);
    const state = normalizeTaskState(task.status?.state);
    const settled: SettledTask = fresh
      ? { agent: call.agent, taskId: task.id, task, via, call, fresh }
      : { agent: call.agent, taskId: task.id, task, via, call };
    const durable = options.durable;
    if (durable !== undefined) {
      const collected = await durable.collector.collect(() => chain.runAfter(outcome));
      // The same events on every try: the `after` hooks ran once, their output is kept.
      const kept: JournaledClaim = {
        agent: call.agent,
        task,
        via,
        state,
        at: now(),
        call: {
          agent: call.agent,
          skill: call.skill,
          correlationId: call.correlationId,
          startedAt: call.startedAt,
        },
        ...(group === undefined ? {} : { group }),
        ...(fresh ? { fresh } : {}),
        events: collected.events,
      };
      const claimOnce = (): Promise<boolean> => claimKept(durable.records, kept);
      const won = async (): Promise<void> => {
        durable.onCommitted?.(settled, kept.events);
        await afterWin(settled, collected.effects);
      };
      let claimed: boolean;
      try {
        claimed = await claimOnce();
      } catch (error) {
        if (!isStoreUnavailable(error) || stopped) throw error;
        // The store is away: the task is not dropped. The terminal keeps it and claims again.
        const entry: PendingClaim = {
          agent: call.agent,
          taskId: task.id,
          kept,
          claim: claimOnce,
          won,
          delayMs: firstDelay,
        };
        pending.set(keyOf(call.agent, task.id), entry);
        options.onError?.(error, { agent: call.agent, taskId: task.id, where: 'claim' });
        schedule(entry);
        return { settled: false, reason: 'retrying', error };
      }
      if (!claimed) return { settled: false, reason: 'claimed' };
      await won();
      return result(outcome, collected.value);
    }
    if (!(await claim(call.agent, task.id))) {
      return { settled: false, reason: 'claimed' };
    }
    const failure = await chain.runAfter(outcome);
    await afterWin(settled, []);
    return result(outcome, failure);
  }

  return {
    bindChains(source) {
      chains = source;
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
    async settle(agent, task, via = 'poll', settleOptions = {}) {
      if (!isTerminalState(normalizeTaskState(task.status?.state))) {
        return { settled: false, reason: 'not-terminal' };
      }
      const key = keyOf(agent, task.id);
      const waiting = pending.get(key);
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
        return await run(task, via, call, chain, settleOptions.group, fresh);
      } catch (error) {
        // The claim failed (or the chain could not be rebuilt): the task is not settled. Put the
        // held call back so the path that retries finds it.
        if (entry !== undefined && !held.has(key)) held.set(key, entry);
        throw error;
      }
    },
    release(agent, taskId) {
      return held.delete(keyOf(agent, taskId));
    },
    async abandon(agent, taskId, error) {
      const key = keyOf(agent, taskId);
      const entry = held.get(key);
      if (entry === undefined) return { settled: false, reason: 'unknown' };
      held.delete(key);
      const chain = (await rebuild({ agent, ...entry })).resumeAfterBefore();
      const outcome: CallOutcome = { ok: false, error };
      return result(outcome, await chain.runAfter(outcome));
    },
    retrying: () => pending.size,
    async stop() {
      stopped = true;
      const waiting = [...pending.values()];
      for (const entry of waiting) clearTimeout(entry.timer);
      const kept = (await Promise.all(waiting.map((entry) => retry(entry, true)))).filter(
        (claim) => claim !== undefined,
      );
      const journal = options.durable?.journal;
      if (kept.length === 0 || journal === undefined) return;
      try {
        await journal.keep(kept);
      } catch (error) {
        for (const claim of kept) {
          options.onError?.(error, {
            agent: claim.agent,
            taskId: claim.task.id,
            where: 'claim-abandoned',
          });
        }
        return;
      }
      for (const claim of kept) {
        options.onError?.(
          new FleetgateError(
            'FLEETGATE_STORE_UNAVAILABLE',
            "The store was away at stop: the task's terminal claim was journaled for the next start.",
          ),
          { agent: claim.agent, taskId: claim.task.id, where: 'claim-journaled' },
        );
      }
    },
    async replay(claims) {
      const durable = options.durable;
      if (durable === undefined) return [...claims];
      const remaining: JournaledClaim[] = [];
      for (const kept of claims) {
        let won: boolean;
        try {
          won = await claimKept(durable.records, kept);
        } catch (error) {
          if (!isStoreUnavailable(error)) throw error;
          remaining.push(kept);
          continue;
        }
        if (!won) continue;
        const settled = settledOf(kept);
        durable.onCommitted?.(settled, kept.events);
        await afterWin(settled, []);
      }
      return remaining;
    },
  };
}
