import { TaskState, type Task } from '@a2a-js/sdk';

import { FleetgateError } from '../protocol/index.js';
import { newRecordId } from '../protocol/ids/index.js';
import {
  createHookFailureLog,
  type ExtensionEventBus,
  type ExtensionRegistry,
  type HookFailureSink,
} from '../extensions/index.js';
import { isTerminalState, normalizeTaskState } from '../protocol/index.js';
import { AgentClientCache } from './agent-client-cache.js';
import type { AgentClient, FleetAgentSource } from './agent-clients.js';
import { CallExchange } from './call-exchange.js';
import type { CallInput, CallOptions, CallResult, FollowRequest } from './call-types.js';
import type { AgentFetchLimits } from './agent-fetch.js';
import { createTaskTerminal, type TaskTerminal } from './terminal.js';

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
  const { bus } = options;
  const defaultSink = createHookFailureLog({ bus });
  const sink = options.hookFailures ?? defaultSink;
  const terminal = options.terminal ?? createTaskTerminal();
  const clients = new AgentClientCache(options);
  const exchange = new CallExchange(clients, terminal, sink);
  const parts: FleetParts = { options, bus, sink, terminal, clients, exchange };

  // The terminal rebuilds a held call's chain from the four fields it kept, at settle time.
  terminal.bindChains((held) => exchange.chainFor(held));

  // Arrow functions, not methods: callers destructure the client and pass its functions around.
  return {
    call: (agent, skill, input, callOptions = {}) => {
      const timeoutMs = callOptions.timeoutMs ?? options.timeoutMs;
      return timeoutMs === undefined
        ? exchange.run(agent, skill, input, callOptions, undefined)
        : callWithTimeout(parts, agent, skill, input, callOptions, timeoutMs);
    },
    terminal,
    agentClient: (agent) => clients.agentClient(agent),
    forget: (agent) => clients.forget(agent),
    hookFailures: () => defaultSink.counts(),
  };
}

/** The parts of one fleet client that a timed-out call reaches; built once, with the client. */
interface FleetParts {
  options: FleetClientOptions;
  bus: ExtensionEventBus;
  sink: HookFailureSink;
  terminal: TaskTerminal;
  clients: AgentClientCache;
  exchange: CallExchange;
}

/**
 * A call with a timeout: the timeout detaches the caller, never the request. The caller gets
 * `FLEETGATE_CALL_TIMEOUT` when the time is up; the request goes on and its end is settled like
 * any reply (a terminal task: the `after` hooks run once and its events are published; a task
 * still running: followed, or canceled at the agent when nothing follows). Aborting the request
 * instead would leave a task running at the agent whose deltas nobody ever publishes.
 */
function callWithTimeout(
  parts: FleetParts,
  agent: string,
  skill: string,
  input: CallInput,
  callOptions: CallOptions,
  timeoutMs: number,
): Promise<CallResult> {
  const timeout = new AbortController();
  const correlationId = callOptions.correlationId ?? newRecordId();
  const work = parts.exchange.run(
    agent,
    skill,
    input,
    { ...callOptions, correlationId },
    timeout.signal,
  );
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
        else {
          void afterDetached(parts, result).catch((error: unknown) =>
            reportDetached(parts, error, result),
          );
        }
      },
      (error: Error) => {
        clearTimeout(timer);
        if (!detached) reject(error);
        else void reportDetached(parts, error, { agent, skill, correlationId });
      },
    );
  });
}

/** The end of a timed-out call's request: a task still running is followed or canceled. */
async function afterDetached(parts: FleetParts, result: CallResult): Promise<void> {
  const task = result.task;
  if (result.terminal || task === undefined) return; // settled in the exchange
  const { agent, skill, correlationId } = result;
  const state = normalizeTaskState(task.status?.state);
  const follow = parts.options.follow;
  if (follow !== undefined) {
    await follow({
      agent,
      skill,
      correlationId,
      taskId: task.id,
      state,
      ...(result.streamDropped === true ? { resubscribe: true, task } : {}),
    });
    return;
  }
  const { client } = await parts.clients.agentClient(agent);
  let canceled: Task = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  if (!isTerminalState(normalizeTaskState(canceled.status?.state))) {
    canceled = {
      ...canceled,
      status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined },
    };
  }
  await parts.terminal.settle(agent, canceled, 'timeout');
  await reportDetached(
    parts,
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
  parts: FleetParts,
  error: unknown,
  call: { agent: string; skill: string; correlationId: string; task?: Task | undefined },
): Promise<void> {
  try {
    await parts.bus.publish(
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
    await parts.sink.report({
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
