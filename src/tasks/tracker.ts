import type { StreamResponse, Task } from '@a2a-js/sdk';
import { Task as TaskCodec, TaskState } from '@a2a-js/sdk';
import type {
  FollowRequest,
  SettlePath,
  SettleResult,
  TaskCall,
  TaskFollower,
  TaskTerminal,
} from '../dispatch/index.js';
import { TaskAccumulator } from '../dispatch/index.js';
import { checkTaskId, FleetgateError, isStoreUnavailable } from '../protocol/index.js';
import type { NormalizedStreamEvent, TaskStateName } from '../protocol/index.js';
import { isInterruptedState, isTerminalState, normalizeTaskState } from '../protocol/index.js';
import type { ForgetRule, NotFoundRun } from './forgotten-task.js';
import { forgottenTask, isTaskNotFound, noteNotFound, standInTask } from './forgotten-task.js';
import type { PollResult, PollSchedulerOptions } from './poll-scheduler.js';
import { PollScheduler } from './poll-scheduler.js';
import type { PushReceiverOptions, PushRequest, PushResponse } from './push-receiver.js';
import { createPushReceiver, createPushToken, hashPushToken } from './push-receiver.js';
import type { TaskRecord, TaskRecordStore } from './task-records.js';
import { defined } from '../protocol/fields/index.js';

/** What the tracker needs of the fleet client: its task terminal and its per-agent SDK clients. */
export interface TrackerFleet {
  /** Where every path settles a task (durable: claim + outbox in one transaction). */
  readonly terminal: TaskTerminal;
  agentClient(agent: string): Promise<{
    client: {
      getTask(params: {
        tenant: string;
        id: string;
        historyLength: number | undefined;
      }): Promise<Task>;
      cancelTask(params: { tenant: string; id: string; metadata: undefined }): Promise<Task>;
      createTaskPushNotificationConfig(config: {
        tenant: string;
        id: string;
        taskId: string;
        url: string;
        token: string;
        authentication: undefined;
      }): Promise<unknown>;
      resubscribeTask(params: { tenant: string; id: string }): AsyncIterable<StreamResponse>;
    };
    card: {
      capabilities?:
        { pushNotifications?: boolean | undefined; streaming?: boolean | undefined } | undefined;
    };
  }>;
}

/** Options of {@link TaskTracker}. */
export interface TaskTrackerOptions {
  records: TaskRecordStore;
  fleet: TrackerFleet;
  /** Poll timing and per-agent limits. */
  polling?: Omit<PollSchedulerOptions, 'poll' | 'onError' | 'now'>;
  /**
   * The gateway's public base URL. With it, a task of an agent whose card says
   * `pushNotifications: true` gets a push config with a per-task secret pointing at
   * `<base>/callbacks/a2a/<taskId>`; polling goes on alongside, whichever sees the end first wins.
   */
  pushBaseUrl?: string;
  /** Limits of the push receiver: body bytes (default 4 MiB) and body read time (default 10 s). */
  push?: Pick<PushReceiverOptions, 'maxBodyBytes' | 'bodyTimeoutMs'>;
  /** After this long a task is canceled at the agent and its call fails (default 1 hour). */
  maxTrackingTimeMs?: number;
  /**
   * When the agent no longer knows a task (`GetTask` or `SubscribeToTask` answered "task not
   * found" — not a network error, a timeout or a 5xx): at least `answers` such answers in a row
   * (default 3), the first and the last at least `windowMs` apart (default `polling.maxIntervalMs`,
   * 30 s). The task is then settled `forgotten` and its call ends `FLEETGATE_CALL_OUTCOME_UNKNOWN`.
   * Any sight of the task (a poll that finds it, a push, an event of its resumed stream) starts
   * the count again.
   */
  forgetAfter?: ForgetRule;
  /**
   * A task waits on its caller (`input-required`, `auth-required`): handed to the policy gate,
   * never reported as success or failure. Called once per state it enters, including the state a
   * task is handed over in.
   */
  onInterrupted?(record: TaskRecord, state: TaskStateName): Promise<void>;
  /**
   * A followed task is in a new non-terminal state (also called for the state it is handed over
   * in when that is an interrupted one): the dispatcher's `onTaskState`. Ends go through the task
   * terminal's `onSettled` instead.
   */
  onStateChanged?(change: {
    agent: string;
    taskId: string;
    state: TaskStateName;
    /** The task as the agent last showed it, when it was fetched (its status message is the question). */
    task?: Task;
  }): Promise<void>;
  /** Receives failures of polls and hooks (the composition root publishes them on `system.error`). */
  onError?(error: unknown, context: { agent: string; taskId: string; where: string }): void;
  now?: () => number;
}

/** A task to follow. */
export interface FollowInput extends FollowRequest {
  /** The per-task push secret, when a push config was registered with the agent. */
  pushToken?: string;
}

interface Tracked {
  skill: string;
  correlationId: string;
  createdAt: number;
  /** Reloaded from the store at start: its first terminal sighting counts as recovery. */
  recovered: boolean;
  state: TaskStateName;
  /** A push said the task finished: the poll it triggers counts as the push path. */
  pushed: boolean;
  /** Claims that failed in a row (a database error): the retry backs off. */
  claimFailures?: number;
  /** The agent's "task not found" answers since it last showed the task (see `forgetAfter`). */
  notFound?: NotFoundRun;
}

const keyOf = (agent: string, taskId: string): string => `${agent}\u0000${taskId}`;

/** Task records read per page by {@link TaskTracker.recover}. */
const RECOVERY_PAGE = 1_000;

/**
 * Follows non-terminal tasks until they end: polls with `GetTask` on one heap-scheduled timer,
 * receives push notifications, and claims each task terminal exactly once across every path
 * (durable compare-and-set on the task record) before the call's `after` hooks run. In-memory
 * state is one small entry per task in flight; finished tasks leave memory.
 */
export class TaskTracker implements TaskFollower {
  readonly #o: TaskTrackerOptions & { maxTrackingTimeMs: number; now: () => number };
  readonly #forgetRule: Required<ForgetRule>;
  readonly #tracked = new Map<string, Tracked>();
  /** Tasks whose finish is under way: `recover` must not pick them up again meanwhile. */
  readonly #finishing = new Set<string>();
  readonly #scheduler: PollScheduler;
  readonly #claims: Record<SettlePath, number> & { lost: number } = {
    reply: 0,
    stream: 0,
    poll: 0,
    push: 0,
    resubscribe: 0,
    recovery: 0,
    timeout: 0,
    cancel: 0,
    forgotten: 0,
    lost: 0,
  };

  constructor(options: TaskTrackerOptions) {
    this.#o = { maxTrackingTimeMs: 3_600_000, now: Date.now, ...options };
    this.#forgetRule = {
      answers: Math.max(1, options.forgetAfter?.answers ?? 3),
      windowMs: options.forgetAfter?.windowMs ?? options.polling?.maxIntervalMs ?? 30_000,
    };
    this.#scheduler = new PollScheduler({
      ...options.polling,
      now: this.#o.now,
      poll: (agent, taskId) => this.#poll(agent, taskId),
      onError: (agent, taskId, error) => this.#o.onError?.(error, { agent, taskId, where: 'poll' }),
    });
  }

  /** Tasks in flight. */
  get size(): number {
    return this.#tracked.size;
  }

  /** How many tasks each path claimed, and how many claims lost to another path. */
  claims(): Readonly<Record<SettlePath | 'lost', number>> {
    return { ...this.#claims };
  }

  /**
   * Starts following a non-terminal task: a durable record, then polls — and push notifications
   * when the agent supports them and the gateway has a public base URL. A task handed over while
   * it waits on its caller is reported to `onInterrupted` / `onStateChanged` at once.
   */
  async follow(input: FollowInput): Promise<void> {
    checkTaskId(input.taskId, `agent ${input.agent}`);
    const now = this.#o.now();
    let pushToken = input.pushToken;
    let register: (() => Promise<unknown>) | undefined;
    if (pushToken === undefined && this.#o.pushBaseUrl !== undefined) {
      const { client, card } = await this.#o.fleet.agentClient(input.agent);
      if (card.capabilities?.pushNotifications === true) {
        const token = createPushToken();
        const url = `${this.#o.pushBaseUrl.replace(/\/+$/, '')}/callbacks/a2a/${encodeURIComponent(input.taskId)}`;
        pushToken = token;
        register = () =>
          client.createTaskPushNotificationConfig({
            tenant: '',
            id: '',
            taskId: input.taskId,
            url,
            token,
            authentication: undefined,
          });
      }
    }
    try {
      await this.#o.records.create({
        agent: input.agent,
        taskId: input.taskId,
        skill: input.skill,
        correlationId: input.correlationId,
        state: input.state,
        pushTokenHash: pushToken === undefined ? null : hashPushToken(pushToken),
        createdAt: now,
        updatedAt: now,
      });
    } catch (error) {
      if (!isStoreUnavailable(error)) throw error;
      // The store is away: the task lives on at the agent, so it is followed from memory (polls
      // only: a push could not be authenticated without the record). Its claim records it when it
      // ends; only a restart before that loses it.
      this.#o.onError?.(error, { agent: input.agent, taskId: input.taskId, where: 'record' });
      register = undefined;
    }
    this.#tracked.set(keyOf(input.agent, input.taskId), {
      skill: input.skill,
      correlationId: input.correlationId,
      createdAt: now,
      recovered: false,
      state: input.state,
      pushed: false,
    });
    // The tracker keeps the call from here on (the record has it too): the terminal's held copy
    // would only double the memory of a followed task.
    this.#o.fleet.terminal.release(input.agent, input.taskId);
    this.#scheduler.add(input.agent, input.taskId);
    if (isInterruptedState(input.state)) {
      await this.#notifyState(input.agent, input.taskId, input.state);
    }
    if (input.resubscribe === true) {
      // In the background: polling goes on meanwhile, whichever sees the end first wins.
      void this.#resubscribe(input.agent, input.taskId, input.task);
    }
    if (register !== undefined) {
      // The record (with the secret's hash) exists before the agent can push. A failed
      // registration leaves polling to find the end.
      try {
        await register();
      } catch (error) {
        this.#o.onError?.(error, {
          agent: input.agent,
          taskId: input.taskId,
          where: 'push-register',
        });
      }
    }
  }

  /**
   * A path saw a task: a terminal one is settled through the task terminal — once, across paths,
   * restarts and replicas (the durable claim and the outbox write are one transaction); a call
   * that started in another process is rebuilt from what the task record kept. Every path but the
   * first is a counted no-op. A task whose id is not the one the path asked about is refused. When
   * the claim itself fails (a database error) the task goes back to polling with backoff. Resolves
   * whether this path settled the task.
   */
  async observe(agent: string, task: Task, via: SettlePath): Promise<boolean> {
    if (!isTerminalState(normalizeTaskState(task.status?.state))) return false;
    const key = keyOf(agent, task.id);
    const tracked = this.#tracked.get(key);
    this.#finishing.add(key);
    let result: SettleResult;
    let call: TaskCall | undefined;
    try {
      const record = tracked === undefined ? await this.#o.records.get(agent, task.id) : undefined;
      call =
        tracked !== undefined
          ? {
              agent,
              skill: tracked.skill,
              correlationId: tracked.correlationId,
              startedAt: tracked.createdAt,
            }
          : record === undefined
            ? undefined
            : {
                agent,
                skill: record.skill,
                correlationId: record.correlationId,
                startedAt: record.createdAt,
              };
      this.#forget(agent, task.id);
      result = await this.#o.fleet.terminal.settle(
        agent,
        task,
        via,
        call === undefined ? {} : { call },
      );
    } catch (error) {
      this.#retryClaim(agent, task.id, tracked, call, error);
      return false;
    } finally {
      this.#finishing.delete(key);
    }
    if (result.settled) {
      this.#claims[via] += 1;
      return true;
    }
    if (result.reason === 'claimed') this.#claims.lost += 1;
    return false;
  }

  /** The claim failed: the task is still unsettled, so it goes back to polling, backing off. */
  #retryClaim(
    agent: string,
    taskId: string,
    tracked: Tracked | undefined,
    call: TaskCall | undefined,
    error: unknown,
  ): void {
    this.#o.onError?.(error, { agent, taskId, where: 'claim' });
    if (call === undefined) return;
    const key = keyOf(agent, taskId);
    const entry: Tracked = tracked ?? {
      skill: call.skill,
      correlationId: call.correlationId,
      createdAt: call.startedAt,
      recovered: true,
      state: 'unknown',
      pushed: false,
    };
    entry.claimFailures = (entry.claimFailures ?? 0) + 1;
    this.#tracked.set(key, entry);
    const base = this.#o.polling?.intervalMs ?? 1000;
    const cap = this.#o.polling?.maxIntervalMs ?? 30_000;
    this.#scheduler.add(agent, taskId, Math.min(cap, base * 2 ** (entry.claimFailures - 1)));
  }

  /**
   * Restart recovery: reloads every task still in flight in the store and polls each at once, so
   * a task that finished while no gateway was watching completes now, with its events once.
   */
  async recover(): Promise<number> {
    let total = 0;
    let after: TaskRecord | undefined;
    for (;;) {
      // Page by page, however many there are: every task in flight is recovered.
      const records = await this.#o.records.inFlight({
        limit: RECOVERY_PAGE,
        ...defined({ after }),
      });
      for (const record of records) this.#take(record);
      total += records.length;
      after = records.at(-1);
      if (records.length < RECOVERY_PAGE) return total;
    }
  }

  /**
   * Follows a task another process followed and left (it died, or stopped): from its record, polled
   * at once, as restart recovery would. A task it had not begun to follow — the agent's stream
   * named it and the process died before the end — is followed from `call`, polled at once.
   * False when it is followed here already or ended.
   */
  async adopt(call: Omit<FollowInput, 'state'>): Promise<boolean> {
    const { agent, taskId } = call;
    const record = await this.#o.records.get(agent, taskId);
    if (record !== undefined) return record.terminalAt === null && this.#take(record);
    if (this.#tracked.has(keyOf(agent, taskId))) return false;
    await this.follow({ ...call, state: 'working' });
    this.#scheduler.pollNow(agent, taskId);
    return true;
  }

  /** Follows a recorded task from its record, polled at once; false when it is followed here. */
  #take(record: TaskRecord): boolean {
    const key = keyOf(record.agent, record.taskId);
    if (this.#tracked.has(key) || this.#finishing.has(key)) return false;
    this.#tracked.set(key, {
      skill: record.skill,
      correlationId: record.correlationId,
      createdAt: record.createdAt,
      recovered: true,
      state: record.state,
      pushed: false,
    });
    this.#scheduler.add(record.agent, record.taskId, 0);
    return true;
  }

  /**
   * The `POST /callbacks/a2a/:taskId` handler (mount it in any HTTP framework; pass the request
   * body as the unread stream — see the contract in `push-receiver.ts`).
   */
  pushReceiver(): (request: PushRequest) => Promise<PushResponse> {
    return createPushReceiver({
      ...this.#o.push,
      records: this.#o.records,
      onEvent: (record, event, body) => this.#onPush(record, event, body),
    });
  }

  /** Polls a task as soon as its agent has a free slot. */
  pollNow(agent: string, taskId: string): void {
    this.#scheduler.pollNow(agent, taskId);
  }

  /** Stops polling; tasks stay in the store for the next start. */
  stop(): void {
    this.#scheduler.stop();
  }

  async #onPush(record: TaskRecord, event: NormalizedStreamEvent, body: unknown): Promise<void> {
    const key = keyOf(record.agent, record.taskId);
    const tracked = this.#tracked.get(key);
    const state =
      event.type === 'task'
        ? event.task.state
        : event.type === 'statusUpdate'
          ? event.state
          : undefined;
    if (record.terminalAt !== null) {
      // Settled elsewhere (another path, process or replica): let go of it here too.
      this.#forget(record.agent, record.taskId);
      this.#o.fleet.terminal.release(record.agent, record.taskId);
      return;
    }
    // The agent pushed with the task's secret: it knows the task, whatever a poll was told.
    if (tracked !== undefined) delete tracked.notFound;
    if (state === undefined) return;
    if (isTerminalState(state)) {
      const raw =
        typeof body === 'object' && body !== null && 'task' in body ? body.task : undefined;
      if (event.type === 'task' && raw !== undefined) {
        // A v1.0 body carries the whole task, artifacts included: settle from it directly.
        const task = TaskCodec.fromJSON(raw);
        try {
          this.#refuseOtherTask(record.agent, record.taskId, task, 'push');
        } catch (error) {
          this.#o.onError?.(error, { agent: record.agent, taskId: record.taskId, where: 'push' });
          return;
        }
        await this.observe(record.agent, task, 'push');
        return;
      }
      // A status-only (or v0.3) push: fetch the task with its artifacts at once.
      if (tracked !== undefined) tracked.pushed = true;
      this.#scheduler.pollNow(record.agent, record.taskId);
      return;
    }
    if (isInterruptedState(state)) {
      // The question is in the task's status message, which a status-only push may not carry:
      // fetch the task at once and note the state from there.
      this.#scheduler.pollNow(record.agent, record.taskId);
      return;
    }
    await this.#noteState(record.agent, record.taskId, state);
  }

  async #poll(agent: string, taskId: string): Promise<PollResult> {
    const tracked = this.#tracked.get(keyOf(agent, taskId));
    if (tracked === undefined) return 'terminal';
    const { client } = await this.#o.fleet.agentClient(agent);
    if (this.#o.now() - tracked.createdAt > this.#o.maxTrackingTimeMs) {
      await this.#timeOut(agent, taskId, client);
      return 'terminal';
    }
    let task: Task;
    try {
      task = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
    } catch (error) {
      if (await this.#notFound(agent, taskId, tracked, error)) return 'terminal';
      throw error; // to the scheduler: reported, and the task is polled again with backoff
    }
    // Thrown to the scheduler: reported, and the task is polled again with backoff.
    this.#refuseOtherTask(agent, taskId, task, 'poll');
    delete tracked.notFound;
    const state = normalizeTaskState(task.status?.state);
    if (isTerminalState(state)) {
      await this.observe(
        agent,
        task,
        tracked.pushed ? 'push' : tracked.recovered ? 'recovery' : 'poll',
      );
      // Done with this entry either way: a failed claim scheduled the task again, backing off.
      return 'terminal';
    }
    await this.#noteState(agent, taskId, state, task);
    return 'pending';
  }

  /** Resumes a task's event stream with `SubscribeToTask` and finishes it from there. */
  async #resubscribe(agent: string, taskId: string, known: Task | undefined): Promise<void> {
    try {
      const { client, card } = await this.#o.fleet.agentClient(agent);
      if (card.capabilities?.streaming !== true) return;
      const acc = new TaskAccumulator();
      if (known !== undefined) acc.apply({ payload: { $case: 'task', value: known } });
      for await (const event of client.resubscribeTask({ tenant: '', id: taskId })) {
        // The agent streams the task: it knows it, whatever a poll was told.
        const tracked = this.#tracked.get(keyOf(agent, taskId));
        if (tracked !== undefined) delete tracked.notFound;
        acc.apply(event);
        const task = acc.task;
        if (task !== undefined) this.#refuseOtherTask(agent, taskId, task, 'resubscribe');
        if (task !== undefined && isTerminalState(normalizeTaskState(task.status?.state))) {
          await this.observe(agent, task, 'resubscribe');
          return;
        }
        if (!this.#tracked.has(keyOf(agent, taskId))) return; // finished on another path
      }
    } catch (error) {
      const tracked = this.#tracked.get(keyOf(agent, taskId));
      if (tracked !== undefined && (await this.#notFound(agent, taskId, tracked, error))) return;
      this.#o.onError?.(error, { agent, taskId, where: 'resubscribe' });
      // The task may have ended before the stream was resumed: look at once instead of at the
      // next scheduled poll.
      this.#scheduler.pollNow(agent, taskId);
    }
  }

  /**
   * A look at a followed task failed. A "task not found" answer counts towards `forgetAfter`;
   * once the rule is met the task is settled `forgotten` — through {@link observe}, the one path
   * every end takes (its claim is compare-and-set: a late push or poll of the task is a no-op).
   * Anything else (a network error, a timeout, a 5xx) counts for nothing. Resolves whether the
   * task was settled here.
   */
  async #notFound(
    agent: string,
    taskId: string,
    tracked: Tracked,
    error: unknown,
  ): Promise<boolean> {
    if (!isTaskNotFound(error)) return false;
    const { run, forgotten } = noteNotFound(tracked.notFound, this.#o.now(), this.#forgetRule);
    tracked.notFound = run;
    if (!forgotten) return false;
    await this.observe(agent, forgottenTask(taskId), 'forgotten');
    return true;
  }

  async #noteState(
    agent: string,
    taskId: string,
    state: TaskStateName,
    task?: Task,
  ): Promise<void> {
    const tracked = this.#tracked.get(keyOf(agent, taskId));
    if (tracked === undefined || tracked.state === state) return;
    tracked.state = state;
    await this.#o.records.noteState(agent, taskId, state, this.#o.now());
    await this.#notifyState(agent, taskId, state, task);
  }

  async #notifyState(
    agent: string,
    taskId: string,
    state: TaskStateName,
    task?: Task,
  ): Promise<void> {
    await this.#o.onStateChanged?.({
      agent,
      taskId,
      state,
      ...defined({ task }),
    });
    if (isInterruptedState(state) && this.#o.onInterrupted !== undefined) {
      const record = await this.#o.records.get(agent, taskId);
      if (record !== undefined) await this.#o.onInterrupted(record, state);
    }
  }

  /**
   * An agent answered about another task than the one asked for: refused, never settled — it
   * could be another agent's task id, and settling it would publish forged deltas as that task's.
   */
  #refuseOtherTask(agent: string, taskId: string, task: Task, where: SettlePath): void {
    if (task.id === taskId) return;
    throw new FleetgateError(
      'FLEETGATE_CALL_FAILED',
      `Agent ${agent} answered about task ${task.id} when asked about task ${taskId}; the answer is refused.`,
      { details: { agent, taskId, answeredTaskId: task.id, via: where } },
    );
  }

  async #timeOut(
    agent: string,
    taskId: string,
    client: Awaited<ReturnType<TrackerFleet['agentClient']>>['client'],
  ): Promise<void> {
    let task: Task;
    try {
      task = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    } catch (error) {
      this.#o.onError?.(error, { agent, taskId, where: 'cancel' });
      task = standInTask(taskId, TaskState.TASK_STATE_CANCELED);
    }
    if (!isTerminalState(normalizeTaskState(task.status?.state))) {
      task = {
        ...task,
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined },
      };
    }
    if (task.id !== taskId) task = { ...task, id: taskId }; // never settle another task's id
    // The call fails: its after hooks see the canceled task ({ ok: false }).
    await this.observe(agent, task, 'timeout');
  }

  #forget(agent: string, taskId: string): void {
    this.#tracked.delete(keyOf(agent, taskId));
    this.#scheduler.remove(agent, taskId);
  }
}
