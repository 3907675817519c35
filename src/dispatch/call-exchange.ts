import { randomUUID } from 'node:crypto';

import type { SendMessageRequest, Task } from '@a2a-js/sdk';

import { checkTaskId, FleetgateError } from '../protocol/index.js';
import {
  SkillCallChain,
  createSkillCallContext,
  type CallOutcome,
  type HookFailureSink,
} from '../extensions/index.js';
import { isTerminalState, normalizeTaskState, type TaskStateName } from '../protocol/index.js';
import type { AgentClientCache } from './agent-client-cache.js';
import { CALL_ID_HEADER, type AgentClient, type WireRecord } from './agent-clients.js';
import type { CallInput, CallMode, CallOptions, CallResult, CallTiming } from './call-types.js';
import { mergeExtensionHeader } from './headers.js';
import { NEVER_ABORTED, buildMessage, callError } from './request.js';
import { TaskAccumulator, readReply } from './task-accumulator.js';
import type { TaskTerminal } from './terminal.js';
import type { SettleResult, TaskCall } from './terminal-types.js';
import { defined } from '../protocol/fields/index.js';

/**
 * The calls of one fleet client: each runs the `before` hooks, sends its request, and settles the
 * answer through the task terminal (or holds a task still running for the tracker). It numbers
 * the calls and counts those in flight.
 */
export class CallExchange {
  readonly #clients: AgentClientCache;
  readonly #terminal: TaskTerminal;
  readonly #sink: HookFailureSink;
  readonly #wire: Map<string, WireRecord>;
  #callSeq = 0;
  // Correlation ids of calls that bring none: one random prefix per client and a counter, so a
  // call costs no second trip to the CSPRNG (the message id already takes one).
  readonly #correlationPrefix = randomUUID();
  #correlationSeq = 0;
  /** Exchanges in progress: while others are, a reply's claim waits to share their commit. */
  #inFlight = 0;

  constructor(clients: AgentClientCache, terminal: TaskTerminal, sink: HookFailureSink) {
    this.#clients = clients;
    this.#terminal = terminal;
    this.#sink = sink;
    this.#wire = clients.wire;
  }

  /** The chain of a held call, rebuilt from the four fields the terminal kept, at settle time. */
  async chainFor(held: TaskCall): Promise<SkillCallChain> {
    const clients = this.#clients;
    const built = clients.builtClient(held.agent) ?? (await clients.agentClient(held.agent));
    const ctx = createSkillCallContext({
      agent: held.agent,
      skill: held.skill,
      correlationId: held.correlationId,
      signal: NEVER_ABORTED,
      declarations: built.declarations,
      startedAt: held.startedAt,
    });
    return new SkillCallChain(clients.activeExtensions(held.agent, built).list, ctx, this.#sink);
  }

  /**
   * Calls `skill` on `agent` and settles the answer. `timeoutSignal` aborts with the caller's
   * timeout: the hooks see it, the request does not (see `callWithTimeout`).
   */
  async run(
    agent: string,
    skill: string,
    input: CallInput,
    callOptions: CallOptions,
    timeoutSignal: AbortSignal | undefined,
  ): Promise<CallResult> {
    this.#inFlight += 1;
    try {
      const startedAt = Date.now();
      const t0 = performance.now();
      const clients = this.#clients;
      const built = clients.builtClient(agent) ?? (await clients.agentClient(agent));
      const active = clients.activeExtensions(agent, built);
      const correlationId = callOptions.correlationId ?? this.#nextCorrelationId();

      // Hooks see the call time out; the request itself only stops when the caller aborts it.
      const transportSignal = callOptions.signal ?? NEVER_ABORTED;
      const ctx = createSkillCallContext({
        agent,
        skill,
        correlationId,
        metadata: callOptions.metadata,
        signal: hookSignal(callOptions.signal, timeoutSignal),
        declarations: built.declarations,
        startedAt,
      });
      const chain = new SkillCallChain(active.list, ctx, this.#sink);
      const activated = active.uris;

      try {
        await chain.runBefore();
      } catch (error) {
        const failure = callError(error, { agent, skill, timedOut: false, aborted: false });
        return await failAfterHooks(chain, failure);
      }
      const t1 = performance.now();

      const callId = String((this.#callSeq += 1));
      const record: WireRecord = {};
      this.#wire.set(callId, record);
      const serviceParameters = callHeaders(clients, agent, built, callOptions, activated);
      serviceParameters[CALL_ID_HEADER] = callId;
      const mode = callOptions.mode ?? 'blocking';
      const streamed =
        mode === 'streaming' ||
        (mode === 'blocking' &&
          callOptions.streamWhenAble === true &&
          built.preferStreaming &&
          built.card.capabilities?.streaming === true);
      const request = sendMessageRequest(input, callOptions, mode, ctx.outboundMetadata());
      // No signal at all when nobody can abort: an AbortSignal makes fetch register listeners.
      const requestOptions =
        transportSignal === NEVER_ABORTED
          ? { serviceParameters }
          : { signal: transportSignal, serviceParameters };

      const acc = new TaskAccumulator();
      let streamDropped = false;
      try {
        await exchange(built, request, requestOptions, acc, streamed ? callOptions : undefined);
      } catch (error) {
        this.#wire.delete(callId);
        // The timeout never aborts the request (it detaches the caller): only the caller's signal.
        const aborted = callOptions.signal?.aborted ?? false;
        // The stream broke but the task lives on at the agent: it goes to the tracker like any
        // task still running, which resumes it with SubscribeToTask.
        streamDropped = streamed && !aborted && isRunning(acc.task);
        if (!streamDropped) {
          const failure = requestError(error, agent, skill, aborted, record);
          return await failAfterHooks(chain, failure, acc.task);
        }
      }
      this.#wire.delete(callId);
      const t2 = performance.now();

      const task = acc.task;
      const refusal = task === undefined ? undefined : refuseTask(task, agent, skill, callOptions);
      if (refusal !== undefined) return await failAfterHooks(chain, refusal);
      const message = task === undefined ? acc.message : undefined;
      let terminalState = false;
      let state: TaskStateName | 'message' = 'message';
      let ok = true;
      if (task !== undefined) {
        state = normalizeTaskState(task.status?.state);
        terminalState = isTerminalState(state);
        ok = state === 'completed';
        if (terminalState) {
          const done = await this.#settleAnswer(agent, task, streamed, chain, callOptions);
          if (done.settled && done.failure !== undefined) throw done.failure;
        } else {
          this.#terminal.hold({ agent, skill, correlationId, startedAt }, task.id);
        }
      } else if (message !== undefined) {
        terminalState = true;
        const failure = await chain.runAfter({ ok: true, message });
        if (failure !== undefined) throw failure;
      } else {
        return await failAfterHooks(chain, noAnswer(agent, skill));
      }
      const t3 = performance.now();

      const reply = readReply(task, message);
      const result: CallResult = {
        agent,
        skill,
        correlationId,
        ok,
        state,
        terminal: terminalState,
        text: reply.text,
        data: reply.data,
        activated: [...activated],
        stamps: { ...ctx.stamps },
        transport: built.binding,
        protocolVersion: built.protocolVersion,
        timing: callTiming(startedAt, t0, t1, t2, t3, terminalState),
      };
      if (task !== undefined) result.task = task;
      if (message !== undefined) result.message = message;
      if (record.echoed !== undefined) result.echoedExtensions = record.echoed;
      if (streamDropped) result.streamDropped = true;
      return result;
    } finally {
      this.#inFlight -= 1;
    }
  }

  /** A correlation id for a call that brings none. */
  #nextCorrelationId(): string {
    return `${this.#correlationPrefix}-${(this.#correlationSeq += 1).toString(36)}`;
  }

  /**
   * Settles the terminal task a call was answered with. Other calls in flight may end in this
   * turn of the event loop: the claim may wait for them and share their commit. A call alone
   * commits at once.
   */
  #settleAnswer(
    agent: string,
    task: Task,
    streamed: boolean,
    chain: SkillCallChain,
    callOptions: CallOptions,
  ): Promise<SettleResult> {
    return this.#terminal.settle(agent, task, streamed ? 'stream' : 'reply', {
      chain,
      group: this.#inFlight > 1 ? 'loop' : 'turn',
      // A call that continued no task: this answer is the first to name it.
      fresh: callOptions.taskId === undefined,
    });
  }
}

/**
 * Ends a failed call: the `after` hooks run with `{ ok: false }` and the call's error is thrown —
 * or, when a required `after` hook failed and the call did not already fail on a hook, the hook's
 * failure, naming the call's error in its details.
 */
async function failAfterHooks(
  chain: SkillCallChain,
  error: FleetgateError,
  task?: Task,
): Promise<never> {
  const outcome: CallOutcome =
    task === undefined ? { ok: false, error } : { ok: false, error, task };
  const failure = await chain.runAfter(outcome);
  if (failure !== undefined && error.code !== 'FLEETGATE_HOOK_FAILED') {
    throw new FleetgateError(failure.code, failure.message, {
      cause: failure.cause,
      details: { ...failure.details, callError: error.code },
    });
  }
  throw error;
}

/** The signal the hooks of a call see: the caller's, the timeout's, or whichever aborts first. */
function hookSignal(
  callerSignal: AbortSignal | undefined,
  timeoutSignal: AbortSignal | undefined,
): AbortSignal {
  if (timeoutSignal === undefined) return callerSignal ?? NEVER_ABORTED;
  return callerSignal === undefined
    ? timeoutSignal
    : AbortSignal.any([callerSignal, timeoutSignal]);
}

/**
 * The service parameters (HTTP headers) of one call, a fresh object the call may add to: the
 * agent's headers with the caller's over them, and one `A2A-Extensions` entry.
 */
function callHeaders(
  clients: AgentClientCache,
  agent: string,
  built: AgentClient,
  callOptions: CallOptions,
  activated: readonly string[],
): Record<string, string> {
  const extra = callOptions.serviceParameters;
  if (extra === undefined && callOptions.extensions === undefined) {
    return { ...clients.defaultHeaders(agent, built, activated) };
  }
  return mergeExtensionHeader(
    extra === undefined ? built.headers : { ...built.headers, ...extra },
    callOptions.extensions,
    activated,
  );
}

/**
 * Sends a call's request and folds the answer into `acc`: one `SendMessage`, or, given the
 * options of a streamed call, the events of `SendStreamingMessage` as they come — the task named
 * by the first event that carries its id (unless it already ended), each relayed to a streaming
 * call's `onEvent`.
 */
async function exchange(
  built: AgentClient,
  request: SendMessageRequest,
  requestOptions: Parameters<AgentClient['client']['sendMessage']>[1],
  acc: TaskAccumulator,
  streamed: CallOptions | undefined,
): Promise<void> {
  if (streamed === undefined) {
    const reply = await built.client.sendMessage(request, requestOptions);
    // The reply is ours alone: adopt it instead of copying it.
    if ('messageId' in reply) acc.adoptMessage(reply);
    else acc.adoptTask(reply);
    return;
  }
  const relay = streamed.mode === 'streaming' ? streamed.onEvent : undefined;
  let named = streamed.onTaskNamed === undefined || streamed.taskId !== undefined;
  for await (const event of built.client.sendMessageStream(request, requestOptions)) {
    acc.apply(event);
    // A task the first event already ended needs no naming: its answer is here.
    if (!named && acc.task !== undefined && acc.task.id !== '') {
      named = true;
      if (isRunning(acc.task)) streamed.onTaskNamed!(acc.task.id);
    }
    relay?.(event);
  }
}

/** The `SendMessage` request of one call; `metadata` is what the chain stamped over the caller's. */
function sendMessageRequest(
  input: CallInput,
  callOptions: CallOptions,
  mode: CallMode,
  metadata: Record<string, unknown>,
): SendMessageRequest {
  return {
    tenant: '',
    message: buildMessage(input, callOptions),
    configuration:
      mode === 'return-immediately'
        ? {
            acceptedOutputModes: [],
            taskPushNotificationConfig: undefined,
            returnImmediately: true,
          }
        : undefined,
    metadata: Object.keys(metadata).length === 0 ? undefined : metadata,
  };
}

/** The error of an answer that is neither a task nor a message. */
function noAnswer(agent: string, skill: string): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_CALL_FAILED',
    `Agent ${agent} answered with neither a task nor a message.`,
    { details: { agent, skill } },
  );
}

/**
 * Where the time of a call went, from the clock readings at its start (`t0`), after the `before`
 * hooks (`t1`), after the transport (`t2`) and at its end (`t3`); nothing was spent after the
 * transport on a task left running.
 */
function callTiming(
  startedAt: number,
  t0: number,
  t1: number,
  t2: number,
  t3: number,
  terminal: boolean,
): CallTiming {
  return {
    startedAt,
    beforeMs: t1 - t0,
    transportMs: t2 - t1,
    afterMs: terminal ? t3 - t2 : 0,
    totalMs: t3 - t0,
  };
}

/** True when `task` is known and has not ended. */
function isRunning(task: Task | undefined): boolean {
  return task !== undefined && !isTerminalState(normalizeTaskState(task.status?.state));
}

/** The error of a request that failed, with the HTTP status of its last response when it had one. */
function requestError(
  error: unknown,
  agent: string,
  skill: string,
  aborted: boolean,
  record: WireRecord,
): FleetgateError {
  return callError(error, {
    agent,
    skill,
    timedOut: false,
    aborted,
    ...defined({ status: record.status }),
  });
}

/**
 * Why a task answer is never settled, held or followed, if it is not: an id no store can write,
 * or another task than the one the call continued.
 */
function refuseTask(
  task: Task,
  agent: string,
  skill: string,
  callOptions: CallOptions,
): FleetgateError | undefined {
  try {
    // Before the id is held, followed or claimed: a NUL would fail every store write of it.
    checkTaskId(task.id, `agent ${agent}`);
  } catch (error) {
    return error as FleetgateError;
  }
  const asked = callOptions.taskId;
  if (asked !== undefined && task.id !== asked) {
    // An answer naming another task than the one asked about is never settled: it could be
    // another caller's task (a forged id).
    return new FleetgateError(
      'FLEETGATE_CALL_FAILED',
      `Agent ${agent} answered about task ${task.id}, not the task ${asked} it was asked about.`,
      { details: { agent, skill, taskId: asked, answeredTaskId: task.id } },
    );
  }
  return undefined;
}
