/**
 * The A2A proxy's request handler: one per agent, behind the SDK's JSON-RPC and HTTP+JSON
 * handlers. Every message goes through the gateway's dispatch path — the policy gate, the stamps,
 * the merged `A2A-Extensions` header, the tracker, the single terminal — with the client's message
 * forwarded as sent. The proxy's task id is the dispatch's; its row maps it to the agent's task id
 * and keeps the task as the client sees it, so any replica answers `GetTask`, and a client that
 * sends the same message id again gets the same task.
 */
import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { Message as MessageCodec, TaskState } from '@a2a-js/sdk';
import {
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { CallResult, DispatchRecord } from '../../dispatch/index.js';
import type { EventEnvelope, TaskStateName } from '../../protocol/index.js';
import { FLEETGATE_GATEWAY_V1_URI, normalizeTaskState } from '../../protocol/index.js';
import type { Kysely } from 'kysely';
import type { Gateway, GatewayPorts } from '../gateway.js';
import type { ProxyDatabase } from './store-tables.js';
import { proxyCard } from './card.js';
import { EventQueue, TaskFeed } from './feed.js';
import type { PushDelivery } from './push.js';
import { checkPushUrl } from './push.js';
import type { PushUrlPolicy } from './push-url.js';
import { createPushDelivery } from './push.js';
import type { ResolvedSkill } from './skill.js';
import { admitFollowUp, sendFollowUp } from './follow-up.js';
import { resolveSkill } from './skill.js';
import { listProxyTasks, type TaskReader } from './task-query.js';
import type { ClientProtocol, ProxyTask, ProxyTaskStore } from './task-store.js';
import { createProxyTaskStore, ended } from './task-store.js';
import {
  clientEvent,
  clientTask,
  progressEvents,
  submittedTask,
  withHistory,
  withStatus,
} from './task-view.js';

/** Options of {@link createA2aProxy}. */
export interface A2aProxyOptions {
  gateway: Gateway;
  /** The gateway's store (the proxy's tables) and agent clients. */
  ports: Pick<GatewayPorts, 'store' | 'agentClient'>;
  /** Every bus event this process receives (the live-event hub's `listen`). */
  listen: (listener: (event: EventEnvelope) => void) => () => void;
  /** The gateway's public base URL: the card's interfaces and the dashboard links point there. */
  publicUrl: string;
  /** How long a blocking `SendMessage` waits for an approval. */
  holdForMs: number;
  push: { attempts: number; backoffMs: number; timeoutMs: number; sweepMs: number };
  /** Which URLs clients may register for push notifications (`proxy.pushUrls`). */
  pushUrls: PushUrlPolicy;
  /** Told of held calls and task state changes (metrics). */
  observe?: {
    held?: (agent: string, delta: 1 | -1) => void;
    state?: (agent: string, state: TaskStateName) => void;
    push?: (outcome: 'delivered' | 'retried' | 'dead') => void;
  };
  onError: (error: unknown, where: string) => void;
}

/** The proxy of a gateway. */
export interface A2aProxy {
  /** True when the agent is configured. */
  knows(agent: string): boolean;
  /** The request handler of one agent (cached). */
  handler(agent: string): A2ARequestHandler;
  /** The proxy's card of an agent; undefined while its card has not loaded. */
  card(agent: string): Promise<AgentCard> | undefined;
  readonly store: ProxyTaskStore;
  readonly push: PushDelivery;
  close(): Promise<void>;
}

/** Dispatch events after which a proxy task may look different. */
const MOVES = new Set([
  'skill.dispatch.gated',
  'skill.dispatch.rejected',
  'skill.dispatch.started',
  'skill.dispatch.completed',
  'skill.dispatch.failed',
  'skill.dispatch.awaiting-input',
  'skill.dispatch.resumed',
]);

/** How often a waiting call re-reads its task when no event woke it (another replica's work). */
const TICK_MS = 1000;
/** Ended tasks remembered, so their late events cost nothing. */
const ENDED_MEMORY = 10_000;

/** Metadata the proxy adds to its tasks, under `fleetgate`. */
interface ProxyMetadata {
  agent: string;
  skill: string;
  skillVia: ResolvedSkill['via'];
  skillReason: string;
  approvalId?: string;
  approvalUrl?: string;
  reason?: string;
}

function fleetgateMeta(task: Task): ProxyMetadata | undefined {
  const meta = task.metadata?.['fleetgate'] as ProxyMetadata | undefined;
  return typeof meta === 'object' && meta !== null ? meta : undefined;
}

/** True while the task waits for the gateway's approval (not for the agent's question). */
export function awaitingApproval(task: ProxyTask): boolean {
  const meta = task.task.status?.message?.metadata?.['fleetgate'] as
    { awaiting?: unknown } | undefined;
  return task.state === 'input-required' && meta?.awaiting === 'approval';
}

/** True once a blocking call has its answer: ended, or the agent waits on its caller. */
function answered(task: ProxyTask): boolean {
  return (
    ended(task.state) ||
    task.state === 'auth-required' ||
    (task.state === 'input-required' && !awaitingApproval(task))
  );
}

function protocolOf(context: ServerCallContext): ClientProtocol {
  return context.requestedVersion.startsWith('0.') ? '0.3' : '1.0';
}

function callerOf(context: ServerCallContext): string {
  return context.user?.userName ?? 'anonymous';
}

/** Whose tasks a caller reads: its own; an admin token reads every caller's. */
function readerOf(context: ServerCallContext): TaskReader {
  const role = (context.user as { role?: unknown } | undefined)?.role;
  return { caller: callerOf(context), admin: role === 'admin' };
}

function sameView(a: Task, b: Task, aAgentTask: string | null, bAgentTask: string | null): boolean {
  return (
    a.status?.state === b.status?.state &&
    aAgentTask === bAgentTask &&
    a.artifacts.length === b.artifacts.length &&
    // A follow-up adds to the history without moving the state.
    a.history.length === b.history.length &&
    JSON.stringify(a.status?.message?.parts ?? []) ===
      JSON.stringify(b.status?.message?.parts ?? [])
  );
}

/** Builds the proxy of a gateway. */
export function createA2aProxy(options: A2aProxyOptions): A2aProxy {
  const { gateway } = options;
  const { ports } = options;
  const store = createProxyTaskStore(ports.store.db, { sqlite: ports.store.sqlite });
  const database = ports.store.db as unknown as Kysely<ProxyDatabase>;
  const push = createPushDelivery({
    store,
    attempts: options.push.attempts,
    backoffMs: options.push.backoffMs,
    timeoutMs: options.push.timeoutMs,
    sweepMs: options.push.sweepMs,
    urls: options.pushUrls,
    onError: options.onError,
    ...(options.observe?.push === undefined ? {} : { onOutcome: options.observe.push }),
  });
  const feed = new TaskFeed();
  const cards = new WeakMap<object, Promise<AgentCard>>();
  const handlers = new Map<string, A2ARequestHandler>();
  /** Tasks this process is dispatching right now: it syncs them itself. */
  const local = new Set<string>();
  /** Ended tasks (their late events are ignored). */
  const done = new Set<string>();
  const waiters = new Map<string, Set<() => void>>();
  const syncing = new Map<string, Promise<ProxyTask | undefined>>();
  /**
   * Calls this process is sending to the agent, by task: resolves true once the agent answered
   * (its stream of the call ended), false when the gate held the call (nothing was sent).
   */
  const inflight = new Map<string, Promise<boolean>>();
  const sendingNow = (id: string, sending: Promise<{ held: boolean }>): void => {
    const answeredNow = sending.then(
      (sent) => !sent.held,
      () => true,
    );
    inflight.set(id, answeredNow);
    void answeredNow.finally(() => {
      if (inflight.get(id) === answeredNow) inflight.delete(id);
    });
  };
  const background = new Set<Promise<unknown>>();
  let closed = false;

  /**
   * Dispatches that are not proxy tasks (API, CLI, library calls). A proxy task's row is written
   * before its dispatch starts, so one not found at a dispatch event never becomes a proxy task:
   * its later events cost no read.
   */
  const foreign = new Set<string>();

  const remember = (id: string): void => {
    done.add(id);
    if (done.size > ENDED_MEMORY) done.delete(done.values().next().value!);
  };

  const rememberForeign = (id: string): void => {
    foreign.add(id);
    if (foreign.size > ENDED_MEMORY) foreign.delete(foreign.values().next().value!);
  };

  const wake = (id: string): void => {
    for (const w of waiters.get(id) ?? []) w();
  };

  /** Resolves on the task's next dispatch event, or after `ms`. */
  const nap = (id: string, ms: number): Promise<void> =>
    new Promise((resolve) => {
      let set = waiters.get(id);
      if (set === undefined) {
        set = new Set();
        waiters.set(id, set);
      }
      const timer = setTimeout(done, Math.max(0, ms));
      function done(): void {
        clearTimeout(timer);
        set!.delete(done);
        if (set!.size === 0) waiters.delete(id);
        resolve();
      }
      set.add(done);
    });

  const keep = (work: Promise<unknown>, where: string): void => {
    const tracked = work.catch((error: unknown) => options.onError(error, where));
    background.add(tracked);
    void tracked.finally(() => background.delete(tracked));
  };

  const stopListening = options.listen((event) => {
    if (!event.topic.startsWith('skill.dispatch.')) return;
    const id = (event.payload as { id?: unknown } | null)?.id;
    if (typeof id !== 'string') return;
    wake(id);
    if (closed || local.has(id) || done.has(id) || foreign.has(id) || !MOVES.has(event.topic)) {
      return;
    }
    keep(
      sync(id).then((task) => {
        if (task === undefined) rememberForeign(id);
      }),
      'proxy.sync',
    );
  });

  const dashboardLink = (approvalId: string): string =>
    `${options.publicUrl.replace(/\/+$/, '')}/#/approvals?id=${encodeURIComponent(approvalId)}`;

  /** The agent's task, read from the agent (another replica sent the call). */
  async function agentTask(agent: string, taskId: string): Promise<Task | undefined> {
    try {
      const built = await ports.agentClient(agent);
      return await built.client.getTask(
        { tenant: '', id: taskId },
        { serviceParameters: { ...built.headers } },
      );
    } catch (error) {
      options.onError(error, 'proxy.agent-task');
      return undefined;
    }
  }

  /** The pending approval (not a question) that holds a dispatch, from the inbox. */
  async function heldApprovalOf(dispatchId: string): Promise<string | undefined> {
    const pending = await gateway.approvals.list({ status: 'pending', includeSnoozed: true });
    return pending.find((a) => a.dispatchId === dispatchId && a.kind !== 'checkpoint')?.id;
  }

  /** What the client sees of a task, from its dispatch (and the call's result when known). */
  async function view(
    current: ProxyTask,
    record: DispatchRecord,
    result?: CallResult,
  ): Promise<{ task: Task; agentTaskId?: string } | undefined> {
    const base = current.task;
    const meta = fleetgateMeta(base);
    const ids = { id: current.id, contextId: current.contextId };
    const metadata = (extra: Partial<ProxyMetadata>): Record<string, unknown> => ({
      ...(base.metadata ?? {}),
      fleetgate: { ...meta, ...extra },
    });
    switch (record.status) {
      case 'awaiting-approval': {
        const reason = record.result?.error?.message ?? 'approval required';
        // The dispatching call writes the approval id on the row once `dispatch` returns; a read
        // racing it (an event, another replica) asks the inbox, so no view goes out without it.
        const approvalId = meta?.approvalId ?? (await heldApprovalOf(current.id));
        const text =
          `Awaiting approval${approvalId === undefined ? '' : ` ${approvalId}`}: ${reason}.` +
          (meta?.skillVia === 'widest-radius' ? ` (${meta.skillReason})` : '') +
          (approvalId === undefined ? '' : ` Decide it at ${dashboardLink(approvalId)}`);
        const task = withStatus(
          {
            ...base,
            metadata: metadata({
              reason,
              ...(approvalId === undefined
                ? {}
                : { approvalId, approvalUrl: dashboardLink(approvalId) }),
            }),
          },
          TaskState.TASK_STATE_INPUT_REQUIRED,
          text,
          {
            fleetgate: {
              awaiting: 'approval',
              ...(approvalId === undefined
                ? {}
                : { approvalId, approvalUrl: dashboardLink(approvalId) }),
              reason,
            },
          },
        );
        return { task };
      }
      case 'rejected': {
        const error = record.result?.error;
        const expired = error?.code === 'FLEETGATE_APPROVAL_EXPIRED';
        const reason = error?.message ?? 'rejected by the policy gate';
        return {
          task: withStatus(
            { ...base, metadata: metadata({ reason }) },
            expired ? TaskState.TASK_STATE_FAILED : TaskState.TASK_STATE_REJECTED,
            `${expired ? 'The approval expired' : 'Rejected'}: ${reason}. The agent was not called.`,
            { fleetgate: { code: error?.code ?? 'FLEETGATE_DISPATCH_DENIED', reason } },
          ),
        };
      }
      case 'running':
      case 'awaiting-input':
      case 'completed':
      case 'failed':
      case 'canceled':
        break;
    }
    const agentTaskId = record.taskId ?? result?.task?.id;
    if (result?.task !== undefined) {
      return { task: clientTask(result.task, ids, metadata({})), agentTaskId: result.task.id };
    }
    if (agentTaskId === undefined || agentTaskId === null) {
      switch (record.status) {
        case 'running':
          return { task: withStatus(base, TaskState.TASK_STATE_WORKING) };
        case 'completed': {
          // The agent answered with a message, not a task.
          const reply = result?.message;
          const task = withStatus(
            { ...base, metadata: metadata({}) },
            TaskState.TASK_STATE_COMPLETED,
            reply === undefined ? (record.result?.text ?? '') : undefined,
          );
          if (reply !== undefined && task.status !== undefined) {
            task.status.message = { ...reply, taskId: ids.id, contextId: ids.contextId };
          }
          return { task };
        }
        case 'failed':
        case 'canceled':
        case 'awaiting-input': {
          const error = record.result?.error;
          return {
            task: withStatus(
              { ...base, metadata: metadata({}) },
              record.status === 'canceled'
                ? TaskState.TASK_STATE_CANCELED
                : TaskState.TASK_STATE_FAILED,
              error === undefined ? 'The call failed.' : `${error.code}: ${error.message}`,
              error === undefined ? undefined : { fleetgate: { code: error.code } },
            ),
          };
        }
      }
    }
    const fetched = await agentTask(current.agent, agentTaskId);
    if (fetched === undefined) {
      if (record.status === 'running') return undefined;
      const state = normalizeTaskState(
        record.result?.state ?? (record.status === 'awaiting-input' ? 'input-required' : 'failed'),
      );
      return {
        task: withStatus(base, TASK_STATE_OF[state], record.result?.text),
        agentTaskId,
      };
    }
    return { task: clientTask(fetched, ids, metadata({})), agentTaskId };
  }

  /** Brings a task's row up to date with its dispatch; tells the clients what changed. */
  function sync(
    id: string,
    hint?: { record?: DispatchRecord; result?: CallResult; current?: ProxyTask },
  ): Promise<ProxyTask | undefined> {
    const running = syncing.get(id);
    if (running !== undefined && hint === undefined) return running;
    const work = (async () => {
      const current = hint?.current ?? (await store.get(id));
      if (current === undefined || ended(current.state)) {
        if (current !== undefined) remember(id);
        return current;
      }
      const record = hint?.record ?? (await gateway.dispatchRecord(id));
      if (record === undefined) return current;
      const next = await view(current, record, hint?.result);
      if (next === undefined) return current;
      if (
        sameView(
          current.task,
          next.task,
          current.agentTaskId,
          next.agentTaskId ?? current.agentTaskId,
        )
      ) {
        return current;
      }
      const { changed, task } = await store.update(id, {
        task: next.task,
        ...(next.agentTaskId === undefined ? {} : { agentTaskId: next.agentTaskId }),
        at: Date.now(),
      });
      if (task === undefined) return current;
      if (ended(task.state)) remember(id);
      if (changed) {
        options.observe?.state?.(task.agent, task.state);
        if (task.state !== current.state) await push.notify(task.task, task.state);
      }
      return task;
    })();
    syncing.set(id, work);
    // Its callers see a failure; this bookkeeping must not raise it again unhandled (a read that
    // failed while the database was away ended the process).
    const forget = (): void => {
      if (syncing.get(id) === work) syncing.delete(id);
    };
    work.then(forget, forget);
    return work;
  }

  /** Re-reads the task until `stop` says so or the deadline passes; resolves the last read. */
  async function follow(
    id: string,
    until: (task: ProxyTask) => boolean,
    deadline: number,
  ): Promise<ProxyTask | undefined> {
    for (;;) {
      const task = await sync(id);
      if (task === undefined || until(task) || closed) return task;
      const left = deadline - Date.now();
      if (left <= 0) return task;
      await nap(id, Math.min(TICK_MS, left));
    }
  }

  /** What the gateway's agent knows of, and the agent's skills for skill resolution. */
  function skillsOf(agent: string, card: AgentCard): string[] {
    void agent;
    return card.skills.map((s) => s.id);
  }

  async function cardOf(agent: string): Promise<AgentCard> {
    const pending = proxy.card(agent);
    if (pending === undefined) {
      throw new UnsupportedOperationError(`The card of agent ${agent} has not loaded yet.`);
    }
    return pending;
  }

  /** Records the call (or finds the one the same message id made) and resolves its skill. */
  async function open(
    agent: string,
    params: SendMessageRequest,
    context: ServerCallContext,
  ): Promise<{
    task: ProxyTask;
    created: boolean;
    message: Record<string, unknown>;
    skill: ResolvedSkill;
  }> {
    const message = params.message;
    if (message === undefined || message.messageId === '') {
      throw new RequestMalformedError('message.messageId is required');
    }
    const card = await cardOf(agent);
    const skill = resolveSkill({
      agent,
      skills: skillsOf(agent, card),
      messageMetadata: message.metadata,
      requestMetadata: params.metadata,
      radius: (s) => gateway.agents.effectiveRadius(agent, s).radius,
    });
    const id = randomUUID();
    const contextId = message.contextId === '' ? randomUUID() : message.contextId;
    const references = await agentReferences(agent, message);
    const forwarded: Message = { ...message, taskId: '', contextId, referenceTaskIds: references };
    const meta: ProxyMetadata = {
      agent,
      skill: skill.skill,
      skillVia: skill.via,
      skillReason: skill.reason,
    };
    const claimed = await store.claim({
      id,
      agent,
      caller: callerOf(context),
      messageId: message.messageId,
      contextId,
      agentTaskId: null,
      state: 'submitted',
      task: submittedTask({ id, contextId }, message, { fleetgate: meta }),
      protocol: protocolOf(context),
      createdAt: Date.now(),
    });
    return {
      task: claimed.task,
      created: claimed.created,
      message: MessageCodec.toJSON(forwarded) as Record<string, unknown>,
      skill,
    };
  }

  /**
   * A message that continues a task (`message.taskId`, the proxy's id): the answer to the
   * question the agent asked. It goes the way every answer to a task's question goes — the
   * dispatch's checkpoint in the approvals inbox, answered by the caller — so the dispatcher sends
   * it to the agent on the agent's own task, with the task's skill, stamps and extensions, and the
   * tracker follows the task to its end (deltas once, on the single terminal). The answer is not
   * gated again: the call was admitted (and approved, when it had to be) when the task started.
   * A `compound` skill is the exception: its checkpoints need an approver, not the caller.
   * Resolves once the agent answered (the task ended or asks again). A message to a task the agent
   * is working on (not asking) is a follow-up instead, decided by the policy as a call of the
   * task's skill (`follow-up.ts`).
   */
  async function continueTask(
    agent: string,
    message: Message,
    context: ServerCallContext,
  ): Promise<{
    task: ProxyTask;
    /** True for a follow-up to a working task, false for the answer to the agent's question. */
    followUp: boolean;
    /** Sends the message; resolves the task once the agent answered it. */
    answer: (params: SendMessageRequest, streaming: boolean) => Promise<ProxyTask | undefined>;
  }> {
    if (message.messageId === '') {
      throw new RequestMalformedError('message.messageId is required');
    }
    const known = await store.get(message.taskId);
    if (known === undefined || known.agent !== agent || known.caller !== callerOf(context)) {
      throw new TaskNotFoundError(`Task not found: ${message.taskId}`);
    }
    const task = (await sync(known.id)) ?? known;
    if (ended(task.state)) {
      throw new UnsupportedOperationError(
        `Task ${task.id} already ended ${task.state}; send a message without taskId to start a new one.`,
      );
    }
    if (awaitingApproval(task)) {
      const approvalId = fleetgateMeta(task.task)?.approvalId;
      throw new UnsupportedOperationError(
        `Task ${task.id} waits for the gateway's approval${approvalId === undefined ? '' : ` ${approvalId}`}; it takes a message once the agent asks for one.`,
      );
    }
    if (task.state !== 'input-required') {
      // A message to a task the agent is working on: a follow-up, decided as a call of the
      // task's skill before anything is sent.
      const skill = fleetgateMeta(task.task)?.skill;
      if (task.agentTaskId === null || skill === undefined) {
        throw new UnsupportedOperationError(
          `Task ${task.id} is still being sent to the agent; send the follow-up once GetTask shows it working.`,
        );
      }
      await admitFollowUp(gateway, { agent, skill, taskId: task.id });
      return {
        task,
        followUp: true,
        answer: (params, streaming) =>
          followUp(agent, task, skill, message, params, context, streaming),
      };
    }
    const text = message.parts
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .filter((t) => t !== '')
      .join('\n');
    if (text === '') {
      throw new RequestMalformedError(
        `message.parts: the answer to task ${task.id}'s question needs a text part.`,
      );
    }
    // The dispatcher opens the question's checkpoint as it sees it: wait for it briefly.
    let checkpoint: { id: string; mode: string } | undefined;
    const deadline = Date.now() + 5000;
    for (;;) {
      checkpoint = (await gateway.approvals.list({ status: 'pending', includeSnoozed: true })).find(
        (a) => a.dispatchId === task.id && a.kind === 'checkpoint',
      );
      if (checkpoint !== undefined || Date.now() > deadline || closed) break;
      await nap(task.id, 200);
    }
    if (checkpoint === undefined) {
      throw new UnsupportedOperationError(
        `Task ${task.id} has no open question to answer; read it again with GetTask.`,
      );
    }
    if (checkpoint.mode === 'compound') {
      throw new UnsupportedOperationError(
        `The skill of task ${task.id} is compound: an approver answers its question (approval ${checkpoint.id}, ${dashboardLink(checkpoint.id)}), not the caller.`,
      );
    }
    const approvalId = checkpoint.id;
    return {
      task,
      followUp: false,
      answer: async () => {
        local.add(task.id);
        try {
          await gateway.approvals.answer(
            approvalId,
            callerOf(context),
            text,
            'answered through the A2A proxy',
          );
        } finally {
          local.delete(task.id);
        }
        return sync(task.id);
      },
    };
  }

  /**
   * Sends an admitted follow-up to the agent's task (`follow-up.ts`); a streaming one publishes
   * the agent's events to the task's subscribers here. Resolves the task with the agent's answer.
   */
  async function followUp(
    agent: string,
    task: ProxyTask,
    skill: string,
    message: Message,
    params: SendMessageRequest,
    context: ServerCallContext,
    streaming: boolean,
  ): Promise<ProxyTask | undefined> {
    const ids = { id: task.id, contextId: task.contextId };
    const result = await sendFollowUp(gateway, {
      agent,
      skill,
      taskId: task.id,
      agentTaskId: task.agentTaskId!,
      contextId: task.contextId,
      message: { ...message, referenceTaskIds: await agentReferences(agent, message) },
      metadata: params.metadata,
      extensions: (context.requestedExtensions ?? []).filter(
        (uri) => uri !== FLEETGATE_GATEWAY_V1_URI,
      ),
      streaming,
      ...(streaming
        ? { onEvent: (event: StreamResponse) => feed.publish(task.id, clientEvent(event, ids)) }
        : {}),
    });
    if (!streaming) {
      for (const uri of result.echoedExtensions ?? []) context.addActivatedExtension(uri);
    }
    const record = await gateway.dispatchRecord(task.id);
    const synced = record === undefined ? undefined : await sync(task.id, { record, result });
    const now = synced ?? task;
    // The agent's task as it answered (its history has the follow-up), in the proxy's ids.
    return result.task === undefined || ended(now.state)
      ? now
      : { ...now, task: clientTask(result.task, ids, now.task.metadata) };
  }

  /** References name the proxy's tasks; the agent knows its own ids. */
  async function agentReferences(agent: string, message: Message): Promise<string[]> {
    const references: string[] = [];
    for (const ref of message.referenceTaskIds) {
      const known = await store.get(ref);
      references.push(known?.agent === agent ? (known.agentTaskId ?? ref) : ref);
    }
    return references;
  }

  /** Sends the call through the gateway's dispatch path. */
  async function dispatch(
    agent: string,
    opened: { task: ProxyTask; message: Record<string, unknown>; skill: ResolvedSkill },
    params: SendMessageRequest,
    context: ServerCallContext,
    streaming: boolean,
    /** Told when the agent answered the call (its stream ended), before the records move on. */
    onAnswered?: (result: CallResult) => void,
  ): Promise<{ record: DispatchRecord; held: boolean; result: CallResult | undefined }> {
    const id = opened.task.id;
    let result: CallResult | undefined;
    const requested = (context.requestedExtensions ?? []).filter(
      (uri) => uri !== FLEETGATE_GATEWAY_V1_URI,
    );
    const call = gateway.dispatch({
      id,
      agent,
      skill: opened.skill.skill,
      message: opened.message,
      ...(params.metadata === undefined ? {} : { metadata: params.metadata }),
      ...(requested.length === 0 ? {} : { extensions: requested }),
      requestedBy: callerOf(context),
      mode: streaming ? 'streaming' : 'blocking',
    });
    // The agent's events to the task's subscribers as they come, and its answer, up to the record
    // the dispatch answered with (every update before it has been read once that one is).
    const ids = { id, contextId: opened.task.contextId };
    const relayed = (async () => {
      for await (const update of call.events()) {
        if (update.type === 'stream') {
          if (streaming) feed.publish(id, clientEvent(update.event, ids));
        } else if (update.type === 'reply') {
          result = update.result;
          onAnswered?.(update.result);
        } else if (update.type === 'status') {
          return;
        }
      }
    })();
    const record = await call.answered();
    await relayed;
    const decision = await call.decision;
    const held = decision.action === 'hold';
    if (decision.action === 'hold' && decision.approvalId !== undefined) {
      // The approval id goes on the task before anyone reads it as waiting.
      const base = opened.task.task;
      const meta = fleetgateMeta(base);
      await store.update(id, {
        task: {
          ...base,
          metadata: {
            ...(base.metadata ?? {}),
            fleetgate: {
              ...meta,
              approvalId: decision.approvalId,
              approvalUrl: dashboardLink(decision.approvalId),
            },
          },
        },
        at: Date.now(),
      });
    }
    return { record, held, result };
  }

  function handlerFor(agent: string): A2ARequestHandler {
    const notFound = (id: string): TaskNotFoundError =>
      new TaskNotFoundError(`Task not found: ${id}`);
    /**
     * The caller's task (another's is not found). To read, an admin reaches every caller's, as
     * ListTasks shows them; to change one (cancel, push configs), only its caller.
     */
    const owned = async (
      id: string,
      context: ServerCallContext,
      access: 'read' | 'write' = 'write',
    ): Promise<ProxyTask> => {
      const task = await store.get(id);
      const reader = readerOf(context);
      if (
        task === undefined ||
        task.agent !== agent ||
        (task.caller !== reader.caller && !(access === 'read' && reader.admin))
      ) {
        throw notFound(id);
      }
      return task;
    };

    /**
     * A client's stream of a task: the task first (the response's headers go with it, at once),
     * then each event once — the live call's events on this process as they arrive, else the
     * task's progress as the store records it — to the task's end. `agentDone` settles when the
     * agent's own stream of the call ended: true ends this one too (after the state the store has
     * then), as the agent's did; false (the call was held for approval) follows the store on.
     * A continued task's stream (`askedAt`) also ends at the agent's next question.
     */
    async function* stream(
      first: Task,
      id: string,
      alreadySeen: { state: string; artifacts: number },
      options: { askedAt?: number; agentDone?: Promise<boolean> | (() => Promise<boolean>) } = {},
    ): AsyncGenerator<StreamResponse, void, undefined> {
      const queue = new EventQueue<StreamResponse>();
      const stop = feed.listen(id, (event) => {
        if (event.payload === undefined) queue.poke();
        else queue.push(event);
      });
      let agentEnded = false;
      let sawLive = false;
      const agentDone =
        typeof options.agentDone === 'function' ? options.agentDone() : options.agentDone;
      void agentDone?.then(
        (end) => {
          agentEnded = end;
          queue.poke();
        },
        () => {
          agentEnded = true;
          queue.poke();
        },
      );
      try {
        yield { payload: { $case: 'task', value: first } };
        let state = normalizeTaskState(alreadySeen.state);
        let artifacts = alreadySeen.artifacts;
        if (ended(state)) return;
        for (;;) {
          const event = await queue.next(TICK_MS);
          if (event !== undefined) {
            sawLive = true;
            const p = event.payload;
            if (p?.$case === 'task') {
              // The client has had the task: a task event of the agent's says only what changed.
              const next = normalizeTaskState(p.value.status?.state);
              if (next === state && p.value.artifacts.length <= artifacts) continue;
              for (const e of progressEvents(p.value, artifacts)) yield e;
              state = next;
              artifacts = Math.max(artifacts, p.value.artifacts.length);
              if (ended(state)) return;
              continue;
            }
            yield event;
            if (p?.$case === 'artifactUpdate') artifacts += 1;
            if (p?.$case === 'statusUpdate' && p.value.status !== undefined) {
              state = normalizeTaskState(p.value.status.state);
              if (ended(state)) return;
            }
            continue;
          }
          if (closed) return;
          if (agentEnded) {
            // The agent's stream ended. Its live events told the client everything; a call sent
            // blocking (no live events) is read once more for the state it ended in.
            if (sawLive) return;
            const task = await sync(id);
            if (
              task !== undefined &&
              (task.state !== state || task.task.artifacts.length > artifacts)
            ) {
              for (const e of progressEvents(task.task, artifacts)) yield e;
            }
            return;
          }
          if (feed.live(id)) continue;
          const task = await sync(id);
          if (task === undefined) return;
          if (task.state !== state || task.task.artifacts.length > artifacts) {
            for (const e of progressEvents(task.task, artifacts)) yield e;
            state = task.state;
            artifacts = task.task.artifacts.length;
            if (ended(task.state)) return;
          }
          if (options.askedAt !== undefined && task.updatedAt > options.askedAt && answered(task)) {
            return;
          }
          if (queue.ended) return;
        }
      } finally {
        stop();
      }
    }

    /**
     * Follows a running task's events at the agent (its own `SubscribeToTask`) into this process's
     * feed: every subscriber of the task here reads them, and the subscription ends when the
     * agent's does. Resolves true when the agent's stream ended, false when the agent refused it
     * (the store is followed instead).
     */
    function relayAgentStream(task: ProxyTask): Promise<boolean> {
      const agentTaskId = task.agentTaskId!;
      const ids = { id: task.id, contextId: task.contextId };
      feed.open(task.id);
      const work = (async () => {
        try {
          const built = await ports.agentClient(agent);
          for await (const event of built.client.resubscribeTask(
            { tenant: '', id: agentTaskId },
            { serviceParameters: { ...built.headers } },
          )) {
            feed.publish(task.id, clientEvent(event, ids));
          }
          return true;
        } catch (error) {
          options.onError(error, 'proxy.subscribe');
          return false;
        } finally {
          feed.close(task.id);
          await sync(task.id).catch((error: unknown) => options.onError(error, 'proxy.sync'));
        }
      })();
      keep(work, 'proxy.subscribe');
      return work;
    }

    /**
     * A push configuration sent with the message (`configuration.taskPushNotificationConfig`):
     * registered for the new task through `CreateTaskPushNotificationConfig`'s own path (its checks
     * included) before the call is sent, so every state the task reaches, `submitted` first, is
     * delivered like one set later. A configuration refused ends the task failed, saying why, and
     * nothing is sent.
     */
    async function registerPushWith(
      params: SendMessageRequest,
      task: ProxyTask,
      context: ServerCallContext,
    ): Promise<void> {
      const config = params.configuration?.taskPushNotificationConfig;
      if (config === undefined) return;
      try {
        await handler.createTaskPushNotificationConfig({ ...config, taskId: task.id }, context);
        // As an SDK agent does, the task goes out as it starts (submitted), before the client
        // hears of it; every later state follows.
        await push.notify(task.task, task.state);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        await store.update(task.id, {
          task: withStatus(
            task.task,
            TaskState.TASK_STATE_FAILED,
            `configuration.taskPushNotificationConfig was refused (${reason}); the agent was not called.`,
          ),
          at: Date.now(),
        });
        throw error;
      }
    }

    const handler: A2ARequestHandler = {
      getAgentCard: () => cardOf(agent),
      getAuthenticatedExtendedAgentCard: () => cardOf(agent),

      async sendMessage(params, context) {
        if (params.message !== undefined && params.message.taskId !== '') {
          const { task, answer, followUp } = await continueTask(agent, params.message, context);
          if (params.configuration?.returnImmediately === true) {
            keep(answer(params, false), 'proxy.continue');
            return withHistory(task.task, params.configuration.historyLength);
          }
          if (followUp) {
            // Answered as the agent answered the follow-up.
            const after = await answer(params, false);
            return withHistory((after ?? task).task, params.configuration?.historyLength);
          }
          await answer(params, false);
          const after = await follow(
            task.id,
            (t) => answered(t) && t.updatedAt > task.updatedAt,
            Date.now() + options.holdForMs,
          );
          return withHistory((after ?? task).task, params.configuration?.historyLength);
        }
        const opened = await open(agent, params, context);
        const id = opened.task.id;
        const historyLength = params.configuration?.historyLength;
        const returnNow = params.configuration?.returnImmediately === true;
        if (!opened.created) {
          // The same message again: the task it made as it stands now, at once (the first call
          // answered the same way, or is still answering), never a second dispatch.
          const task = local.has(id) ? await store.get(id) : await sync(id);
          return withHistory((task ?? opened.task).task, historyLength);
        }
        await registerPushWith(params, opened.task, context);
        local.add(id);
        const work = (async () => {
          try {
            const sending = dispatch(agent, opened, params, context, false);
            sendingNow(id, sending);
            const sent = await sending;
            // The extensions the agent activated for the call go back to the client with those
            // the proxy activated on arrival (the SDK sets the response header from the context).
            for (const uri of sent.result?.echoedExtensions ?? []) {
              context.addActivatedExtension(uri);
            }
            let task = await sync(id, {
              record: sent.record,
              // The row as this call left it (a held call's row has its approval id since).
              ...(sent.held ? {} : { current: opened.task }),
              ...(sent.result === undefined ? {} : { result: sent.result }),
            });
            if (!returnNow && sent.held && task !== undefined && !ended(task.state)) {
              options.observe?.held?.(agent, 1);
              try {
                task = await follow(id, answered, Date.now() + options.holdForMs);
              } finally {
                options.observe?.held?.(agent, -1);
              }
            }
            return task;
          } finally {
            local.delete(id);
          }
        })();
        if (returnNow) {
          keep(work, 'proxy.send');
          return withHistory((await store.get(id))?.task ?? opened.task.task, historyLength);
        }
        const task = await work;
        return withHistory((task ?? opened.task).task, historyLength);
      },

      async *sendMessageStream(params, context) {
        if (params.message !== undefined && params.message.taskId !== '') {
          const { task, answer, followUp } = await continueTask(agent, params.message, context);
          if (followUp) {
            // The agent's events of the follow-up, live, to the end of the agent's stream.
            feed.open(task.id);
            const sent = answer(params, true)
              .then(
                () => true,
                (error: unknown) => {
                  options.onError(error, 'proxy.follow-up');
                  return true;
                },
              )
              .finally(() => feed.close(task.id));
            keep(sent, 'proxy.follow-up');
            yield* stream(
              task.task,
              task.id,
              { state: task.state, artifacts: task.task.artifacts.length },
              { agentDone: sent },
            );
            return;
          }
          keep(answer(params, true), 'proxy.continue');
          // The task as it stands, then its progress from the store, to its end or next question.
          yield* stream(
            task.task,
            task.id,
            { state: task.state, artifacts: task.task.artifacts.length },
            { askedAt: task.updatedAt },
          );
          return;
        }
        const opened = await open(agent, params, context);
        const id = opened.task.id;
        if (!opened.created) {
          const current = (await sync(id)) ?? opened.task;
          yield* stream(current.task, id, {
            state: current.state,
            artifacts: current.task.artifacts.length,
          });
          return;
        }
        await registerPushWith(params, opened.task, context);
        local.add(id);
        feed.open(id);
        // The client's stream ends when the agent's does: once the call's result is on the task
        // (and its push deliveries started), before the gateway has finished recording the call.
        let agentAnswered!: (end: boolean) => void;
        const agentDone = new Promise<boolean>((resolve) => (agentAnswered = resolve));
        const dispatching = dispatch(agent, opened, params, context, true, (result) => {
          const settle = async (): Promise<void> => {
            const record = await gateway.dispatchRecord(id);
            if (record !== undefined) await sync(id, { record, result });
          };
          void settle()
            .catch((error: unknown) => options.onError(error, 'proxy.stream'))
            .finally(() => agentAnswered(true));
        });
        sendingNow(id, dispatching);
        void dispatching.then(
          (sent) => agentAnswered(!sent.held),
          () => agentAnswered(true),
        );
        const sending = dispatching.then(
          async (sent) => {
            try {
              await sync(id, {
                record: sent.record,
                ...(sent.result === undefined ? {} : { result: sent.result }),
              });
            } finally {
              feed.close(id);
              local.delete(id);
            }
            // The agent's stream ended with the call, unless the gate held it (nothing was sent).
            return !sent.held;
          },
          (error: unknown) => {
            feed.close(id);
            local.delete(id);
            throw error;
          },
        );
        keep(sending, 'proxy.stream');
        yield* stream(opened.task.task, id, { state: 'submitted', artifacts: 0 }, { agentDone });
      },

      async getTask(params: GetTaskRequest, context) {
        let task = await owned(params.id, context, 'read');
        if (!ended(task.state) && !local.has(task.id)) task = (await sync(task.id)) ?? task;
        return withHistory(task.task, params.historyLength);
      },

      async cancelTask(params: CancelTaskRequest, context) {
        const task = await owned(params.id, context);
        if (ended(task.state)) {
          throw new TaskNotCancelableError(`Task ${task.id} already ended ${task.state}.`);
        }
        const record = await gateway.dispatchRecord(task.id);
        const approvalId = fleetgateMeta(task.task)?.approvalId;
        if (record?.status === 'awaiting-approval' && approvalId !== undefined) {
          await gateway.approvals.reject(approvalId, callerOf(context), 'canceled by the client');
          const { task: stored } = await store.update(task.id, {
            task: withStatus(
              task.task,
              TaskState.TASK_STATE_CANCELED,
              'Canceled by the client before approval; the agent was not called.',
            ),
            at: Date.now(),
          });
          if (stored !== undefined) await push.notify(stored.task, stored.state);
          return (stored ?? task).task;
        }
        if (task.agentTaskId === null) {
          throw new TaskNotCancelableError(
            `Task ${task.id} is being sent to the agent; try again.`,
          );
        }
        const built = await ports.agentClient(agent);
        await built.client.cancelTask(
          { tenant: '', id: task.agentTaskId, metadata: params.metadata },
          { serviceParameters: { ...built.headers } },
        );
        // The terminal path settles the canceled task (the tracker, or this read); the row follows.
        return ((await follow(task.id, (t) => ended(t.state), Date.now() + 5000)) ?? task).task;
      },

      async *resubscribe(params: SubscribeToTaskRequest, context) {
        const task = await owned(params.id, context, 'read');
        const current =
          ended(task.state) || local.has(task.id) ? task : ((await sync(task.id)) ?? task);
        if (ended(current.state)) {
          throw new UnsupportedOperationError(
            `Task ${current.id} is in a terminal state (${current.state}) and cannot be subscribed to.`,
          );
        }
        // A task running at the agent is followed on the agent's own stream, which ends when the
        // agent's does; a held one (nothing at the agent yet) on the store.
        // A call this process is still sending ends the subscription when the agent answers it.
        const agentDone =
          inflight.get(current.id) ??
          (current.agentTaskId !== null && !awaitingApproval(current)
            ? () => relayAgentStream(current)
            : undefined);
        yield* stream(
          current.task,
          current.id,
          { state: current.state, artifacts: current.task.artifacts.length },
          agentDone === undefined ? {} : { agentDone },
        );
      },

      async createTaskPushNotificationConfig(params: TaskPushNotificationConfig, context) {
        const task = await owned(params.taskId, context);
        if (params.url === '') throw new RequestMalformedError('url is required');
        await checkPushUrl(options.pushUrls, params.url);
        const config = { ...params, id: params.id === '' ? randomUUID() : params.id };
        await store.setPush(
          { taskId: task.id, configId: config.id, config, protocol: protocolOf(context) },
          Date.now(),
        );
        // A task that already ended is sent at once.
        if (ended(task.state)) await push.notify(task.task, task.state);
        return config;
      },

      async getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigRequest, context) {
        const task = await owned(params.taskId, context, 'read');
        const found = await store.getPush(task.id, params.id);
        if (found === undefined) {
          throw new TaskNotFoundError(`No push configuration ${params.id} for task ${task.id}`);
        }
        return found.config;
      },

      async listTaskPushNotificationConfigs(
        params: ListTaskPushNotificationConfigsRequest,
        context,
      ): Promise<ListTaskPushNotificationConfigsResponse> {
        const task = await owned(params.taskId, context, 'read');
        return { configs: (await store.listPush(task.id)).map((c) => c.config), nextPageToken: '' };
      },

      async deleteTaskPushNotificationConfig(
        params: DeleteTaskPushNotificationConfigRequest,
        context,
      ) {
        const task = await owned(params.taskId, context);
        await store.deletePush(task.id, params.id);
      },

      listTasks(params: ListTasksRequest, context): Promise<ListTasksResponse> {
        return listProxyTasks(database, agent, readerOf(context), params);
      },
    };
    return handler;
  }

  const proxy: A2aProxy = {
    knows: (agent) => gateway.agents.state(agent) !== undefined,
    handler(agent) {
      let handler = handlers.get(agent);
      if (handler === undefined) {
        handler = handlerFor(agent);
        handlers.set(agent, handler);
      }
      return handler;
    },
    card(agent) {
      const source = gateway.agents.state(agent)?.card;
      if (source === undefined || source === null || typeof source !== 'object') return undefined;
      let card = cards.get(source);
      if (card === undefined) {
        card = proxyCard({ agent, card: source, publicUrl: options.publicUrl });
        cards.set(source, card);
      }
      return card;
    },
    store,
    push,
    async close() {
      closed = true;
      stopListening();
      for (const id of [...waiters.keys()]) wake(id);
      while (background.size > 0) await Promise.allSettled([...background]);
      // Tries not yet taken stay due in the store: another replica, or the next start, sends them.
      push.stop();
      await push.idle();
    },
  };
  return proxy;
}

const TASK_STATE_OF: Readonly<Record<TaskStateName, TaskState>> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
  rejected: TaskState.TASK_STATE_REJECTED,
  unknown: TaskState.TASK_STATE_UNSPECIFIED,
};
