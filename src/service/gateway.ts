/**
 * `createGateway(config, deps?)`: the one composition root. Every part of a gateway is built here,
 * once, in the only order that works; tests, benchmarks, the CLI and the service go through it.
 *
 * Wiring order (each step needs the ones above it):
 * 1. store (migrated) and bus — injected through `deps` or opened from the config;
 * 2. the fleet side: directory, learned floors, card broker (the only writer of the registries);
 * 3. the outbox relay and the event collector: after hooks publish into the collector, the
 *    terminal claim writes what they collected to the outbox in its own transaction;
 * 4. the extension chain, the fleet client (cards and declarations from the broker), the task
 *    tracker, the HITL gate (decisions from the broker's effective declarations, approvals in the
 *    store) and the dispatcher;
 * 5. the world-state materialiser and the alerts, subscribed to the bus;
 * 6. start: cached cards, first refresh, recovery of tasks left in flight, then the approvals
 *    sweeper (held dispatches decided elsewhere or while the gateway was down move on).
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import type { Task } from '@a2a-js/sdk';
import type { TaskRecordStore, TaskTracker, TaskTrackerOptions } from '../tasks/index.js';
import type { EventBus, OutboxRelay, Subscription } from '../bus/index.js';
import { ENDED_STATUSES } from '../calls/index.js';
import {
  createEventIdGenerator,
  createOutboxRelay,
  EventCollector,
  InMemoryEventBus,
  createOutboxLog,
  warnUnreportedError,
  writeOutboxEvent,
} from '../bus/index.js';
import type {
  DispatchRecord,
  DispatchRecordStore,
  FleetClient,
  GateVerdict,
  JournaledClaim,
  GateCall,
  PolicyGate,
} from '../dispatch/index.js';
import {
  CallHandle,
  createDispatchWatcher,
  createFleetClient,
  createStoreDispatchRecords,
  createTaskTerminal,
  DirectoryClaimJournal,
  Dispatcher,
} from '../dispatch/index.js';
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import { parseStoreUrl } from '../store/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../extensions/index.js';
import type { CardSource, SecretResolver } from '../fleet/index.js';
import { declarationLookupOf } from '../fleet/index.js';
import type { Reconciler } from '../alerts/index.js';
import {
  createActionQualityMonitor,
  createCostSummaries,
  createOutcomeUnknownAlerts,
  createRadiusWidenedAlerts,
  createReconciler,
} from '../alerts/index.js';
import { createStoreTaskRecords, TaskTracker as Tracker } from '../tasks/index.js';
import { createApprovalInbox, createHitlGate } from '../policy/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../world/index.js';
import { createGatewayApprovals } from './approvals.js';
import type { FleetgateConfig, FleetgateConfigInput } from './config.js';
import { parseConfig } from './config.js';
import { policyDeclarations, policyRules } from './policy-wiring.js';
import { createFleetRuntime } from './fleet-runtime.js';
import { checkCallTarget } from './fleet-view.js';
import { createStoreLease, instanceAlive, instanceLeaseName, newInstanceId } from './card-lease.js';
import type { GatewayStore } from './migrations.js';
import type { RetentionSweeper } from './retention.js';
import { createRetentionSweeper } from './retention.js';
import { observedGate, openBus, openConfiguredStore } from './gateway-parts.js';
import type { Gateway, GatewayPorts } from './gateway-types.js';

export type { FollowUpRequest, Gateway, GatewayPorts } from './gateway-types.js';

/** The durable records a gateway keeps on its store: tasks (the terminal claim) and dispatches. */
export interface GatewayRecords {
  tasks: TaskRecordStore;
  dispatches: DispatchRecordStore;
}

/** What tests and embedders may inject instead of what the config names. */
export interface GatewayDeps {
  /** An open store; the gateway migrates nothing else and does not close it. */
  store?: GatewayStore;
  /** A bus; the gateway does not close it. */
  bus?: EventBus;
  /** Where cards come from (default: HTTP). */
  cardSource?: CardSource;
  /** Resolves the environment variables named by `auth` in the agents (default: none). */
  secrets?: SecretResolver;
  /** The policy gate of every dispatch (default: the HITL gate built from `config.policy`). */
  gate?: PolicyGate;
  /** The gateway's public base URL, for push notifications from agents. */
  pushBaseUrl?: string;
  /** `fetch` used for agent calls (default: `node:http`, see `createFleetClient`'s `fetch`). */
  fetch?: typeof fetch;
  /** Initial world-state values by domain. */
  seeds?: Readonly<Record<string, unknown>>;
  /** Clock in epoch milliseconds. */
  now?: () => number;
  /**
   * How dispatches are sent (default `blocking`); with `return-immediately` every task that did
   * not end in the reply is followed by the tracker from the start.
   */
  dispatchMode?: 'blocking' | 'streaming' | 'return-immediately';
  /** Poll timing and limits of the task tracker. */
  tracking?: Pick<TaskTrackerOptions, 'polling' | 'maxTrackingTimeMs'>;
  /**
   * The outbox relay: its idle poll interval (default 250 ms), or `false` to leave it stopped —
   * committed events then stay in the outbox until a gateway with a relay runs (crash tests).
   */
  relay?: false | { pollIntervalMs?: number };
  /**
   * Wraps the task and dispatch records the gateway built on its store, before anything uses
   * them: a fault-injection seam (a claim or an update failing as a lost database connection
   * would), so such suites still run the whole gateway. Default: the records as built.
   */
  records?: (built: GatewayRecords) => GatewayRecords;
  /** Receives failures of background work (default: published on `system.error`). */
  onError?: (error: unknown, where: string) => void;
  /** Told every decision of the policy gate (metrics). */
  onGateDecision?: (request: GateCall, decision: GateVerdict) => void;
}

/**
 * The parts a gateway is made of, for white-box suites and benchmarks that drive one directly (a
 * tracker fed a task, a retention sweep run now). Product code reads {@link GatewayPorts} only.
 */
export interface GatewayParts extends GatewayPorts {
  readonly bus: EventBus;
  readonly fleet: FleetClient;
  readonly tracker: TaskTracker;
  readonly relay: OutboxRelay;
  readonly retention: RetentionSweeper;
}

/** A gateway with what its composition root hands to the service layer. */
export interface AssembledGateway {
  readonly gateway: Gateway;
  readonly parts: GatewayParts;
}

/**
 * Builds and starts a gateway.
 *
 * @example
 * ```ts
 * const gw = await createGateway({ agents: [{ name: 'ci', url: 'http://127.0.0.1:9101' }] });
 * const record = await gw.dispatch({ agent: 'ci', skill: 'rerun_checks', text: 'PR 42' }).result();
 * console.log(record.status, await gw.world.getDomain('ci'));
 * await gw.close();
 * ```
 */
export async function createGateway(
  input: FleetgateConfigInput | FleetgateConfig = {},
  deps: GatewayDeps = {},
): Promise<Gateway> {
  return (await assembleGateway(input, deps)).gateway;
}

/**
 * {@link createGateway} for the service layer (and white-box suites): the gateway with its
 * {@link GatewayParts}. Not part of the package's API.
 */
export async function assembleGateway(
  input: FleetgateConfigInput | FleetgateConfig = {},
  deps: GatewayDeps = {},
): Promise<AssembledGateway> {
  const config = parseConfig(input);
  // A lost database connection is reported once the bus exists (the store opens first).
  let reportStoreError = (error: unknown): void => void error;
  const store =
    deps.store ??
    (await openConfiguredStore(config.store, {
      timeouts: {
        connectMs: config.storeTimeouts.connect,
        statementMs: config.storeTimeouts.statement,
        queryMs: config.storeTimeouts.query,
      },
      onError: (error) => reportStoreError(error),
    }));
  const bus = deps.bus ?? (await openBus(config.bus));
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
    ...(deps.now === undefined ? {} : { now: deps.now }),
    onError: (error) => reportError(error, 'card-lease'),
  });
  await lease.renew();
  lease.start();
  const runtime = await createFleetRuntime(config, {
    secrets: deps.secrets ?? (() => undefined),
    bus,
    store,
    lease,
    ...(deps.cardSource === undefined ? {} : { source: deps.cardSource }),
  });
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
  const collector = new EventCollector(bus);
  const registry = registerStandardExtensions(new ExtensionRegistry(), {
    bus: collector,
    declarations: runtime.broker.stamps,
    maxEventBytes: eventBytes,
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
  // The callbacks below point at the tracker and dispatcher built after them; they run only once
  // the gateway has started.
  const journalDir =
    config.journal ?? (deps.store === undefined ? defaultJournal(config.store) : undefined);
  const journal =
    journalDir === undefined
      ? undefined
      : new DirectoryClaimJournal(journalDir, {
          onBadFile: (file, error) => reportError(error, `terminal.journal-unreadable ${file}`),
        });
  const terminal = createTaskTerminal({
    durable: {
      records: taskRecords,
      collector,
      onCommitted: () => relay.notify(),
      ...(journal === undefined ? {} : { journal }),
    },
    onSettled: (settled) => dispatcher.onTaskSettled(settled),
    onError: (error, where) => reportError(error, `terminal.${where.where}`),
  });
  const fleet = createFleetClient({
    registry,
    bus: collector,
    cards: runtime.broker,
    terminal,
    follow: (task) => tracker.follow(task),
    limits: {
      maxResponseBytes: config.limits.agentResponseBytes,
      responseTimeoutMs: config.limits.agentResponseTimeout,
    },
    ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
  });
  const tracker: TaskTracker = new Tracker({
    records: taskRecords,
    fleet,
    ...deps.tracking,
    push: {
      maxBodyBytes: config.limits.pushBodyBytes,
      bodyTimeoutMs: config.limits.pushBodyTimeout,
    },
    ...(deps.pushBaseUrl === undefined ? {} : { pushBaseUrl: deps.pushBaseUrl }),
    ...(deps.now === undefined ? {} : { now: deps.now }),
    onStateChanged: (change) => dispatcher.onTaskState(change),
    onError: (error, where) => reportError(error, `tracker.${where.where}`),
  });
  const hitl = createHitlGate({
    declarations: policyDeclarations(runtime),
    inbox: createApprovalInbox({
      db: store.db,
      ...(deps.now === undefined ? {} : { now: deps.now }),
    }),
    rules: policyRules(config.policy),
    // Through the outbox: a bus outage delays approval events and fails no dispatch. Each is
    // correlated with its call, as the call's own events are.
    publish: async (topic, payload) => {
      await writeOutboxEvent(store.db, topic, payload, {
        id: eventId(),
        ...(payload.correlationId === undefined ? {} : { correlationId: payload.correlationId }),
        ...(deps.now === undefined ? {} : { now: deps.now() }),
      });
      relay.notify();
    },
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
  // This process as the holder of the dispatches it sends: its instance lease says it runs, and
  // a live gateway finishes the calls of one that died (`Dispatcher.recoverOrphans`).
  const instanceId = newInstanceId();
  const instance = createStoreLease({
    db: store.db,
    name: instanceLeaseName(instanceId),
    holder: instanceId,
    ttlMs: config.replicas.leaseTtl,
    ...(deps.now === undefined ? {} : { now: deps.now }),
    onError: (error) => reportError(error, 'instance-lease'),
  });
  await instance.renew();
  instance.start();
  /** Journaled task ends by context id, for recovery to find the calls they answered. */
  const journaled = new Map<string, Task[]>();
  const gate = observedGate(deps.gate ?? hitl, deps.onGateDecision);
  const dispatcher: Dispatcher = new Dispatcher({
    fleet,
    records: dispatchRecords,
    tracker,
    owner: instanceId,
    gate,
    onError: reportError,
    endedTask: (contextId, messageId) =>
      journaled.get(contextId)?.find((task) => task.history.some((m) => m.messageId === messageId)),
    ...(deps.dispatchMode === undefined ? {} : { mode: deps.dispatchMode }),
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
  const retention = createRetentionSweeper({
    store,
    tasks: taskRecords,
    dispatches: dispatchRecords,
    policy: {
      outboxMs: config.retention.outbox,
      tasksMs: config.retention.tasks,
      dispatchesMs: config.retention.dispatches,
      intervalMs: config.retention.interval,
    },
    ...(deps.now === undefined ? {} : { now: deps.now }),
    onError: (error) => reportError(error, 'retention'),
  });
  const approvals = createGatewayApprovals({
    gate: hitl,
    dispatcher,
    sweepIntervalMs: config.policy.sweepInterval,
    onError: reportError,
  });

  // Aborted when close() starts: work waiting for the database to come back stops waiting.
  const closingSignal = new AbortController();
  const world = createWorldMaterialiser({
    store: createSqlWorldStore({
      db: store.db,
      kind: store.kind,
      sqlite: store.sqlite,
      onCommitted: () => relay.notify(),
    }),
    bus,
    retry: {
      signal: closingSignal.signal,
      // Once per event and outage: the first failed try says the update waits for the store.
      onRetry: (error, attempt) => {
        if (attempt === 1) reportError(error, 'world-materialiser');
      },
    },
    maxEventBytes: eventBytes,
    maxDomainBytes: config.limits.domainBytes,
    ...(deps.seeds === undefined ? {} : { seeds: deps.seeds }),
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
  const declarations = declarationLookupOf(runtime.broker);
  const reconciler: Reconciler = createReconciler({
    bus,
    declarations,
    domains: config.domains,
    learnFloors: true,
    floorWriter: runtime.floorWriter,
  });
  const quality = createActionQualityMonitor({ bus, declarations });
  const costs = createCostSummaries();
  const widened = createRadiusWidenedAlerts({ bus });
  const outcomeUnknown = createOutcomeUnknownAlerts({ bus, declarations });

  // Consumers first, so nothing the relay or the first refresh publishes is missed.
  await world.start();
  await reconciler.start();
  await quality.start();
  await costs.start(bus);
  await widened.start();
  await outcomeUnknown.start();
  if (deps.relay !== false) relay.start();
  await runtime.broker.start();
  await tracker.recover();
  // Task ends a gateway stopping while the database was away kept: claimed now (their events to
  // the outbox once), before recovery looks for the calls they belong to.
  for (const taken of (await journal?.take()) ?? []) {
    for (const claim of taken.claims) {
      const context = claim.task.contextId;
      journaled.set(context, [...(journaled.get(context) ?? []), claim.task]);
    }
    let remaining: readonly JournaledClaim[] = taken.claims;
    try {
      remaining = await terminal.replay(taken.claims);
    } catch (error) {
      reportError(error, 'terminal.journal-replay'); // kept whole: a claim made is a no-op again
    }
    await taken.done(remaining).catch((error: unknown) => reportError(error, 'terminal.journal'));
  }
  // Calls a dead gateway left mid-send: now, then every third of the lease's time to live.
  const now = deps.now ?? Date.now;
  const alive = (owner: string): Promise<boolean> => instanceAlive(store.db, owner, now());
  const recoverOrphans = (): Promise<void> =>
    dispatcher.recoverOrphans(alive).then(
      () => undefined,
      (error: unknown) => reportError(error, 'dispatcher.recover'),
    );
  let recovering: Promise<void> | undefined = recoverOrphans();
  await recovering;
  const orphanSweep = setInterval(
    () => {
      recovering ??= recoverOrphans().finally(() => (recovering = undefined));
    },
    Math.max(250, Math.floor(config.replicas.leaseTtl / 3)),
  );
  orphanSweep.unref();
  recovering = undefined;
  await approvals.api.sweep();
  approvals.start();
  retention.start();

  const inFlight = new Set<Promise<unknown>>();
  let closing: Promise<void> | undefined;
  const accept = <T>(work: () => Promise<T>): Promise<T> => {
    if (closing !== undefined) {
      return Promise.reject(
        new FleetgateError('FLEETGATE_GATEWAY_CLOSED', 'The gateway is shutting down.'),
      );
    }
    const promise = work();
    inFlight.add(promise);
    const forget = (): void => void inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  };

  // Dispatch handles wait on their dispatch's own events, heard once the first handle waits.
  const watcher = createDispatchWatcher(
    (id) => dispatchRecords.get(id),
    (listener) => {
      let subscription: Subscription | undefined;
      let stopped = false;
      const ready = Promise.resolve()
        .then(() =>
          bus.subscribe(
            'skill.dispatch.>',
            (event) => {
              const id = (event.payload as { id?: unknown } | null)?.id;
              if (typeof id === 'string') listener(id);
            },
            // Never waits; a dropped event only delays a wait to its next safety read.
            {
              name: `dispatch_handles_${instanceId.replace(/[^\w-]/gu, '_')}`.slice(0, 64),
              overflow: 'drop-oldest',
            },
          ),
        )
        .then(
          (taken) => {
            subscription = taken;
            if (stopped) void taken.unsubscribe();
          },
          (error: unknown) => reportError(error, 'dispatch-handles'),
        );
      return {
        ready,
        stop() {
          stopped = true;
          void subscription?.unsubscribe();
        },
      };
    },
  );
  const handleServices = {
    watcher,
    read: (id: string) => dispatchRecords.get(id),
    closing: closingSignal.signal,
    cancel: (record: DispatchRecord, decision: GateVerdict | undefined, reason?: string) =>
      accept(() => cancelDispatch(record, decision, reason)),
  };

  /** Cancels a dispatch (see `DispatchHandle.cancel`). */
  async function cancelDispatch(
    record: DispatchRecord,
    decision: GateVerdict | undefined,
    reason: string | undefined,
  ): Promise<DispatchRecord> {
    const why = reason ?? 'canceled by its caller';
    if (record.status === 'awaiting-approval') {
      const approvalId = decision?.action === 'hold' ? decision.approvalId : undefined;
      if (approvalId !== undefined) {
        await approvals.api.reject(approvalId, 'caller', why);
        return (await dispatchRecords.get(record.id)) ?? record;
      }
    }
    if (record.status === 'running' || record.status === 'awaiting-input') {
      if (record.taskId === null) {
        throw new FleetgateError(
          'FLEETGATE_DISPATCH_NOT_CANCELABLE',
          `Dispatch ${record.id} is being sent to ${record.agent}; its task is not known yet. Retry shortly.`,
          { details: { id: record.id, status: record.status } },
        );
      }
      const { client } = await fleet.agentClient(record.agent);
      const task = await client.cancelTask({ tenant: '', id: record.taskId, metadata: undefined });
      // The agent's answer is a sighting of the task: an end settles the dispatch at once (once,
      // whichever path sees it first); a task still winding down is polled now.
      if (!(await tracker.observe(record.agent, task, 'cancel'))) {
        tracker.pollNow(record.agent, record.taskId);
      }
      return (
        (await watcher.until(record.id, (r) => ENDED_STATUSES.has(r.status), {
          timeoutMs: 10_000,
        })) ?? record
      );
    }
    if (record.status === 'awaiting-approval') {
      throw new FleetgateError(
        'FLEETGATE_DISPATCH_NOT_CANCELABLE',
        `Dispatch ${record.id} waits on an approval this handle did not see; reject it in the inbox.`,
        { details: { id: record.id, status: record.status } },
      );
    }
    return record;
  }

  const settle = async (): Promise<void> => {
    // Delivering an event can commit more (the materialiser's `world.state.updated` rows): relay
    // and deliver until a round finds nothing left to send.
    for (let round = 0; round < 16; round += 1) {
      const sent = await relay.drain();
      if (bus instanceof InMemoryEventBus) await bus.idle();
      if (sent === 0 && round > 0) return;
    }
  };

  const gateway: Gateway = {
    config,
    dispatch(request) {
      const id = request.id ?? randomUUID();
      const handle = new CallHandle(id, handleServices);
      handle.begin(
        accept(async () => {
          checkCallTarget(runtime.broker, request.agent, request.skill);
          return dispatcher.dispatch({ ...request, id }, handle);
        }),
      );
      return handle;
    },
    dispatchRecord: (id) => dispatchRecords.get(id),
    dispatches: (query) => dispatchRecords.list(query),
    decideFollowUp: (request) =>
      accept(async () => {
        const record = await dispatchRecords.get(request.dispatchId);
        if (record === undefined) {
          throw new FleetgateError(
            'FLEETGATE_DISPATCH_NOT_FOUND',
            `No dispatch ${request.dispatchId} to follow up.`,
            { details: { id: request.dispatchId } },
          );
        }
        if (record.status !== 'running' || record.taskId !== request.taskId) {
          throw new FleetgateError(
            'FLEETGATE_USAGE',
            `Dispatch ${record.id} is ${record.status}${record.taskId === null ? '' : ` on task ${record.taskId}`}: a follow-up goes to the running task it is on.`,
            { details: { id: record.id, status: record.status, taskId: request.taskId } },
          );
        }
        return gate.decide({
          dispatchId: record.id,
          agent: record.agent,
          skill: record.skill,
          correlationId: record.correlationId,
          input: request.input,
          ...(request.requestedBy === undefined ? {} : { requestedBy: request.requestedBy }),
          followUp: {
            taskId: request.taskId,
            ...(request.contextId === undefined ? {} : { contextId: request.contextId }),
          },
        });
      }),
    call: (agent, skill, callInput, options) =>
      accept(() => fleet.call(agent, skill, callInput, options)),
    agents: runtime.broker,
    approvals: {
      ...approvals.api,
      approve: (id, by, reason) => accept(() => approvals.api.approve(id, by, reason)),
      reject: (id, by, reason) => accept(() => approvals.api.reject(id, by, reason)),
      answer: (id, by, text, reason) => accept(() => approvals.api.answer(id, by, text, reason)),
      sweep: () => accept(() => approvals.api.sweep()),
    },
    world,
    events: bus,
    eventLog: createOutboxLog(store.db),
    costs,
    pushReceiver: tracker.pushReceiver(),
    settle,
    close() {
      closing ??= (async () => {
        closingSignal.abort();
        watcher.close();
        runtime.broker.stop();
        await retention.stop();
        dispatcher.stop();
        clearInterval(orphanSweep);
        await recovering;
        await approvals.stop();
        await Promise.allSettled([...inFlight]);
        // Nothing of this process is in flight now: its instance lease goes.
        await instance.stop();
        tracker.stop();
        // Claims waiting for the store get one last try; tasks with a record recover next start.
        await terminal.stop();
        if (deps.relay !== false) {
          await relay.drain().catch((error: unknown) => reportError(error, 'outbox-relay'));
        }
        await relay.stop();
        if (bus instanceof InMemoryEventBus) await bus.idle();
        await Promise.allSettled([
          world.stop(),
          reconciler.stop(),
          quality.stop(),
          costs.stop(),
          widened.stop(),
          outcomeUnknown.stop(),
        ]);
        await runtime.close();
        await lease.stop();
        if (deps.bus === undefined) await bus.close();
        if (deps.store === undefined) await store.close();
      })();
      return closing;
    },
  };
  return {
    gateway,
    parts: {
      store,
      agentClient: (agent) => fleet.agentClient(agent),
      leaseHeld: () => lease.held(),
      trackedTasks: () => tracker.size,
      bus,
      fleet,
      tracker,
      relay,
      retention,
    },
  };
}

/** The claim journal's default place: beside a SQLite file, `./data/claims` with PostgreSQL. */
function defaultJournal(storeUrl: string): string | undefined {
  const location = parseStoreUrl(storeUrl);
  if (location.kind === 'postgres') return resolve('data', 'claims');
  return location.file === ':memory:' ? undefined : `${location.file}.claims`;
}
