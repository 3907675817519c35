import { randomUUID } from 'node:crypto';

import type { SendMessageRequest, Task } from '@a2a-js/sdk';

import { FleetgateError } from '../errors/index.js';
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
import { BlastRegistry } from '../fleet/blast-registry.js';
import { isTerminalState, normalizeTaskState, type TaskStateName } from '../protocol/index.js';
import {
  CALL_ID_HEADER,
  createAgentClient,
  type AgentClient,
  type FleetAgentSource,
  type WireRecord,
} from './agent-clients.js';
import type { CallInput, CallOptions, CallResult } from './call-types.js';
import { mergeExtensionHeader } from './headers.js';
import { NEVER_ABORTED, buildMessage, callError } from './request.js';
import { TaskAccumulator, readReply } from './task-accumulator.js';
import {
  TerminalRouter,
  type PendingCall,
  type TerminalPath,
  type TerminalResult,
  type TerminalRouterOptions,
} from './terminal.js';

/** Options of {@link createFleetClient}. */
/** What a task record keeps of the call that started a task. */
export interface ResumedCall {
  agent: string;
  skill: string;
  correlationId: string;
  /** Epoch milliseconds the call started. */
  startedAt: number;
}

export interface FleetClientOptions {
  registry: ExtensionRegistry;
  bus: ExtensionEventBus;
  /** The agents by name with the cards they last served (a `Map` works). */
  cards: FleetAgentSource;
  /** The blast registry the blast-v1 extension reads. */
  blast?: BlastRegistry;
  /**
   * Fill `blast` from each card when its client is built (default true). Pass false when a card
   * broker owns the registry (it keeps provenance and stale marks the client would overwrite).
   */
  fillBlastFromCards?: boolean;
  /** `fetch` used for every request (default: global `fetch`). */
  fetch?: typeof fetch;
  /** Default per-call timeout in milliseconds (none by default). */
  timeoutMs?: number;
  /** Where optional-hook failures go (default: counted and published on `system.error`). */
  hookFailures?: HookFailureSink;
  /** The terminal seam (default: one router per client, durable when `durable` is given). */
  terminal?: TerminalRouter;
  /**
   * Exactly-once finishing across paths, restarts and replicas (see `TerminalRouterOptions`): the
   * standard extensions must publish through `durable.collector`.
   */
  durable?: TerminalRouterOptions['durable'];
}

/** A Fleetgate client: skill calls to a fleet of A2A agents, wrapped in the extension chain. */
export interface FleetClient {
  /**
   * Calls `skill` on `agent`. Resolves with the terminal task (or the non-terminal one handed to
   * the tracker); a task that ended `failed`/`canceled`/`rejected` resolves with `ok: false`.
   *
   * @throws FleetgateError `FLEETGATE_AGENT_UNKNOWN`, `FLEETGATE_CALL_FAILED`,
   * `FLEETGATE_CALL_TIMEOUT`, `FLEETGATE_CALL_ABORTED`, `FLEETGATE_HOOK_FAILED`,
   * `FLEETGATE_STAMP_CONFLICT` — in every case after the `after` hooks ran with `{ ok: false }`.
   */
  call(agent: string, skill: string, input: CallInput, options?: CallOptions): Promise<CallResult>;
  /** The single terminal seam: every path that sees a terminal task calls this. */
  onTerminal(task: Task, via?: TerminalPath): Promise<TerminalResult>;
  /**
   * Finishes a task whose call started in another process (restart recovery, another replica):
   * rebuilds the call's chain from what the task record kept and runs its `after` hooks. A
   * pending call of this process for the task is used instead when there is one.
   */
  resume(task: Task, call: ResumedCall, via: TerminalPath): Promise<TerminalResult>;
  /** Calls whose `after` hooks wait for their terminal task. */
  pending(): PendingCall[];
  /** Drops a pending call whose task another process or replica finished (no hooks run). */
  discard(taskId: string): boolean;
  /** Gives up on a pending call: its `after` hooks run with `{ ok: false, error }`. */
  abandon(taskId: string, error: FleetgateError): Promise<TerminalResult>;
  /** The cached SDK client of an agent (built from its card on first use). */
  agentClient(agent: string): Promise<AgentClient>;
  /** Drops the cached client of an agent (card refreshed or agent removed). */
  forget(agent: string): void;
  /** Optional-hook failures so far, keyed `"<uri> <hook>"` (default sink only). */
  hookFailures(): Record<string, number>;
  readonly blast: BlastRegistry;
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
 * const blast = new BlastRegistry();
 * const registry = registerStandardExtensions(new ExtensionRegistry(), { bus, blast });
 * const fleet = createFleetClient({ registry, bus, blast, cards: new Map([['quinn', { url, card }]]) });
 * const result = await fleet.call('quinn', 'pr_review', 'review #42');
 * ```
 */
export function createFleetClient(options: FleetClientOptions): FleetClient {
  const { registry, bus, cards } = options;
  const blast = options.blast ?? new BlastRegistry();
  const baseFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const defaultSink = createHookFailureLog({ bus });
  const sink = options.hookFailures ?? defaultSink;
  const terminal =
    options.terminal ??
    new TerminalRouter(options.durable === undefined ? {} : { durable: options.durable });
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
        new FleetgateError('FLEETGATE_AGENT_UNKNOWN', `No agent named ${name} is known.`, {
          details: { agent: name },
        }),
      );
    }
    const cached = clients.get(name);
    // The card broker replaces the card object on refresh; a new object means a new client.
    if (cached !== undefined && cached.source === agent.card) return cached.promise;
    const promise = createAgentClient({ name, agent, fetch: baseFetch, wire }).then((built) => {
      if (options.fillBlastFromCards !== false) blast.declareFromCard(name, built.declarations);
      return built;
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

  async function call(
    agent: string,
    skill: string,
    input: CallInput,
    callOptions: CallOptions = {},
  ): Promise<CallResult> {
    const startedAt = Date.now();
    const t0 = performance.now();
    const built = builtClient(agent) ?? (await agentClient(agent));
    const active = activeExtensions(agent, built);
    const correlationId =
      callOptions.correlationId ?? `${correlationPrefix}-${(correlationSeq += 1).toString(36)}`;

    const timeoutMs = callOptions.timeoutMs ?? options.timeoutMs;
    const timeoutSignal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    const signals = [callOptions.signal, timeoutSignal].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const signal =
      signals.length === 0
        ? NEVER_ABORTED
        : signals.length === 1
          ? signals[0]!
          : AbortSignal.any(signals);

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
      signal === NEVER_ABORTED ? { serviceParameters } : { signal, serviceParameters };

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
      const timedOut = timeoutSignal?.aborted ?? false;
      const aborted = callOptions.signal?.aborted ?? false;
      const dropped = acc.task;
      if (
        mode === 'streaming' &&
        dropped !== undefined &&
        !timedOut &&
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
          timedOut,
          aborted,
          ...(record.status === undefined ? {} : { status: record.status }),
        });
        return failAfterHooks(failure, acc.task);
      }
    }
    wire.delete(callId);
    const t2 = performance.now();

    const task = acc.task;
    const message = task === undefined ? acc.message : undefined;
    let terminalState = false;
    let state: TaskStateName | 'message' = 'message';
    let ok = true;
    if (task !== undefined) {
      state = normalizeTaskState(task.status?.state);
      terminalState = isTerminalState(state);
      ok = state === 'completed';
      if (terminalState) {
        const done = await terminal.finish(task, chain);
        if (done.ran && done.failure !== undefined) throw done.failure;
      } else {
        terminal.track(task.id, chain);
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

  return {
    call,
    onTerminal: (task, via) => terminal.onTerminal(task, via),
    async resume(task, resumed, via) {
      const built = builtClient(resumed.agent) ?? (await agentClient(resumed.agent));
      const ctx = createSkillCallContext({
        agent: resumed.agent,
        skill: resumed.skill,
        correlationId: resumed.correlationId,
        signal: NEVER_ABORTED,
        declarations: built.declarations,
        startedAt: resumed.startedAt,
      });
      const chain = new SkillCallChain(activeExtensions(resumed.agent, built).list, ctx, sink);
      return terminal.resume(task, chain.resumeAfterBefore(), via);
    },
    pending: () => terminal.pending(),
    discard: (taskId) => terminal.discard(taskId),
    abandon: (taskId, error) => terminal.abandon(taskId, error),
    agentClient,
    forget(agent) {
      clients.delete(agent);
    },
    hookFailures: () => defaultSink.counts(),
    blast,
  };
}
