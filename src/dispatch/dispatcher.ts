import { randomUUID } from 'node:crypto';
import type { EventBus } from '../bus/index.js';
import { isFleetgateError } from '../protocol/index.js';
import type { TaskStateName } from '../protocol/index.js';
import { isInterruptedState, normalizeTaskState } from '../protocol/index.js';
import type {
  DispatchRecord,
  DispatchRecordStore,
  DispatchResult,
  DispatchStatus,
} from './dispatch-records.js';
import type { CallResult, TaskFollower } from './call-types.js';
import type { FleetClient } from './fleet-client.js';
import { readReply } from './task-accumulator.js';
import type { SettledTask } from './terminal.js';

/** What the policy gate says about one call. */
export type GateDecision =
  | { action: 'allow' }
  | { action: 'deny'; reason: string }
  /** A human must approve first (the approvals inbox holds the dispatch). */
  | { action: 'hold'; reason: string };

/**
 * Decides whether a call may go out. The HITL policy (blast-v1 composed with hitl-mode-v1) is one;
 * {@link ALLOW_ALL} lets everything through.
 */
export interface PolicyGate {
  decide(request: { agent: string; skill: string; correlationId: string }): Promise<GateDecision>;
}

/** A gate that allows every call. */
export const ALLOW_ALL: PolicyGate = { decide: () => Promise.resolve({ action: 'allow' }) };

/** What to dispatch. */
export interface DispatchRequest {
  agent: string;
  skill: string;
  text?: string;
  data?: unknown;
  correlationId?: string;
}

/** Options of {@link Dispatcher}. */
export interface DispatcherOptions {
  fleet: Pick<FleetClient, 'call'>;
  records: DispatchRecordStore;
  /** Where tasks that did not end in the reply go (the task tracker). */
  tracker: TaskFollower;
  bus: Pick<EventBus, 'publish'>;
  gate?: PolicyGate;
  /**
   * How calls are sent (default `blocking`: the agent answers when the task ends or waits on
   * input). `return-immediately` hands every unfinished task to the tracker at once.
   */
  mode?: 'blocking' | 'streaming' | 'return-immediately';
  now?: () => number;
}

const TEXT_LIMIT = 2000;

const ENDED: ReadonlySet<DispatchStatus> = new Set(['completed', 'failed', 'rejected', 'canceled']);

function statusOfState(state: TaskStateName): DispatchStatus {
  switch (state) {
    case 'completed':
      return 'completed';
    case 'canceled':
      return 'canceled';
    case 'rejected':
      return 'rejected';
    case 'failed':
    case 'unknown':
      return 'failed';
    case 'submitted':
    case 'working':
      return 'running';
    case 'input-required':
    case 'auth-required':
      return 'awaiting-input';
  }
}

/**
 * Dispatches skill calls: a durable dispatch record for each, the policy gate, then the fleet
 * client. A terminal reply ends the dispatch at once (the call's `after` hooks already ran through
 * the task terminal); a task still running is handed to the tracker, and whichever path settles it
 * later — the tracker's, or another call answering the task — ends the dispatch through
 * {@link onTaskSettled} (wire it to the terminal's `onSettled`). A task waiting on its caller is
 * `awaiting-input`, never `running` ({@link onTaskState}, wired to the tracker's
 * `onStateChanged`). Publishes `skill.dispatch.requested | rejected | gated | started |
 * awaiting-input | resumed | completed | failed`.
 */
export class Dispatcher {
  readonly #o: DispatcherOptions & { gate: PolicyGate; now: () => number };

  constructor(options: DispatcherOptions) {
    this.#o = { gate: ALLOW_ALL, now: Date.now, ...options };
  }

  /** Dispatches one call; resolves with the record once the call ended or was handed over. */
  async dispatch(request: DispatchRequest): Promise<DispatchRecord> {
    const now = this.#o.now();
    const record: DispatchRecord = {
      id: randomUUID(),
      agent: request.agent,
      skill: request.skill,
      correlationId: request.correlationId ?? randomUUID(),
      status: 'running',
      taskId: null,
      createdAt: now,
      updatedAt: now,
      result: null,
    };
    await this.#o.records.create(record);
    await this.#publish('skill.dispatch.requested', record);

    const decision = await this.#o.gate.decide(record);
    if (decision.action !== 'allow') {
      const status: DispatchStatus = decision.action === 'deny' ? 'rejected' : 'awaiting-approval';
      const updated = await this.#o.records.update(record.id, {
        status,
        result: { error: { code: 'FLEETGATE_DISPATCH_DENIED', message: decision.reason } },
        at: this.#o.now(),
      });
      await this.#publish(
        decision.action === 'deny' ? 'skill.dispatch.rejected' : 'skill.dispatch.gated',
        updated!,
        {
          reason: decision.reason,
        },
      );
      return updated!;
    }

    await this.#publish('skill.dispatch.started', record);
    let result: CallResult;
    try {
      const input = {
        ...(request.text === undefined ? {} : { text: request.text }),
        ...(request.data === undefined ? {} : { data: request.data }),
      };
      result = await this.#o.fleet.call(request.agent, request.skill, input, {
        correlationId: record.correlationId,
        mode: this.#o.mode ?? 'blocking',
      });
    } catch (error) {
      const failure = isFleetgateError(error)
        ? { code: error.code, message: error.message }
        : {
            code: 'FLEETGATE_CALL_FAILED',
            message: error instanceof Error ? error.message : String(error),
          };
      return this.#end(record.id, 'failed', { error: failure });
    }
    const taskId = result.task?.id;
    if (!result.terminal && result.task !== undefined && taskId !== undefined) {
      const state = normalizeTaskState(result.task.status?.state);
      const status = statusOfState(state);
      const updated = await this.#o.records.update(record.id, {
        status,
        taskId,
        at: this.#o.now(),
      });
      if (status === 'awaiting-input') {
        await this.#publish('skill.dispatch.awaiting-input', updated!, { state });
      }
      await this.#o.tracker.follow({
        agent: request.agent,
        skill: request.skill,
        correlationId: record.correlationId,
        taskId,
        state,
        ...(result.streamDropped === true ? { resubscribe: true, task: result.task } : {}),
      });
      return (await this.#o.records.get(record.id))!;
    }
    const state = result.state === 'message' ? 'completed' : result.state;
    return this.#end(record.id, statusOfState(state), this.#summary(state, result.text), taskId);
  }

  /**
   * A task settled (once, on whichever path won its claim): end its dispatch. Wire it to the task
   * terminal's `onSettled`, so a dispatch ends even when a follow-up call answering the task (not
   * the tracker) settled it.
   */
  async onTaskSettled(
    finished: Pick<SettledTask, 'agent' | 'taskId' | 'task'> & { via?: string },
  ): Promise<void> {
    const record = await this.#o.records.byTask(finished.agent, finished.taskId);
    if (record === undefined || ENDED.has(record.status)) return;
    const state = normalizeTaskState(finished.task.status?.state);
    const { text } = readReply(finished.task, undefined);
    if (finished.via === 'timeout') {
      await this.#end(record.id, 'failed', {
        state,
        error: {
          code: 'FLEETGATE_TASK_TIMEOUT',
          message: `Task ${finished.taskId} did not finish within the tracking time; it was canceled at the agent.`,
        },
      });
      return;
    }
    await this.#end(record.id, statusOfState(state), this.#summary(state, text));
  }

  /**
   * A followed task changed state (wire it to the tracker's `onStateChanged`): a task waiting on
   * its caller makes the dispatch `awaiting-input`, a task working again makes it `running`.
   */
  async onTaskState(change: {
    agent: string;
    taskId: string;
    state: TaskStateName;
  }): Promise<void> {
    const record = await this.#o.records.byTask(change.agent, change.taskId);
    if (record === undefined || ENDED.has(record.status)) return;
    const status = statusOfState(change.state);
    if (status !== 'running' && status !== 'awaiting-input') return; // ends come through settle
    if (record.status === status) return;
    const updated = await this.#o.records.update(record.id, { status, at: this.#o.now() });
    if (updated === undefined || updated.status !== status) return;
    await this.#publish(
      status === 'awaiting-input' ? 'skill.dispatch.awaiting-input' : 'skill.dispatch.resumed',
      updated,
      { state: change.state },
    );
  }

  #summary(state: TaskStateName, text: string | undefined): DispatchResult {
    const result: DispatchResult = { state };
    if (text !== undefined && text !== '') result.text = text.slice(0, TEXT_LIMIT);
    if (state !== 'completed' && !isInterruptedState(state)) {
      result.error = { code: 'FLEETGATE_TASK_FAILED', message: `The task ended ${state}.` };
    }
    return result;
  }

  async #end(
    id: string,
    status: DispatchStatus,
    result: DispatchResult,
    taskId?: string,
  ): Promise<DispatchRecord> {
    const updated = await this.#o.records.update(id, {
      status,
      result,
      at: this.#o.now(),
      ...(taskId === undefined ? {} : { taskId }),
    });
    await this.#publish(
      status === 'completed' ? 'skill.dispatch.completed' : 'skill.dispatch.failed',
      updated!,
    );
    return updated!;
  }

  async #publish(
    topic: `skill.dispatch.${string}`,
    record: DispatchRecord,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    await (
      this.#o.bus.publish as (
        t: string,
        p: unknown,
        o?: { correlationId: string },
      ) => Promise<unknown>
    )(topic, { ...record, ...extra }, { correlationId: record.correlationId });
  }
}
