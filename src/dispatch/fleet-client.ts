import { randomUUID } from 'node:crypto';

import { TaskState, type SendMessageRequest, type Task } from '@a2a-js/sdk';

import { checkTaskId, FleetgateError } from '../protocol/index.js';
import {
  SkillCallChain,
  createHookFailureLog,
  createSkillCallContext,
  type CallOutcome,
  type ExtensionEventBus,
  type ExtensionRegistry,
  type HookFailureSink,
  type RegisteredExtension,
} from '../extensions/index.js';
import { isTerminalState, normalizeTaskState, type TaskStateName } from '../protocol/index.js';
import {
  CALL_ID_HEADER,
  createAgentClient,
  type AgentClient,
  type FleetAgentSource,
  type WireRecord,
} from './agent-clients.js';
import type { CallInput, CallOptions, CallResult, FollowRequest } from './call-types.js';
import { mergeExtensionHeader } from './headers.js';
import type { AgentFetchLimits } from './agent-fetch.js';
import { NEVER_ABORTED, buildMessage, callError } from './request.js';
import { TaskAccumulator, readReply } from './task-accumulator.js';
import { createTaskTerminal, type TaskCall, type TaskTerminal } from './terminal.js';

/** Options of {@link createFleetClient}. */
export interface FleetClientOptions {
  registry: ExtensionRegistry;
  bus: ExtensionEventBus;
  /**
   * The agents by name with the cards they last served, and the declarations read from them (the
   * fleet's card broker); a `Map` of `{ url, card }` works too (declarations are then read from
   * each card once, when its client is built).
   */
  cards: FleetAgentSource;
  /**
   * `fetch` used for every request to an agent. Default: requests go over `node:http`/`node:https`
   * with kept-alive connections (the same exchange as `fetch`, at a fraction of its cost), and to
   * the global `fetch` only what that path does not take.
   */
  fetch?: typeof fetch;
  /**
   * Limits of every exchange with an agent: response bytes (default 16 MiB), response time
   * (default 10 minutes) and same-origin redirects (default 3). See {@link AgentFetchLimits}.
   */
  limits?: AgentFetchLimits;
  /**
   * Default per-call timeout in milliseconds (none by default). A timed-out call rejects with
   * `FLEETGATE_CALL_TIMEOUT` but its request goes on: see {@link CallOptions.timeoutMs}.
   */
  timeoutMs?: number;
  /** Where optional-hook failures go (default: counted and published on `system.error`). */
  hookFailures?: HookFailureSink;
  /**
   * The task terminal every reply settles through (default: an in-memory one). For exactly-once
   * across paths, restarts and replicas pass a durable one (`createTaskTerminal({ durable })`);
   * the client binds itself to it as the source of rebuilt `after` chains.
   */
  terminal?: TaskTerminal;
  /**
   * Follows a task a timed-out call left running (the tracker's `follow`). Without it, such a
   * task is canceled at the agent, and that is reported on `system.error`.
   */
  follow?: (task: FollowRequest) => Promise<void>;
}

/** A Fleetgate client: skill calls to a fleet of A2A agents, wrapped in the extension chain. */
export interface FleetClient {
  /**
   * Calls `skill` on `agent`. Resolves with the terminal task (or the non-terminal one handed to
   * the tracker); a task that ended `failed`/`canceled`/`rejected` resolves with `ok: false`.
   *
   * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN`, `FLEETGATE_AGENT_UNAVAILABLE`, `FLEETGATE_CALL_FAILED`,
   * `FLEETGATE_CALL_TIMEOUT`, `FLEETGATE_CALL_ABORTED`, `FLEETGATE_HOOK_FAILED`,
   * `FLEETGATE_STAMP_CONFLICT` — in every case after the `after` hooks ran with `{ ok: false }`.
   */
  call(agent: string, skill: string, input: CallInput, options?: CallOptions): Promise<CallResult>;
  /** The task terminal this client settles replies through (the tracker settles through it too). */
  readonly terminal: TaskTerminal;
  /** The cached SDK client of an agent (built from its card on first use). */
  agentClient(agent: string): Promise<AgentClient>;
  /** Drops the cached client of an agent (card refreshed or agent removed). */
  forget(agent: string): void;
  /** Optional-hook failures so far, keyed `"<uri> <hook>"` (default sink only). */
  hookFailures(): Record<string, number>;
}

interface CachedClient {
  source: unknown;
  promise: Promise<AgentClient>;
  /** The built client once `promise` resolved: a call then starts without waiting a turn. */
  resolved?: AgentClient;
  extensions?: { version: number; list: RegisteredExtension[]; uris: string[] };
  headers?: { activated: readonly string[]; value: Readonly<Record<string, string>> };
}

/**
 * Creates a fleet client: one cached SDK client per agent, built from the card the fleet already
 * has (no card fetch per call; requests go to the configured agent URL), and the extension chain
 * around every call.
 *
 * @example
 * ```ts
 * const registry = registerStandardExtensions(new ExtensionRegistry(), { bus });
 * const fleet = createFleetClient({ registry, bus, cards: new Map([['quinn', { url, card }]]) });
 * const result = await fleet.call('quinn', 'pr_review', 'review #42');
 * ```
 */
export function createFleetClient(options: FleetClientOptions): FleetClient {
  const { registry, bus, cards } = options;
  // Without a fetch of the caller's, agents are called over node:http (see src/net/exchange.ts).
  const baseFetch = options.fetch;
  const defaultSink = createHookFailureLog({ bus });
  const sink = options.hookFailures ?? defaultSink;
  const terminal = options.terminal ?? createTaskTerminal();
  const wire = new Map<string, WireRecord>();
  const clients = new Map<string, CachedClient>();
  let callSeq = 0;
  // Correlation ids of calls that bring none: one random prefix per client and a counter, so a
  // call costs no second trip to the CSPRNG (the message id already takes one).
  const correlationPrefix = randomUUID();
  let correlationSeq = 0;

  function agentClient(name: string): Promise<AgentClient> {
    const agent = cards.get(name);
    if (agent === undefined) {
      return Promise.reject(
        cards.unavailable?.(name) ??
          new FleetgateError('FLEETGATE_AGENT_UNKNOWN', `No agent named ${name} is known.`, {
            details: { agent: name },
          }),
      );
    }
    const cached = clients.get(name);
    // The card broker replaces the card object on refresh; a new object means a new client.
    if (cached !== undefined && cached.source === agent.card) return cached.promise;
    const promise = createAgentClient({
      name,
      agent,
      ...(baseFetch === undefined ? {} : { fetch: baseFetch }),
      wire,
      ...(options.limits === undefined ? {} : { limits: options.limits }),
    });
    const entry: CachedClient = { source: agent.card, promise };
    clients.set(name, entry);
    promise.then(
      (built) => {
        entry.resolved = built;
      },
      () => {
        if (clients.get(name) === entry) clients.delete(name);
      },
    );
    return promise;
  }

  /** The cached client of `name` when it is built and still matches the agent's card. */
  function builtClient(name: string): AgentClient | undefined {
    const cached = clients.get(name);
    if (cached?.resolved === undefined) return undefined;
    const agent = cards.get(name);
    return agent !== undefined && agent.card === cached.source ? cached.resolved : undefined;
  }

  function activeExtensions(
    name: string,
    built: AgentClient,
  ): { list: RegisteredExtension[]; uris: string[] } {
    const cached = clients.get(name);
    if (cached?.extensions?.version === registry.version) return cached.extensions;
    const list = registry.forDeclarations(built.declarations);
    const active = { version: registry.version, list, uris: list.map((e) => e.extension.uri) };
    if (cached !== undefined) cached.extensions = active;
    return active;
  }

  /** The merged headers of a call without caller extras: computed once per client and chain. */
  function defaultHeaders(
    name: string,
    built: AgentClient,
    activated: readonly string[],
  ): Readonly<Record<string, string>> {
    const cached = clients.get(name);
    if (cached?.headers !== undefined && cached.headers.activated === activated) {
      return cached.headers.value;
    }
    const value = mergeExtensionHeader(built.headers, undefined, activated);
    if (cached !== undefined) cached.headers = { activated, value };
    return value;
  }

  /**
   * A call with a timeout: the timeout detaches the caller, never the request. The caller gets
   * `FLEETGATE_CALL_TIMEOUT` when the time is up; the request goes on and its end is settled like
   * any reply (a terminal task: the `after` hooks run once and its events are published; a task
   * still running: followed, or canceled at the agent when nothing follows). Aborting the request
   * instead would leave a task running at the agent whose deltas nobody ever publishes.
   */
  function callWithTimeout(
    agent: string,
    skill: string,
    input: CallInput,
    callOptions: CallOptions,
    timeoutMs: number,
  ): Promise<CallResult> {
    const timeout = new AbortController();
    const correlationId = callOptions.correlationId ?? randomUUID();
    const work = exchange(agent, skill, input, { ...callOptions, correlationId }, timeout.signal);
    return new Promise<CallResult>((resolve, reject) => {
      let detached = false;
      const timer = setTimeout(() => {
        detached = true;
        timeout.abort();
        reject(
          new FleetgateError(
            'FLEETGATE_CALL_TIMEOUT',
            `The call of ${skill} on ${agent} got no answer within ${timeoutMs} ms. The request ` +
              `goes on: its task is settled when it ends (events published once), or followed ` +
              `(canceled at the agent when nothing follows tasks) if it is still running then.`,
            { details: { agent, skill, correlationId, timeoutMs, detached: true } },
          ),
        );
      }, timeoutMs);
      work.then(
        (result) => {
          clearTimeout(timer);
          if (!detached) resolve(result);
          else void afterDetached(result).catch((error: unknown) => reportDetached(error, result));
        },
        (error: Error) => {
          clearTimeout(timer);
          if (!detached) reject(error);
          else void reportDetached(error, { agent, skill, correlationId });
        },
      );
    });
  }

  /** The end of a timed-out call's request: a task still running is followed or canceled. */
  async function afterDetached(result: CallResult): Promise<void> {
    const task = result.task;
    if (result.terminal || task === undefined) return; // settled in the exchange
    const { agent, skill, correlationId } = result;
    const state = normalizeTaskState(task.status?.state);
    if (options.follow !== undefined) {
      await options.follow({
        agent,
        skill,
        correlationId,
        taskId: task.id,
        state,
        ...(result.streamDropped === true ? { resubscribe: true, task } : {}),
      });
      return;
    }
    const { client } = await agentClient(agent);
    let canceled: Task = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    if (!isTerminalState(normalizeTaskState(canceled.status?.state))) {
      canceled = {
        ...canceled,
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined },
      };
    }
    await terminal.settle(agent, canceled, 'timeout');
    await reportDetached(
      new FleetgateError(
        'FLEETGATE_CALL_TIMEOUT',
        `Task ${task.id} of a timed-out call of ${skill} on ${agent} was still ${state} and ` +
          `nothing follows tasks (no \`follow\`): it was canceled at the agent.`,
        { details: { agent, skill, correlationId, taskId: task.id, canceled: true } },
      ),
      result,
    );
  }

  /** A failure nobody awaits any more (the caller timed out): published on `system.error`. */
  async function reportDetached(
    error: unknown,
    call: { agent: string; skill: string; correlationId: string; task?: Task | undefined },
  ): Promise<void> {
    try {
      await bus.publish(
        'system.error',
        {
          source: 'fleet-client',
          message: error instanceof Error ? error.message : String(error),
          code: error instanceof FleetgateError ? error.code : 'FLEETGATE_CALL_FAILED',
          agent: call.agent,
          skill: call.skill,
          correlationId: call.correlationId,
          ...(call.task === undefined ? {} : { taskId: call.task.id }),
        },
        { correlationId: call.correlationId },
      );
    } catch {
      // The bus itself failed: the hook-failure log counts what cannot be published either.
      await sink.report({
        uri: 'fleet-client',
        hook: 'after',
        required: false,
        error,
        agent: call.agent,
        skill: call.skill,
        correlationId: call.correlationId,
      });
    }
  }

  function call(
    agent: string,
    skill: string,
    input: CallInput,
    callOptions: CallOptions = {},
  ): Promise<CallResult> {
    const timeoutMs = callOptions.timeoutMs ?? options.timeoutMs;
    return timeoutMs === undefined
      ? exchange(agent, skill, input, callOptions, undefined)
      : callWithTimeout(agent, skill, input, callOptions, timeoutMs);
  }

  /** Exchanges in progress: while others are, a reply's claim waits to share their commit. */
  let inFlight = 0;

  async function exchange(
    agent: string,
    skill: string,
    input: CallInput,
    callOptions: CallOptions,
    timeoutSignal: AbortSignal | undefined,
  ): Promise<CallResult> {
    inFlight += 1;
    try {
      return await exchangeOnce(agent, skill, input, callOptions, timeoutSignal);
    } finally {
      inFlight -= 1;
    }
  }

  async function exchangeOnce(
    agent: string,
    skill: string,
    input: CallInput,
    callOptions: CallOptions,
    timeoutSignal: AbortSignal | undefined,
  ): Promise<CallResult> {
    const startedAt = Date.now();
    const t0 = performance.now();
    const built = builtClient(agent) ?? (await agentClient(agent));
    const active = activeExtensions(agent, built);
    const correlationId =
      callOptions.correlationId ?? `${correlationPrefix}-${(correlationSeq += 1).toString(36)}`;

    // Hooks see the call time out; the request itself only stops when the caller aborts it.
    const transportSignal = callOptions.signal ?? NEVER_ABORTED;
    const signal =
      timeoutSignal === undefined
        ? transportSignal
        : callOptions.signal === undefined
          ? timeoutSignal
          : AbortSignal.any([callOptions.signal, timeoutSignal]);

    const ctx = createSkillCallContext({
      agent,
      skill,
      correlationId,
      metadata: callOptions.metadata,
      signal,
      declarations: built.declarations,
      startedAt,
    });
    const chain = new SkillCallChain(active.list, ctx, sink);
    const activated = active.uris;

    const failAfterHooks = async (error: FleetgateError, task?: Task): Promise<never> => {
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
    };

    try {
      await chain.runBefore();
    } catch (error) {
      return failAfterHooks(callError(error, { agent, skill, timedOut: false, aborted: false }));
    }
    const t1 = performance.now();

    const callId = String((callSeq += 1));
    const record: WireRecord = {};
    wire.set(callId, record);
    const serviceParameters =
      callOptions.serviceParameters === undefined && callOptions.extensions === undefined
        ? { ...defaultHeaders(agent, built, activated) }
        : mergeExtensionHeader(
            callOptions.serviceParameters === undefined
              ? built.headers
              : { ...built.headers, ...callOptions.serviceParameters },
            callOptions.extensions,
            activated,
          );
    serviceParameters[CALL_ID_HEADER] = callId;
    const metadata = ctx.outboundMetadata();
    const mode = callOptions.mode ?? 'blocking';
    const request: SendMessageRequest = {
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
    // No signal at all when nobody can abort: an AbortSignal makes fetch register listeners.
    const requestOptions =
      transportSignal === NEVER_ABORTED
        ? { serviceParameters }
        : { signal: transportSignal, serviceParameters };

    const acc = new TaskAccumulator();
    let streamDropped = false;
    try {
      if (mode === 'streaming') {
        for await (const event of built.client.sendMessageStream(request, requestOptions)) {
          acc.apply(event);
          callOptions.onEvent?.(event);
        }
      } else {
        const reply = await built.client.sendMessage(request, requestOptions);
        // The reply is ours alone: adopt it instead of copying it.
        if ('messageId' in reply) acc.adoptMessage(reply);
        else acc.adoptTask(reply);
      }
    } catch (error) {
      wire.delete(callId);
      // The timeout never aborts the request (it detaches the caller): only the caller's signal.
      const aborted = callOptions.signal?.aborted ?? false;
      const dropped = acc.task;
      if (
        mode === 'streaming' &&
        dropped !== undefined &&
        !aborted &&
        !isTerminalState(normalizeTaskState(dropped.status?.state))
      ) {
        // The stream broke but the task lives on at the agent: it goes to the tracker like any
        // task still running, which resumes it with SubscribeToTask.
        streamDropped = true;
      } else {
        const failure = callError(error, {
          agent,
          skill,
          timedOut: false,
          aborted,
          ...(record.status === undefined ? {} : { status: record.status }),
        });
        return failAfterHooks(failure, acc.task);
      }
    }
    wire.delete(callId);
    const t2 = performance.now();

    const task = acc.task;
    if (task !== undefined) {
      try {
        // Before the id is held, followed or claimed: a NUL would fail every store write of it.
        checkTaskId(task.id, `agent ${agent}`);
      } catch (error) {
        return failAfterHooks(error as FleetgateError);
      }
    }
    const message = task === undefined ? acc.message : undefined;
    let terminalState = false;
    let state: TaskStateName | 'message' = 'message';
    let ok = true;
    if (task !== undefined) {
      state = normalizeTaskState(task.status?.state);
      terminalState = isTerminalState(state);
      ok = state === 'completed';
      if (callOptions.taskId !== undefined && task.id !== callOptions.taskId) {
        // An answer naming another task than the one asked about is never settled: it could be
        // another caller's task (a forged id).
        return failAfterHooks(
          new FleetgateError(
            'FLEETGATE_CALL_FAILED',
            `Agent ${agent} answered about task ${task.id}, not the task ${callOptions.taskId} it was asked about.`,
            { details: { agent, skill, taskId: callOptions.taskId, answeredTaskId: task.id } },
          ),
        );
      }
      if (terminalState) {
        // Other calls in flight may end in this turn of the event loop: the claim may wait for
        // them and share their commit. A call alone commits at once.
        const done = await terminal.settle(agent, task, mode === 'streaming' ? 'stream' : 'reply', {
          chain,
          group: inFlight > 1 ? 'loop' : 'turn',
          // A call that continued no task: this answer is the first to name it.
          fresh: callOptions.taskId === undefined,
        });
        if (done.settled && done.failure !== undefined) throw done.failure;
      } else {
        terminal.hold({ agent, skill, correlationId, startedAt }, task.id);
      }
    } else if (message !== undefined) {
      terminalState = true;
      const failure = await chain.runAfter({ ok: true, message });
      if (failure !== undefined) throw failure;
    } else {
      return failAfterHooks(
        new FleetgateError(
          'FLEETGATE_CALL_FAILED',
          `Agent ${agent} answered with neither a task nor a message.`,
          {
            details: { agent, skill },
          },
        ),
      );
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
      timing: {
        startedAt,
        beforeMs: t1 - t0,
        transportMs: t2 - t1,
        afterMs: terminalState ? t3 - t2 : 0,
        totalMs: t3 - t0,
      },
    };
    if (task !== undefined) result.task = task;
    if (message !== undefined) result.message = message;
    if (record.echoed !== undefined) result.echoedExtensions = record.echoed;
    if (streamDropped) result.streamDropped = true;
    return result;
  }

  // The terminal rebuilds a held call's chain from the four fields it kept, at settle time.
  terminal.bindChains(async (held: TaskCall) => {
    const built = builtClient(held.agent) ?? (await agentClient(held.agent));
    const ctx = createSkillCallContext({
      agent: held.agent,
      skill: held.skill,
      correlationId: held.correlationId,
      signal: NEVER_ABORTED,
      declarations: built.declarations,
      startedAt: held.startedAt,
    });
    return new SkillCallChain(activeExtensions(held.agent, built).list, ctx, sink);
  });

  return {
    call,
    terminal,
    agentClient,
    forget(agent) {
      clients.delete(agent);
    },
    hookFailures: () => defaultSink.counts(),
  };
}
