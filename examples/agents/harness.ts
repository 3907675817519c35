/**
 * A small harness that turns an "agent behaviour" into a real `@a2a-js/sdk` server on 127.0.0.1,
 * built on the agent-author kit (`fleetgate/agent`): agent card (declarations written with the
 * kit's helpers), JSON-RPC and HTTP+JSON transports with the kit's `activateExtensions` context
 * builder, optional v0.3 compatibility, and an executor decorated with `withEffects`, so the
 * deltas and cost a plan reports go out once, on the artifact sent as the task ends. Every request
 * the executor sees is recorded (headers, requested extensions, request metadata, typed stamps) so
 * tests can assert on what actually crossed the wire.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import express from 'express';
import {
  A2A_VERSION_HEADER,
  AgentCard,
  Role,
  TaskState,
  type AgentExtension,
  type AgentSkill,
  type Message,
  type Part,
} from '@a2a-js/sdk';
import {
  AgentEvent,
  type A2ARequestHandler,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  STATE_HEADERS_KEY,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import {
  UserBuilder,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';
import {
  activateExtensions,
  readCallerStamps,
  withEffects,
  type CallerStamps,
  type EffectsAgentExecutor,
  type EffectsWarning,
  type TaskEffects,
} from '../../src/agent/index.js';
import type { CostPayload, WorldStateDeltaEntry } from '../../src/protocol/index.js';

/** Final state an example agent drives a task to. */
export type ExampleFinalState =
  'completed' | 'failed' | 'canceled' | 'rejected' | 'input-required' | 'auth-required';

/** What an example agent does for one request. */
export interface AgentPlan {
  /** Artifacts to emit, each a list of SDK parts, in order. */
  artifacts?: Part[][];
  /**
   * World-state changes to report through the kit (`effects.report`), after the artifacts: they
   * go out on the effects artifact, right before the final status.
   */
  deltas?: WorldStateDeltaEntry[];
  /** A cost-v1 sample to report through the kit (`effects.reportCost`). */
  cost?: CostPayload;
  /** The state the task ends in (default `completed`). */
  state?: ExampleFinalState;
  /** Text of the final status message. */
  statusText?: string;
  /** Delay before the final status, in milliseconds (e.g. to exercise `returnImmediately`). */
  delayMs?: number;
  /** Keeps the task working until this settles (after `delayMs`): a test decides when it ends. */
  hold?: Promise<unknown>;
  /** Throw from the executor instead of finishing the task. */
  throwError?: string;
}

/** One request as the agent received it. */
export interface ReceivedCall {
  /** Lower-cased request headers. */
  headers: Record<string, string>;
  /** Extensions the client asked for (parsed `A2A-Extensions` / `X-A2A-Extensions`). */
  requestedExtensions: string[];
  /** `SendMessageRequest.metadata` as the executor saw it. */
  metadata: Record<string, unknown>;
  /** The text of the user message. */
  text: string;
  /** The skill: the effect-domain stamp when sent, else the user message's `metadata.skill`. */
  skill: string | undefined;
  /** The caller's stamps, typed (the kit's `readCallerStamps`). */
  stamps?: CallerStamps;
  /** The protocol version the client requested (`A2A-Version`, absent means 0.3). */
  requestedVersion: string;
  taskId: string;
}

/** Decides the plan for one request. */
export type AgentBehaviour = (call: ReceivedCall) => AgentPlan | Promise<AgentPlan>;

/** One `capabilities.extensions` entry of the card. */
export interface ExampleExtensionDeclaration {
  uri: string;
  description?: string;
  required?: boolean;
  params?: Record<string, unknown>;
}

/** Options of {@link startAgent}. */
export interface StartAgentOptions {
  name: string;
  description?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Address to listen on (default `127.0.0.1`; `0.0.0.0` in a container). */
  host?: string;
  /** Base URL the card advertises (default `http://127.0.0.1:<port>`), e.g. a service name. */
  publicUrl?: string;
  skills: readonly { id: string; name?: string; description?: string }[];
  /** Raw `capabilities.extensions` entries (a test's misdeclared card); prefer `declare`. */
  extensions?: readonly ExampleExtensionDeclaration[];
  /** Writes the extension declarations with the kit's helpers (`declareBlast`, …). */
  declare?: (card: AgentCard) => AgentCard;
  behaviour: AgentBehaviour;
  /** Advertise `capabilities.streaming` (default false). */
  streaming?: boolean;
  /**
   * Serve only v0.3: the card declares v0.3 interfaces and the transports run the SDK's
   * `legacyCompat` layer.
   */
  legacy?: boolean;
  /**
   * Advertise `capabilities.pushNotifications` and send push notifications with the SDK's
   * `DefaultPushNotificationSender` to every config a client registers (default false).
   */
  pushNotifications?: boolean;
  /** When set, requests without `Authorization: Bearer <token>` are refused with 401. */
  bearerToken?: string;
  /** Most requests kept in `received`, oldest dropped first (default 1,000). */
  maxReceived?: number;
  /**
   * Wraps the SDK request handler the transports serve, e.g. to play an agent that misbehaves on
   * one method (answers `GetTask` about another task).
   */
  decorateHandler?: (handler: A2ARequestHandler) => A2ARequestHandler;
}

/** A running example agent. */
export interface RunningAgent {
  name: string;
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** The SDK card the server serves. */
  card: AgentCard;
  /** Every request the executor received, oldest first. */
  received: ReceivedCall[];
  /** What the kit warned about (undeclared domains, deltas it will not send, …), oldest first. */
  warnings: EffectsWarning[];
  /** Fetches the card over HTTP as a client would (v0.3 shape when `version` is `0.3`). */
  fetchCard(options?: { version?: '0.3' | '1.0' }): Promise<unknown>;
  close(): Promise<void>;
}

const STATE_BY_NAME: Readonly<Record<ExampleFinalState, TaskState>> = {
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
  rejected: TaskState.TASK_STATE_REJECTED,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
};

/** Builds an SDK text part. */
export function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: '',
  };
}

function agentMessage(taskId: string, contextId: string, text: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function flattenHeaders(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === null || typeof raw !== 'object') return out;
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof value === 'string') out[key.toLowerCase()] = value;
    else if (Array.isArray(value)) out[key.toLowerCase()] = value.join(', ');
  }
  return out;
}

function userText(message: Message | undefined): string {
  if (message === undefined) return '';
  return message.parts
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter((t) => t !== '')
    .join('\n');
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

class PlanExecutor implements EffectsAgentExecutor {
  readonly #behaviour: AgentBehaviour;
  readonly #received: ReceivedCall[];
  readonly #maxReceived: number;

  constructor(behaviour: AgentBehaviour, received: ReceivedCall[], maxReceived: number) {
    this.#behaviour = behaviour;
    this.#received = received;
    this.#maxReceived = maxReceived;
  }

  async execute(
    requestContext: RequestContext,
    bus: ExecutionEventBus,
    effects: TaskEffects,
  ): Promise<void> {
    const { taskId, contextId, context, request } = requestContext;
    const metadata: Record<string, unknown> = { ...(request.metadata ?? {}) };
    const stamps = readCallerStamps(metadata);
    const messageSkill: unknown = request.message?.metadata?.['skill'];
    const call: ReceivedCall = {
      headers: flattenHeaders(context.state.get(STATE_HEADERS_KEY)),
      requestedExtensions: [...(context.requestedExtensions ?? [])],
      metadata,
      text: userText(request.message),
      skill: stamps.skill ?? (typeof messageSkill === 'string' ? messageSkill : undefined),
      stamps,
      requestedVersion: context.requestedVersion,
      taskId,
    };
    this.#received.push(call);
    if (this.#received.length > this.#maxReceived) this.#received.shift();
    const plan = await this.#behaviour(call);
    if (plan.throwError !== undefined) throw new Error(plan.throwError);

    const status = (state: TaskState, text?: string) => ({
      state,
      message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
      timestamp: new Date().toISOString(),
    });
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: status(TaskState.TASK_STATE_SUBMITTED),
        artifacts: [],
        history: request.message === undefined ? [] : [request.message],
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: status(TaskState.TASK_STATE_WORKING),
        metadata: undefined,
      }),
    );
    if (plan.delayMs !== undefined) await sleep(plan.delayMs);
    if (plan.hold !== undefined) await plan.hold;
    for (const [index, parts] of (plan.artifacts ?? []).entries()) {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: `artifact-${index}`,
            name: `result-${index}`,
            description: '',
            parts,
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
    }
    if (plan.deltas !== undefined) effects.report(plan.deltas);
    if (plan.cost !== undefined) effects.reportCost(plan.cost);
    // The kit publishes the effects artifact right before this status, when the state ends the task.
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: status(STATE_BY_NAME[plan.state ?? 'completed'], plan.statusText ?? 'done'),
        metadata: undefined,
      }),
    );
    bus.finished();
  }
}

/**
 * Starts an example agent on 127.0.0.1.
 *
 * @example
 * ```ts
 * const agent = await startAgent({ name: 'echo', skills: [{ id: 'echo' }], behaviour: () => ({}) });
 * // ... agent.url, agent.received
 * await agent.close();
 * ```
 */
export async function startAgent(options: StartAgentOptions): Promise<RunningAgent> {
  const app = express();
  const server: Server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const advertised = options.publicUrl?.replace(/\/+$/u, '') ?? url;
  const version = options.legacy === true ? '0.3' : '1.0';
  const extensions: AgentExtension[] = (options.extensions ?? []).map((e) => ({
    uri: e.uri,
    description: e.description ?? '',
    required: e.required ?? false,
    params: e.params,
  }));
  const skills: AgentSkill[] = options.skills.map((s) =>
    skillFromJson({ id: s.id, name: s.name ?? s.id, description: s.description ?? s.id }),
  );
  const card: AgentCard = AgentCard.fromJSON({
    name: options.name,
    description: options.description ?? `Example agent ${options.name}`,
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${advertised}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: version },
      { url: `${advertised}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: version },
    ],
    capabilities: {
      streaming: options.streaming ?? false,
      pushNotifications: options.pushNotifications ?? false,
    },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
  });
  card.capabilities = {
    streaming: options.streaming ?? false,
    pushNotifications: options.pushNotifications ?? false,
    extensions,
  };
  card.skills = skills;
  const served = options.declare?.(card) ?? card;

  const received: ReceivedCall[] = [];
  const warnings: EffectsWarning[] = [];
  const pushStore =
    options.pushNotifications === true ? new InMemoryPushNotificationStore() : undefined;
  const executor = withEffects(
    new PlanExecutor(options.behaviour, received, options.maxReceived ?? 1_000),
    { card: served, onWarning: (warning) => void warnings.push(warning) },
  );
  const sdkHandler = new DefaultRequestHandler(
    served,
    new InMemoryTaskStore(),
    executor,
    undefined,
    pushStore,
    pushStore === undefined ? undefined : new DefaultPushNotificationSender(pushStore),
  );
  // The kit activates the declared extensions in the context builder, before the executor runs:
  // the only place that keeps the echoed `A2A-Extensions` header on JSON-RPC streams (a2a-js#710).
  const contextBuilder = activateExtensions(served);
  const legacyCompat = { enabled: options.legacy === true };
  const requestHandler = options.decorateHandler?.(sdkHandler) ?? sdkHandler;

  if (options.bearerToken !== undefined) {
    const expected = `Bearer ${options.bearerToken}`;
    app.use('/a2a', (req, res, next) => {
      if (req.headers.authorization !== expected) {
        res.status(401).json({ error: 'unauthorized' });
        return;
      }
      next();
    });
  }
  app.use(
    '/.well-known/agent-card.json',
    agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }),
  );
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({
      requestHandler,
      userBuilder: UserBuilder.noAuthentication,
      contextBuilder,
      legacyCompat,
    }),
  );
  app.use(
    '/a2a/rest',
    restHandler({
      requestHandler,
      userBuilder: UserBuilder.noAuthentication,
      contextBuilder,
      legacyCompat,
    }),
  );

  return {
    name: options.name,
    url,
    card: served,
    received,
    warnings,
    async fetchCard(fetchOptions = {}) {
      const headers: Record<string, string> = {};
      if ((fetchOptions.version ?? version) === '1.0') headers[A2A_VERSION_HEADER] = '1.0';
      const response = await fetch(`${url}/.well-known/agent-card.json`, { headers });
      if (!response.ok) throw new Error(`card fetch failed: ${response.status}`);
      return (await response.json()) as unknown;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function skillFromJson(json: { id: string; name: string; description: string }): AgentSkill {
  const [skill] = AgentCard.fromJSON({ skills: [{ ...json, tags: [] }] }).skills;
  if (skill === undefined) throw new Error('unreachable: skill did not parse');
  return skill;
}
