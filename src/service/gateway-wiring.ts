/**
 * The steps of the composition root (`gateway.ts`), in the only order that works: the ground
 * (store, bus, the card lease and the fleet side, the outbox relay), the records, the call path
 * (terminal, fleet client, tracker, gate, dispatcher) and the upkeep (retention, approvals); the
 * consumers and the start are `gateway-start.ts`. Each step takes what the ones before it built
 * and hands on what it built; only `assembleGateway` calls them.
 */
import { resolve } from 'node:path';
import type { Task } from '@a2a-js/sdk';
import type { EventBus, OutboxRelay } from '../bus/index.js';
import {
  createEventIdGenerator,
  createOutboxRelay,
  EventCollector,
  warnUnreportedError,
  writeOutboxEvent,
} from '../bus/index.js';
import type { DispatchRecordStore, FleetClient, PolicyGate } from '../dispatch/index.js';
import {
  createFleetClient,
  createStoreDispatchRecords,
  createTaskTerminal,
  DirectoryClaimJournal,
  Dispatcher,
} from '../dispatch/index.js';
import type { TaskTerminal } from '../dispatch/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../extensions/index.js';
import type { HitlGate } from '../policy/index.js';
import { createApprovalInbox, createHitlGate } from '../policy/index.js';
import type { FleetgateTopics, TopicOf } from '../protocol/index.js';
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import { parseStoreUrl } from '../store/index.js';
import type { TaskRecordStore, TaskTracker } from '../tasks/index.js';
import { createStoreTaskRecords, TaskTracker as Tracker } from '../tasks/index.js';
import { createGatewayApprovals } from './approvals.js';
import type { Lease } from './card-lease.js';
import {
  createStoreLease,
  instanceLeaseName,
  newInstanceId,
  otherInstanceRuns,
} from './card-lease.js';
import type { FleetgateConfig } from './config.js';
import type { FleetRuntime } from './fleet-runtime.js';
import { createFleetRuntime } from './fleet-runtime.js';
import { observedGate, openBus } from './gateway-parts.js';
import type { GatewayDeps, GatewayRecords } from './gateway-types.js';
import type { GatewayStore } from './migrations.js';
import { openGatewayStore } from './migrations.js';
import { policyDeclarations, policyRules } from './policy-wiring.js';
import type { RetentionSweeper } from './retention.js';
import { createRetentionSweeper } from './retention.js';
import { deploymentIdOf } from './deployment.js';
import { createProxyTaskStore } from './proxy/task-store.js';

/** What every later step stands on. */
export interface Ground {
  readonly config: FleetgateConfig;
  readonly deps: GatewayDeps;
  readonly store: GatewayStore;
  readonly bus: EventBus;
  /** Failures of background work: published on `system.error` (or `deps.onError`). */
  readonly reportError: (error: unknown, where: string) => void;
  /** The card-refresh lease replicas take turns at. */
  readonly lease: Lease;
  readonly runtime: FleetRuntime;
  readonly relay: OutboxRelay;
  /** The largest event written to the outbox. */
  readonly eventBytes: number;
}

/**
 * Writes one event into the store's outbox outside any call's transaction (its own commit) and
 * wakes the relay: durable, in order with the call's other events, and a bus outage delays it
 * without failing its writer. `id` is the event's (a cause's own id keeps a second write out).
 */
export async function publishThroughOutbox<T extends TopicOf<FleetgateTopics>>(
  ground: Pick<Ground, 'store' | 'relay' | 'deps'>,
  topic: T,
  payload: FleetgateTopics[T],
  options: { id: string; correlationId?: string | undefined },
): Promise<void> {
  const now = ground.deps.now;
  await writeOutboxEvent(ground.store.db, topic, payload, {
    id: options.id,
    ...defined({ correlationId: options.correlationId, now: now?.() }),
  });
  ground.relay.notify();
}

/**
 * Opens the store and the bus, takes the card lease, builds the fleet side and the relay. The bus
 * is checked against the store: a JetStream stream that belongs to another store's deployment is
 * refused. A step that fails first closes what the steps before it opened (the store's pool and
 * the NATS connection would each keep the process alive), then its error is thrown.
 */
export async function openGround(config: FleetgateConfig, deps: GatewayDeps): Promise<Ground> {
  // What this step opened, undone newest first when a later part of it fails.
  const opened: [string, () => Promise<unknown>][] = [];
  try {
    return await openGroundParts(config, deps, (name, close) => opened.unshift([name, close]));
  } catch (error) {
    for (const [name, close] of opened) {
      // Nothing is left to publish on: the process warning says it, the start's error is thrown.
      await close().catch((e: unknown) =>
        warnUnreportedError(e, { where: `start-abandon.${name}` }),
      );
    }
    throw error;
  }
}

async function openGroundParts(
  config: FleetgateConfig,
  deps: GatewayDeps,
  opened: (name: string, close: () => Promise<unknown>) => void,
): Promise<Ground> {
  // A lost database connection is reported once the bus exists (the store opens first).
  let reportStoreError = (error: unknown): void => void error;
  const store =
    deps.store ??
    (await openGatewayStore(config.store, {
      timeouts: {
        connectMs: config.storeTimeouts.connect,
        statementMs: config.storeTimeouts.statement,
        queryMs: config.storeTimeouts.query,
      },
      onError: (error) => reportStoreError(error),
    }));
  // Only what the wiring opened itself; a bus or store passed in belongs to the caller.
  if (deps.store === undefined) opened('store', () => store.close());
  const bus =
    deps.bus ??
    (await openBus(config.bus, {
      store: config.store,
      deployment: () => deploymentIdOf(store.db),
    }));
  if (deps.bus === undefined) opened('bus', () => bus.close());
  const reportError =
    deps.onError ??
    ((error: unknown, where: string) => {
      const code = isFleetgateError(error) ? { code: error.code } : {};
      const message = error instanceof Error ? error.message : String(error);
      bus.publish('system.error', { source: where, message, ...code }).catch((e: unknown) => {
        // The bus itself is failing: the process warning is the last place left to say it.
        warnUnreportedError(e, { where });
      });
    });

  reportStoreError = (error) =>
    reportError(
      new FleetgateError(
        'FLEETGATE_STORE_UNAVAILABLE',
        `A database connection was lost: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      ),
      'store',
    );

  // Replicas on one store take turns at the card refresh: the lease is tried before the first
  // refresh, so a lone gateway fetches its cards itself from the start.
  const lease = createStoreLease({
    db: store.db,
    name: 'card-refresh',
    ttlMs: config.replicas.leaseTtl,
    ...defined({ now: deps.now }),
    onError: (error) => reportError(error, 'card-lease'),
  });
  await lease.renew();
  lease.start();
  opened('card-lease', () => lease.stop());
  const runtime = await createFleetRuntime(config, {
    secrets: deps.secrets ?? (() => undefined),
    bus,
    store,
    lease,
    ...defined({ source: deps.cardSource }),
  });
  opened('fleet', () => runtime.close());
  // The largest event written to the outbox: the configured limit, within what the bus carries
  // (room left for the envelope and headers).
  const busMax = bus.maxPayloadBytes;
  const eventBytes = Math.min(
    config.limits.eventBytes,
    busMax === undefined ? Number.POSITIVE_INFINITY : busMax - 4096,
  );
  const relay = createOutboxRelay({
    db: store.db,
    sqlite: store.sqlite,
    bus,
    maxPayloadBytes: eventBytes,
    pollIntervalMs: (deps.relay === false ? undefined : deps.relay?.pollIntervalMs) ?? 250,
    lockRows: store.kind === 'postgres',
    onError: (error) => reportError(error, 'outbox-relay'),
  });
  return { config, deps, store, bus, reportError, lease, runtime, relay, eventBytes };
}

/** The durable records and what writes events beside them. */
export interface Records {
  readonly collector: EventCollector;
  readonly registry: ExtensionRegistry;
  readonly eventId: () => string;
  readonly taskRecords: TaskRecordStore;
  readonly dispatchRecords: DispatchRecordStore;
  readonly journal: DirectoryClaimJournal | undefined;
}

/** The extension chain, the task and dispatch records, the claim journal. */
export function wireRecords(ground: Ground): Records {
  const { config, deps, store, relay, runtime, reportError } = ground;
  const collector = new EventCollector(ground.bus);
  const registry = registerStandardExtensions(new ExtensionRegistry(), {
    bus: collector,
    declarations: runtime.broker.stamps,
    maxEventBytes: ground.eventBytes,
  });
  const eventId = createEventIdGenerator();
  const built: GatewayRecords = {
    tasks: createStoreTaskRecords(store.db, { sqlite: store.sqlite }),
    dispatches: createStoreDispatchRecords(store.db, {
      sqlite: store.sqlite,
      eventId,
      onCommitted: () => relay.notify(),
    }),
  };
  const { tasks: taskRecords, dispatches: dispatchRecords } = deps.records?.(built) ?? built;
  const journalDir =
    config.journal ?? (deps.store === undefined ? defaultJournal(config.store) : undefined);
  const journal =
    journalDir === undefined
      ? undefined
      : new DirectoryClaimJournal(journalDir, {
          onBadFile: (file, error) => reportError(error, `terminal.journal-unreadable ${file}`),
        });
  return { collector, registry, eventId, taskRecords, dispatchRecords, journal };
}

/** The claim journal's default place: beside a SQLite file, `./data/claims` with PostgreSQL. */
function defaultJournal(storeUrl: string): string | undefined {
  const location = parseStoreUrl(storeUrl);
  if (location.kind === 'postgres') return resolve('data', 'claims');
  return location.file === ':memory:' ? undefined : `${location.file}.claims`;
}

/** The path of a call: terminal, fleet client, tracker, gate and dispatcher. */
export interface CallPath {
  readonly terminal: TaskTerminal;
  readonly fleet: FleetClient;
  readonly tracker: TaskTracker;
  readonly hitl: HitlGate;
  /** The gate every dispatch and follow-up is decided by (observed for metrics). */
  readonly gate: PolicyGate;
  readonly dispatcher: Dispatcher;
  /** This process as the holder of the dispatches it sends. */
  readonly instanceId: string;
  readonly instance: Lease;
  /** Journaled task ends by context id, for recovery to find the calls they answered. */
  readonly journaled: Map<string, Task[]>;
}

/** Builds the call path; its callbacks point at parts built after them and run once started. */
export async function wireCallPath(ground: Ground, records: Records): Promise<CallPath> {
  const { config, deps, store, relay, runtime, reportError } = ground;
  const { collector, taskRecords, journal } = records;
  const terminal = createTaskTerminal({
    durable: {
      records: taskRecords,
      collector,
      onCommitted: () => relay.notify(),
      ...defined({ journal }),
    },
    onSettled: (settled) => dispatcher.onTaskSettled(settled),
    onError: (error, where) => reportError(error, `terminal.${where.where}`),
  });
  const fleet = createFleetClient({
    registry: records.registry,
    bus: collector,
    cards: runtime.broker,
    terminal,
    follow: (task) => tracker.follow(task),
    limits: {
      maxResponseBytes: config.limits.agentResponseBytes,
      responseTimeoutMs: config.limits.agentResponseTimeout,
    },
    ...defined({ fetch: deps.fetch }),
  });
  const tracker: TaskTracker = new Tracker({
    records: taskRecords,
    fleet,
    ...deps.tracking,
    push: {
      maxBodyBytes: config.limits.pushBodyBytes,
      bodyTimeoutMs: config.limits.pushBodyTimeout,
    },
    ...defined({ pushBaseUrl: deps.pushBaseUrl, now: deps.now }),
    onStateChanged: (change) => dispatcher.onTaskState(change),
    onError: (error, where) => reportError(error, `tracker.${where.where}`),
  });
  const hitl = createHitlGate({
    declarations: policyDeclarations(runtime),
    inbox: createApprovalInbox({
      db: store.db,
      // Each accepted vote's event goes into the outbox in the vote's own transaction.
      events: {
        write: async (trx, topic, payload, options) => {
          await writeOutboxEvent(trx, topic, payload, options);
        },
        onCommitted: () => relay.notify(),
      },
      ...defined({ now: deps.now }),
    }),
    rules: policyRules(config.policy),
    // Through the outbox: a bus outage delays approval events and fails no dispatch. Each is
    // correlated with its call, as the call's own events are.
    publish: (topic, payload) =>
      publishThroughOutbox(ground, topic, payload, {
        id: records.eventId(),
        correlationId: payload.correlationId,
      }),
    ...defined({ now: deps.now }),
  });
  // This process as the holder of the dispatches it sends: its instance lease says it runs, and
  // a live gateway finishes the calls of one that died (`Dispatcher.recoverOrphans`).
  const instanceId = newInstanceId();
  const instance = createStoreLease({
    db: store.db,
    name: instanceLeaseName(instanceId),
    holder: instanceId,
    ttlMs: config.replicas.leaseTtl,
    ...defined({ now: deps.now }),
    onError: (error) => reportError(error, 'instance-lease'),
  });
  await instance.renew();
  instance.start();
  const journaled = new Map<string, Task[]>();
  const gate = observedGate(deps.gate ?? hitl, deps.onGateDecision);
  const dispatcher: Dispatcher = new Dispatcher({
    fleet,
    records: records.dispatchRecords,
    tracker,
    owner: instanceId,
    gate,
    // Mid-roll-out, replicas may differ in their agents: a call let go on one that does not know
    // its agent is left to the others for a lease's time to live (a live replica renews its
    // lease within it) and at least three approval sweeps (each replica sweeps once per interval).
    replicasRunning: () => otherInstanceRuns(store.db, instanceId, (deps.now ?? Date.now)()),
    unknownAgentGraceMs: Math.max(config.replicas.leaseTtl, 3 * config.policy.sweepInterval),
    onError: reportError,
    endedTask: (contextId, messageId) =>
      journaled.get(contextId)?.find((task) => task.history.some((m) => m.messageId === messageId)),
    ...defined({ mode: deps.dispatchMode, now: deps.now }),
  });
  return { terminal, fleet, tracker, hitl, gate, dispatcher, instanceId, instance, journaled };
}

/** The gateway's upkeep: retention of old rows, the approvals door and its sweeper. */
export interface Upkeep {
  readonly retention: RetentionSweeper;
  readonly approvals: ReturnType<typeof createGatewayApprovals>;
}

export function wireUpkeep(ground: Ground, records: Records, calls: CallPath): Upkeep {
  const { config, deps, reportError } = ground;
  const retention = createRetentionSweeper({
    store: ground.store,
    tasks: records.taskRecords,
    dispatches: records.dispatchRecords,
    proxyTasks: createProxyTaskStore(ground.store.db, { sqlite: ground.store.sqlite }),
    policy: {
      outboxMs: config.retention.outbox,
      tasksMs: config.retention.tasks,
      dispatchesMs: config.retention.dispatches,
      intervalMs: config.retention.interval,
    },
    ...defined({ now: deps.now }),
    onError: (error) => reportError(error, 'retention'),
  });
  const approvals = createGatewayApprovals({
    gate: calls.hitl,
    dispatcher: calls.dispatcher,
    sweepIntervalMs: config.policy.sweepInterval,
    onError: reportError,
  });
  return { retention, approvals };
}
