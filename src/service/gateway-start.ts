/**
 * The last steps of the composition root (`gateway.ts`): the consumers of the bus (the world-state
 * materialiser and the alerts) and the start — consumers first, then the relay, the cards, the
 * tracker's recovery, the journaled claims, the calls a dead gateway left, the approvals sweeper
 * and retention.
 */
import type { JournaledClaim } from '../dispatch/index.js';
import { declarationLookupOf } from '../fleet/index.js';
import type { AlertSink, Reconciler } from '../alerts/index.js';
import {
  createActionQualityMonitor,
  createCostSummaries,
  createOutcomeUnknownAlerts,
  createRadiusWidenedAlerts,
  createReconciler,
  publishAlert,
} from '../alerts/index.js';
import { OUTBOX_WRITERS, warnUnreportedError } from '../bus/index.js';
import type { WorldMaterialiser } from '../world/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../world/index.js';
import { defined } from '../protocol/fields/index.js';
import { instanceAlive } from './card-lease.js';
import type { CallPath, Ground, Records, Upkeep } from './gateway-wiring.js';
import { publishThroughOutbox } from './gateway-wiring.js';

/** What reads the bus: the world-state materialiser and the alerts. */
export interface Consumers {
  readonly world: WorldMaterialiser;
  readonly reconciler: Reconciler;
  readonly costs: ReturnType<typeof createCostSummaries>;
  /** Starts each, in order: nothing published after is missed. */
  start(): Promise<void>;
  /** Stops each; a failure of one does not keep the others running. */
  stop(): Promise<void>;
}

/** Builds the consumers; `closing` aborts the materialiser's wait for the store at shutdown. */
export function wireConsumers(ground: Ground, closing: AbortSignal): Consumers {
  const { config, deps, bus, relay, runtime, reportError } = ground;
  const world = createWorldMaterialiser({
    store: createSqlWorldStore({
      db: ground.store.db,
      kind: ground.store.kind,
      outbox: OUTBOX_WRITERS,
      sqlite: ground.store.sqlite,
      onCommitted: () => relay.notify(),
    }),
    bus,
    retry: {
      signal: closing,
      // Once per event and outage: the first failed try says the update waits for the store.
      onRetry: (error, attempt) => {
        if (attempt === 1) reportError(error, 'world-materialiser');
      },
    },
    maxEventBytes: ground.eventBytes,
    maxDomainBytes: config.limits.domainBytes,
    ...defined({ seeds: deps.seeds, now: deps.now }),
  });
  const declarations = declarationLookupOf(runtime.broker);
  const sink = alertSink(ground);
  const reconciler: Reconciler = createReconciler({
    bus,
    declarations,
    domains: config.domains,
    learnFloors: true,
    floorWriter: runtime.floorWriter,
    sink,
  });
  const quality = createActionQualityMonitor({ bus, declarations, sink });
  const costs = createCostSummaries();
  const widened = createRadiusWidenedAlerts({ bus, sink });
  const outcomeUnknown = createOutcomeUnknownAlerts({ bus, declarations, sink });
  return {
    world,
    reconciler,
    costs,
    async start() {
      await world.start();
      await reconciler.start();
      await quality.start();
      await costs.start(bus);
      await widened.start();
      await outcomeUnknown.start();
      for (const consumer of deps.consumers ?? []) await consumer.start(bus, runtime.broker);
    },
    async stop() {
      await Promise.allSettled([
        world.stop(),
        reconciler.stop(),
        quality.stop(),
        costs.stop(),
        widened.stop(),
        outcomeUnknown.stop(),
        ...(deps.consumers ?? []).map((consumer) => consumer.stop()),
      ]);
    },
  };
}

/**
 * Where the gateway's alerts go: into the store's outbox, as every event of a call does — durable,
 * in the event log (a feed's resume, `tail --from all`, also for an alert raised while the
 * gateway started, before any feed listened) and one row per cause (the id is the cause's, so a
 * redelivery or a second replica adds none). With the store away the alert is published on the
 * bus at once instead (the outage reported), so no alert waits for the database.
 */
function alertSink(ground: Ground): AlertSink {
  const { bus, reportError } = ground;
  return async (alert, options) => {
    try {
      await publishThroughOutbox(ground, `ops.alert.${alert.kind}`, alert, options);
    } catch (error) {
      reportError(error, 'alerts.outbox');
      await publishAlert(bus, alert, options);
    }
  };
}

/** The recovery of calls a dead gateway left mid-send, now and on a timer. */
export interface OrphanRecovery {
  /** The sweep running now, if one is. */
  readonly running: Promise<void> | undefined;
  stop(): void;
}

/**
 * Starts a gateway: the consumers first (nothing the relay or the first refresh publishes is
 * missed), the relay, the cards, the tracker's recovery, the journaled claims, the orphaned calls,
 * then the approvals sweeper and retention. A start that fails is undone ({@link abandonStart})
 * before its error is thrown.
 */
export async function startGateway(
  ground: Ground,
  records: Records,
  calls: CallPath,
  upkeep: Upkeep,
  consumers: Consumers,
): Promise<OrphanRecovery> {
  let orphans: OrphanRecovery | undefined;
  try {
    await consumers.start();
    if (ground.deps.relay !== false) ground.relay.start();
    await ground.runtime.broker.start();
    await calls.tracker.recover();
    await replayJournal(ground, records, calls);
    orphans = await recoverOrphans(ground, calls);
    await upkeep.approvals.api.sweep();
    upkeep.approvals.start();
    upkeep.retention.start();
    return orphans;
  } catch (error) {
    await abandonStart(ground, { calls, upkeep, consumers, orphans });
    throw error;
  }
}

/** The parts of a start that exist when it fails: those wired after the ground, if they were. */
export interface StartedParts {
  readonly calls?: CallPath | undefined;
  readonly upkeep?: Upkeep | undefined;
  readonly consumers?: Consumers | undefined;
  readonly orphans?: OrphanRecovery | undefined;
}

/**
 * Undoes a start that failed part-way, after the ground was opened (`openGround` undoes its own
 * steps), so that the process can exit: the bus connection (which reconnects forever), the
 * store's pool and the lease timers the wiring opened would each keep it alive with nothing
 * serving. The steps are those of the gateway's `close()` (`gateway-front.ts`), in its order,
 * without the drains (the gateway never served), for the parts that were wired. A step that fails
 * is reported and the next still runs; the caller sees the start's own error.
 */
export async function abandonStart(ground: Ground, parts: StartedParts): Promise<void> {
  const { deps, runtime, relay, lease, bus, store, reportError } = ground;
  const { calls, upkeep, consumers, orphans } = parts;
  const steps: [string, () => unknown][] = [
    ['broker', () => runtime.broker.stop()],
    ['retention', () => upkeep?.retention.stop()],
    ['dispatcher', () => calls?.dispatcher.stop()],
    ['orphans', () => orphans?.stop()],
    ['approvals', () => upkeep?.approvals.stop()],
    ['instance-lease', () => calls?.instance.stop()],
    ['tracker', () => calls?.tracker.stop()],
    ['terminal', () => calls?.terminal.stop()],
    ['outbox-relay', () => relay.stop()],
    ['consumers', () => consumers?.stop()],
    ['fleet', () => runtime.close()],
    ['card-lease', () => lease.stop()],
  ];
  // Only what the wiring opened itself; a bus or store passed in belongs to the caller.
  if (deps.bus === undefined) steps.push(['bus', () => bus.close()]);
  if (deps.store === undefined) steps.push(['store', () => store.close()]);
  let busOpen = true;
  for (const [name, step] of steps) {
    try {
      await step();
    } catch (error) {
      // A closed bus cannot carry the report: the process warning says it instead.
      if (busOpen || deps.onError !== undefined) reportError(error, `start-abandon.${name}`);
      else warnUnreportedError(error, { where: `start-abandon.${name}` });
    }
    if (name === 'bus') busOpen = false;
  }
}

/**
 * Task ends a gateway stopping while the database was away kept: claimed now (their events to the
 * outbox once), before recovery looks for the calls they belong to.
 */
async function replayJournal(ground: Ground, records: Records, calls: CallPath): Promise<void> {
  const { reportError } = ground;
  for (const taken of (await records.journal?.take()) ?? []) {
    for (const claim of taken.claims) {
      const context = claim.task.contextId;
      calls.journaled.set(context, [...(calls.journaled.get(context) ?? []), claim.task]);
    }
    let remaining: readonly JournaledClaim[] = taken.claims;
    try {
      remaining = await calls.terminal.replay(taken.claims);
    } catch (error) {
      reportError(error, 'terminal.journal-replay'); // kept whole: a claim made is a no-op again
    }
    await taken.done(remaining).catch((error: unknown) => reportError(error, 'terminal.journal'));
  }
}

/** Calls a dead gateway left mid-send: now, then every third of the lease's time to live. */
async function recoverOrphans(ground: Ground, calls: CallPath): Promise<OrphanRecovery> {
  const { config, deps, store, reportError } = ground;
  const now = deps.now ?? Date.now;
  const alive = (owner: string): Promise<boolean> => instanceAlive(store.db, owner, now());
  const sweep = (): Promise<void> =>
    calls.dispatcher.recoverOrphans(alive).then(
      () => undefined,
      (error: unknown) => reportError(error, 'dispatcher.recover'),
    );
  let running: Promise<void> | undefined = sweep();
  await running;
  const timer = setInterval(
    () => {
      running ??= sweep().finally(() => (running = undefined));
    },
    Math.max(250, Math.floor(config.replicas.leaseTtl / 3)),
  );
  timer.unref();
  running = undefined;
  return {
    get running() {
      return running;
    },
    stop: () => clearInterval(timer),
  };
}
