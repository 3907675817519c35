/**
 * The task terminal's vocabulary (`terminal.ts`): the calls it holds, the paths that settle a
 * task, what a settle answers, and what it needs of the records and the journal.
 */
import type { Task } from '@a2a-js/sdk';
import type { CollectedEvent, EventCollector } from '../bus/index.js';
import type { CallOutcome, SkillCallChain } from '../extensions/index.js';
import type { FleetgateError, TaskStateName } from '../protocol/index.js';

/**
 * Which path saw a task's terminal state. `forgotten`: the tracker gave up on a task its agent
 * answered again and again it does not know (it restarted, it lost its state) — the task is settled
 * failed, its call's outcome unknown.
 */
export type SettlePath =
  | 'reply'
  | 'stream'
  | 'poll'
  | 'push'
  | 'resubscribe'
  | 'recovery'
  | 'timeout'
  | 'cancel'
  | 'forgotten';

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
   * Compare-and-set of the task's terminal mark (`… WHERE terminal_at IS NULL`); `events` (those
   * the terminal state produces) go to the outbox in the same transaction. A task never recorded
   * (a terminal reply) is recorded terminal when `call` is given. Resolves true for the one path
   * that won, once the transaction committed; every other path gets false and none of its events
   * are kept.
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
