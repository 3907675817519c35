/**
 * A test gateway: a real SDK ops agent, one bus and one SQLite store shared by any number of
 * gateway "processes", each wired as the composition root will be: records, outbox relay,
 * EventCollector, the standard extensions publishing through it, a fleet client with the durable
 * terminal commit, and a task tracker.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningAgent } from '../../examples/agents/harness.js';
import { opsBehaviour, startOpsAgent } from '../../examples/agents/ops-agent.js';
import type { AgentPlan, ReceivedCall } from '../../examples/agents/harness.js';
import type { EventBus } from '../../src/bus/index.js';
import type { EventEnvelope, OpenTopics } from '../../src/protocol/index.js';
import { createInMemoryEventBus, createOutboxRelay, EventCollector } from '../../src/bus/index.js';
import type { FleetClient, FollowRequest, SettledTask } from '../../src/dispatch/index.js';
import { createFleetClient, createTaskTerminal } from '../../src/dispatch/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../../src/extensions/index.js';
import type { GatewayStore } from '../../src/service/index.js';
import { openGatewayStore } from '../../src/service/index.js';
import type { CostSample } from '../../src/extensions/index.js';
import type { TaskRecordStore, TaskTrackerOptions } from '../../src/tasks/index.js';
import { createStoreTaskRecords, TaskTracker } from '../../src/tasks/index.js';

export interface World {
  agent: RunningAgent;
  bus: EventBus<OpenTopics>;
  deltas: EventEnvelope[];
  store: GatewayStore;
  card: unknown;
  close: () => Promise<void>;
}

export async function world(
  delayMs: number,
  plan: Partial<AgentPlan> | ((call: ReceivedCall) => Partial<AgentPlan>) = {},
  agentOptions: { pushNotifications?: boolean } = {},
): Promise<World> {
  const agent = await startOpsAgent({
    ...agentOptions,
    behaviour: async (call) => ({
      ...(await opsBehaviour(call)),
      delayMs,
      ...(typeof plan === 'function' ? plan(call) : plan),
    }),
  });
  const bus = createInMemoryEventBus<OpenTopics>();
  const deltas: EventEnvelope[] = [];
  await bus.subscribe('world.state.delta', (e) => void deltas.push(e), { name: 'deltas' });
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-tracker-'));
  const store = await openGatewayStore(`sqlite:${join(dir, 'tasks.db')}`);
  return {
    agent,
    bus,
    deltas,
    store,
    card: await agent.fetchCard(),
    close: async () => {
      await bus.close();
      await store.close();
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One gateway process: a durable task terminal, a fleet client, a relay, a tracker. */
export interface Gateway {
  fleet: FleetClient;
  tracker: TaskTracker;
  stop: () => Promise<void>;
}

/** What a test gateway can be given besides the tracker's options. */
export interface GatewayOptions extends Partial<TaskTrackerOptions> {
  /** False leaves the outbox relay stopped: the process dies between claim and publish. */
  relay?: boolean;
  /** The task records (default: the store's), e.g. one whose claim fails. */
  records?: TaskRecordStore;
  /** The task terminal's `onSettled` (the dispatcher's `onTaskSettled`). */
  onSettled?: (settled: SettledTask) => Promise<void>;
  /** cost-v1's recorder. */
  recordCost?: (sample: CostSample) => void;
  /** False: nothing follows the tasks of timed-out calls (the fleet client cancels them). */
  followTimedOut?: boolean;
  /** More agents besides `ops`, by name. */
  agents?: ReadonlyMap<string, { url: string; card: unknown }>;
}

/**
 * One gateway process, wired as the composition root does: records, relay, collector, the
 * standard extensions publishing through it, the durable task terminal, the fleet client (bound
 * to the terminal, timed-out tasks followed by the tracker) and the tracker.
 */
export function gateway(w: World, options: GatewayOptions = {}): Gateway {
  const {
    relay: runRelay = true,
    records: givenRecords,
    onSettled,
    recordCost,
    agents,
    followTimedOut = true,
    ...trackerOptions
  } = options;
  const records = givenRecords ?? createStoreTaskRecords(w.store.db, { sqlite: w.store.sqlite });
  const relay = createOutboxRelay({
    db: w.store.db,
    sqlite: w.store.sqlite,
    bus: w.bus,
    pollIntervalMs: 10,
  });
  if (runRelay) relay.start();
  const collector = new EventCollector(w.bus);
  const registry = registerStandardExtensions(new ExtensionRegistry(), {
    bus: collector,
    ...(recordCost === undefined ? {} : { cost: { record: recordCost } }),
  });
  const terminal = createTaskTerminal({
    durable: { records, collector, onCommitted: () => relay.notify() },
    ...(onSettled === undefined ? {} : { onSettled }),
  });
  const fleet = createFleetClient({
    registry,
    bus: collector,
    cards: new Map([['ops', { url: w.agent.url, card: w.card }], ...(agents ?? [])]),
    terminal,
    ...(followTimedOut ? { follow: (task: FollowRequest) => tracker.follow(task) } : {}),
  });
  const tracker = new TaskTracker({ records, fleet, ...trackerOptions });
  return {
    fleet,
    tracker,
    stop: async () => {
      tracker.stop();
      await relay.stop();
    },
  };
}

/** Waits until `check()` holds, polling every 5 ms; throws after `ms`. */
export async function until(
  check: () => boolean,
  ms = 10_000,
  what = 'the condition',
): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A real HTTP server for `POST /callbacks/a2a/:taskId`, bound to a push receiver. */
export interface CallbackServer {
  /** The base URL to give the tracker as `pushBaseUrl`. */
  base: string;
  url(taskId: string): string;
  /** Binds the receiver (when the tracker is built after the server, for `pushBaseUrl`). */
  bind(receive: ReturnType<TaskTracker['pushReceiver']>): void;
  /** The HTTP status of every push answered so far. */
  statuses: number[];
  close(): Promise<void>;
}

export async function startCallbackServer(
  receive?: ReturnType<TaskTracker['pushReceiver']>,
): Promise<CallbackServer> {
  let bound = receive;
  const statuses: number[] = [];
  const server: Server = createServer((req, res) => {
    const taskId = decodeURIComponent((req.url ?? '').replace(/^\/callbacks\/a2a\//, ''));
    if (bound === undefined) {
      res.writeHead(503, { connection: 'close' }).end();
      return;
    }
    // The body goes to the receiver unread: it authenticates first and reads within its limits.
    void bound({ taskId, headers: req.headers, body: req }).then((a) => {
      statuses.push(a.status);
      res
        .writeHead(a.status, {
          'content-type': 'application/json',
          ...(a.discardBody === true ? { connection: 'close' } : {}),
        })
        .end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    url: (id) => `${base}/callbacks/a2a/${encodeURIComponent(id)}`,
    bind: (r) => (bound = r),
    statuses,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
