import type { StreamResponse, Task } from '@a2a-js/sdk';
import { Task as TaskCodec, TaskState } from '@a2a-js/sdk';
import type { ResumedCall, TerminalResult } from '../dispatch/index.js';
import { TaskAccumulator } from '../dispatch/index.js';
import type { NormalizedStreamEvent, TaskStateName } from '../protocol/index.js';
import { isInterruptedState, isTerminalState, normalizeTaskState } from '../protocol/index.js';
import type { PollResult, PollSchedulerOptions } from './poll-scheduler.js';
import { PollScheduler } from './poll-scheduler.js';
import type { PushRequest, PushResponse } from './push-receiver.js';
import { createPushReceiver, createPushToken, hashPushToken } from './push-receiver.js';
import type { TaskRecord, TaskRecordStore, TerminalVia } from './task-records.js';

/** What the tracker needs of the fleet client (created with a durable terminal commit). */
export interface TrackerFleet {
  /** The single terminal seam: claims the task and runs the call's `after` hooks once. */
  onTerminal(task: Task, via: TerminalVia): Promise<TerminalResult>;
  /** The same for a call that started in another process (restart, another replica). */
  resume(task: Task, call: ResumedCall, via: TerminalVia): Promise<TerminalResult>;
  /** Drops the pending call of a task another process finished. */
  discard?(taskId: string): boolean;
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
  /** After this long a task is canceled at the agent and its call fails (default 1 hour). */
  maxTrackingTimeMs?: number;
  /**
   * A task waits on its caller (`input-required`, `auth-required`): handed to the policy gate,
   * never reported as success or failure. Called once per state it enters.
   */
  onInterrupted?(record: TaskRecord, state: TaskStateName): Promise<void>;
  /** Told once per task, by the path that finished it (the dispatcher updates its record). */
  onFinished?(finished: {
    agent: string;
    taskId: string;
    task: Task;
    via: TerminalVia;
  }): Promise<void>;
  /** Receives failures of polls and hooks (the composition root publishes them on `system.error`). */
  onError?(error: unknown, context: { agent: string; taskId: string; where: string }): void;
  now?: () => number;
}

/** A task to follow. */
export interface TrackInput {
  agent: string;
  skill: string;
  correlationId: string;
  taskId: string;
  state: TaskStateName;
  /** The per-task push secret, when a push config was registered with the agent. */
  pushToken?: string;
  /** The task's stream broke: resume it with `SubscribeToTask` when the agent streams. */
  resubscribe?: boolean;
  /** The task as known when the stream broke (artifacts received so far). */
  task?: Task;
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
}

const keyOf = (agent: string, taskId: string): string => `${agent}\u0000${taskId}`;

/**
 * Follows non-terminal tasks until they end: polls with `GetTask` on one heap-scheduled timer,
 * receives push notifications, and claims each task terminal exactly once across every path
 * (durable compare-and-set on the task record) before the call's `after` hooks run. In-memory
 * state is one small entry per task in flight; finished tasks leave memory.
 */
export class TaskTracker {
  readonly #o: TaskTrackerOptions & { maxTrackingTimeMs: number; now: () => number };
  readonly #tracked = new Map<string, Tracked>();
  /** Tasks whose finish is under way: `recover` must not pick them up again meanwhile. */
  readonly #finishing = new Set<string>();
  readonly #scheduler: PollScheduler;
  readonly #claims: Record<TerminalVia, number> & { lost: number } = {
    reply: 0,
    stream: 0,
    poll: 0,
    push: 0,
    resubscribe: 0,
    recovery: 0,
    timeout: 0,
    lost: 0,
  };

  constructor(options: TaskTrackerOptions) {
    this.#o = { maxTrackingTimeMs: 3_600_000, now: Date.now, ...options };
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
  claims(): Readonly<Record<TerminalVia | 'lost', number>> {
    return { ...this.#claims };
  }

  /**
   * Starts following a non-terminal task: a durable record, then polls — and push notifications
   * when the agent supports them and the gateway has a public base URL.
   */
  async track(input: TrackInput): Promise<void> {
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
    this.#tracked.set(keyOf(input.agent, input.taskId), {
      skill: input.skill,
      correlationId: input.correlationId,
      createdAt: now,
      recovered: false,
      state: input.state,
      pushed: false,
    });
    this.#scheduler.add(input.agent, input.taskId);
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
   * Hands a terminal task to the call that started it — once, across paths, restarts and
   * replicas: the fleet client's durable commit claims the task record and writes the events of
   * the `after` hooks to the outbox in one transaction. A call that started in another process is
   * resumed from what the task record kept. Every path but the first is a counted no-op.
   */
  async finish(agent: string, task: Task, via: TerminalVia): Promise<boolean> {
    if (!isTerminalState(normalizeTaskState(task.status?.state))) return false;
    const key = keyOf(agent, task.id);
    const tracked = this.#tracked.get(key);
    this.#finishing.add(key);
    let result: TerminalResult;
    try {
      const call = tracked ?? (await this.#o.records.get(agent, task.id));
      this.#forget(agent, task.id);
      result = await this.#o.fleet.onTerminal(task, via);
      if (!result.ran && result.reason === 'not-pending' && call !== undefined) {
        result = await this.#o.fleet.resume(
          task,
          {
            agent,
            skill: call.skill,
            correlationId: call.correlationId,
            startedAt: call.createdAt,
          },
          via,
        );
      }
    } finally {
      this.#finishing.delete(key);
    }
    if (result.ran) {
      this.#claims[via] += 1;
      await this.#o.onFinished?.({ agent, taskId: task.id, task, via });
      return true;
    }
    if (result.reason === 'claimed') this.#claims.lost += 1;
    return false;
  }

  /**
   * Restart recovery: reloads every task still in flight in the store and polls each at once, so
   * a task that finished while no gateway was watching completes now, with its events once.
   */
  async recover(): Promise<number> {
    const records = await this.#o.records.inFlight();
    for (const record of records) {
      const key = keyOf(record.agent, record.taskId);
      if (this.#tracked.has(key) || this.#finishing.has(key)) continue;
      this.#tracked.set(key, {
        skill: record.skill,
        correlationId: record.correlationId,
        createdAt: record.createdAt,
        recovered: true,
        state: record.state,
        pushed: false,
      });
      this.#scheduler.add(record.agent, record.taskId, 0);
    }
    return records.length;
  }

  /** The `POST /callbacks/a2a/:taskId` handler (mount it in any HTTP framework). */
  pushReceiver(): (request: PushRequest) => Promise<PushResponse> {
    return createPushReceiver({
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
      // Finished elsewhere (another path, process or replica): let go of it here too.
      this.#forget(record.agent, record.taskId);
      this.#o.fleet.discard?.(record.taskId);
      return;
    }
    if (state === undefined) return;
    if (isTerminalState(state)) {
      const raw =
        typeof body === 'object' && body !== null && 'task' in body ? body.task : undefined;
      if (event.type === 'task' && raw !== undefined) {
        // A v1.0 body carries the whole task, artifacts included: finish from it directly.
        await this.finish(record.agent, TaskCodec.fromJSON(raw), 'push');
        return;
      }
      // A status-only (or v0.3) push: fetch the task with its artifacts at once.
      if (tracked !== undefined) tracked.pushed = true;
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
    const task = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
    const state = normalizeTaskState(task.status?.state);
    if (isTerminalState(state)) {
      await this.finish(
        agent,
        task,
        tracked.pushed ? 'push' : tracked.recovered ? 'recovery' : 'poll',
      );
      return 'terminal';
    }
    await this.#noteState(agent, taskId, state);
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
        acc.apply(event);
        const task = acc.task;
        if (task !== undefined && isTerminalState(normalizeTaskState(task.status?.state))) {
          await this.finish(agent, task, 'resubscribe');
          return;
        }
        if (!this.#tracked.has(keyOf(agent, taskId))) return; // finished on another path
      }
    } catch (error) {
      this.#o.onError?.(error, { agent, taskId, where: 'resubscribe' });
    }
  }

  async #noteState(agent: string, taskId: string, state: TaskStateName): Promise<void> {
    const tracked = this.#tracked.get(keyOf(agent, taskId));
    if (tracked === undefined || tracked.state === state) return;
    tracked.state = state;
    await this.#o.records.noteState(agent, taskId, state, this.#o.now());
    if (isInterruptedState(state) && this.#o.onInterrupted !== undefined) {
      const record = await this.#o.records.get(agent, taskId);
      if (record !== undefined) await this.#o.onInterrupted(record, state);
    }
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
      task = {
        id: taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined },
        artifacts: [],
        history: [],
        metadata: undefined,
      };
    }
    if (!isTerminalState(normalizeTaskState(task.status?.state))) {
      task = {
        ...task,
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined },
      };
    }
    // The call fails: its after hooks see the canceled task ({ ok: false }).
    await this.finish(agent, task, 'timeout');
  }

  #forget(agent: string, taskId: string): void {
    this.#tracked.delete(keyOf(agent, taskId));
    this.#scheduler.remove(agent, taskId);
  }
}
