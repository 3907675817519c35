/**
 * The claim side of the task terminal (see `terminal.ts`): the in-memory claim, the durable claim
 * with its events, the claims that wait for the store and are tried again, backing off, and what
 * `stop` and `replay` do with them. The terminal's factory holds one {@link ClaimState} and passes
 * it to each function here.
 */
import type { CallOutcome, SkillCallChain } from '../extensions/index.js';
import { FleetgateError, isStoreUnavailable, normalizeTaskState } from '../protocol/index.js';
import type {
  ClaimGroup,
  JournaledClaim,
  SettledTask,
  SettleResult,
  TaskTerminalOptions,
  TerminalRecords,
} from './terminal-types.js';
import { defined } from '../protocol/fields/index.js';

/** A claim waiting for the store to come back. */
export interface PendingClaim {
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

/** What the functions of the claim side share: one per terminal, built by its factory. */
export interface ClaimState {
  readonly options: TaskTerminalOptions;
  readonly now: () => number;
  /** The claims waiting for the store, by {@link keyOf}. */
  readonly pending: Map<string, PendingClaim>;
  /** The delay before the first retry (`claimRetry.initialDelayMs`). */
  readonly firstDelay: number;
  /** The cap of the doubling delay (`claimRetry.maxDelayMs`). */
  readonly maxDelay: number;
  /** Set by `stop`: from then on a claim the store refuses is not kept to retry. */
  stopped: boolean;
}

/** The key of a task in the terminal's maps: agent and task id, apart. */
export const keyOf = (agent: string, taskId: string): string => `${agent}\u0000${taskId}`;

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
      ...defined({ group: kept.group }),
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
export function memoryClaim(size: number): (agent: string, taskId: string) => Promise<boolean> {
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

/** The result of a won claim: its outcome, and the failure of an `after` hook if one failed. */
export function settledWith(
  outcome: CallOutcome,
  failure: FleetgateError | undefined,
): SettleResult {
  return failure === undefined ? { settled: true, outcome } : { settled: true, outcome, failure };
}

/** What follows a won claim: the deferred effects, then `onSettled`; failures go to `onError`. */
export async function afterWin(
  terminal: ClaimState,
  settled: SettledTask,
  effects: readonly (() => unknown)[],
): Promise<void> {
  const { options } = terminal;
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

function schedule(terminal: ClaimState, entry: PendingClaim): void {
  entry.timer = setTimeout(() => void retry(terminal, entry), entry.delayMs);
  entry.delayMs = Math.min(terminal.maxDelay, entry.delayMs * 2);
}

/**
 * One more try of a waiting claim; scheduled again while the store stays away. The last try
 * (at stop) resolves with the claim when the store is still away and a journal can keep it.
 */
async function retry(
  terminal: ClaimState,
  entry: PendingClaim,
  last = false,
): Promise<JournaledClaim | undefined> {
  const { options, pending } = terminal;
  const key = keyOf(entry.agent, entry.taskId);
  let won: boolean;
  try {
    won = await entry.claim();
  } catch (error) {
    const context = { agent: entry.agent, taskId: entry.taskId };
    if (isStoreUnavailable(error) && !last && !terminal.stopped) {
      // Reported when it first failed; the store being away longer says nothing new.
      schedule(terminal, entry);
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

/** The durable claim of a settling task: what its `after` hooks ran with and in which group. */
export interface DurableSettle {
  readonly settled: SettledTask;
  readonly chain: SkillCallChain;
  readonly outcome: CallOutcome;
  readonly group: ClaimGroup | undefined;
}

/**
 * Runs the `after` hooks with their events and effects collected, then claims the task with the
 * events. A claim the store refuses because it is away is kept and tried again (`retrying`).
 */
export async function claimDurably(
  terminal: ClaimState,
  durable: NonNullable<TaskTerminalOptions['durable']>,
  { settled, chain, outcome, group }: DurableSettle,
): Promise<SettleResult> {
  const { options } = terminal;
  const { task, via, call } = settled;
  const state = normalizeTaskState(task.status?.state);
  const collected = await durable.collector.collect(() => chain.runAfter(outcome));
  // The same events on every try: the `after` hooks ran once, their output is kept.
  const kept: JournaledClaim = {
    agent: call.agent,
    task,
    via,
    state,
    at: terminal.now(),
    call: {
      agent: call.agent,
      skill: call.skill,
      correlationId: call.correlationId,
      startedAt: call.startedAt,
    },
    ...defined({ group }),
    ...(settled.fresh === true ? { fresh: true } : {}),
    events: collected.events,
  };
  const claimOnce = (): Promise<boolean> => claimKept(durable.records, kept);
  const won = async (): Promise<void> => {
    durable.onCommitted?.(settled, kept.events);
    await afterWin(terminal, settled, collected.effects);
  };
  let claimed: boolean;
  try {
    claimed = await claimOnce();
  } catch (error) {
    if (!isStoreUnavailable(error) || terminal.stopped) throw error;
    // The store is away: the task is not dropped. The terminal keeps it and claims again.
    const entry: PendingClaim = {
      agent: call.agent,
      taskId: task.id,
      kept,
      claim: claimOnce,
      won,
      delayMs: terminal.firstDelay,
    };
    terminal.pending.set(keyOf(call.agent, task.id), entry);
    options.onError?.(error, { agent: call.agent, taskId: task.id, where: 'claim' });
    schedule(terminal, entry);
    return { settled: false, reason: 'retrying', error };
  }
  if (!claimed) return { settled: false, reason: 'claimed' };
  await won();
  return settledWith(outcome, collected.value);
}

/** What `TaskTerminal.stop` does: one last try of each waiting claim, then the journal. */
export async function stopClaims(terminal: ClaimState): Promise<void> {
  const { options } = terminal;
  terminal.stopped = true;
  const waiting = [...terminal.pending.values()];
  for (const entry of waiting) clearTimeout(entry.timer);
  const kept = (await Promise.all(waiting.map((entry) => retry(terminal, entry, true)))).filter(
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
}

/** What `TaskTerminal.replay` does: claims each journaled task; resolves those still refused. */
export async function replayClaims(
  terminal: ClaimState,
  claims: readonly JournaledClaim[],
): Promise<JournaledClaim[]> {
  const durable = terminal.options.durable;
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
    await afterWin(terminal, settled, []);
  }
  return remaining;
}
