/**
 * A test fleet: a real SDK ops agent, one bus and one SQLite store shared by any number of
 * gateway "processes", each one `createGateway(config, deps)` — the composition root that ships —
 * lent the shared store and bus (which it never closes). Stopping one is its `close()`; a process
 * that dies before relaying what it committed is one started with `relay: false`.
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
import { createInMemoryEventBus } from '../../src/bus/index.js';
import type { FleetClient, PolicyGate } from '../../src/dispatch/index.js';
import { ALLOW_ALL } from '../../src/dispatch/index.js';
import type { Gateway, GatewayDeps, GatewayStore } from '../../src/service/index.js';
import { openGatewayStore } from '../../src/service/index.js';
import type { TaskTracker, TaskTrackerOptions } from '../../src/tasks/index.js';
import { assembleGateway } from '../../src/service/internal.js';

export interface World {
  agent: RunningAgent;
  bus: EventBus<OpenTopics>;
  deltas: EventEnvelope[];
  store: GatewayStore;
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
    close: async () => {
      await bus.close();
      await store.close();
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The task and dispatch records a gateway builds on its store (`GatewayDeps['records']`). */
export type GatewayRecords = Parameters<NonNullable<GatewayDeps['records']>>[0];

/** One gateway process on the shared store and bus, with short-hands for its parts. */
export interface TestGateway {
  gw: Gateway;
  /** `parts.fleet`: agent clients and the task terminal. */
  fleet: FleetClient;
  /** `parts.tracker`. */
  tracker: TaskTracker;
  /** The gateway's `close()`. */
  stop: () => Promise<void>;
}

/** What a test gateway is given: each maps onto the config or a documented `GatewayDeps` option. */
export interface GatewayOptions {
  polling?: TaskTrackerOptions['polling'];
  maxTrackingTimeMs?: number;
  pushBaseUrl?: string;
  /** False leaves the outbox relay stopped: the process dies between claim and publish. */
  relay?: boolean;
  /** Wraps the gateway's task and dispatch records (fault injection). */
  records?: GatewayDeps['records'];
  /** Failures of background work (default: published on `system.error`). */
  onError?: GatewayDeps['onError'];
  /** The policy gate of `gw.dispatch` (default: allow every call). */
  gate?: PolicyGate;
  dispatchMode?: GatewayDeps['dispatchMode'];
  /** Told of each gate decision, as the service's metrics are. */
  onGateDecision?: GatewayDeps['onGateDecision'];
  /** More agents besides `ops`: name → URL (their cards are fetched like the ops agent's). */
  agents?: Readonly<Record<string, string>>;
  /** `replicas.leaseTtl`: the recovery sweep runs every third of it (15 s by default). */
  leaseTtl?: string;
}

/**
 * One gateway process: `createGateway` with the world's ops agent (and `agents`) configured, lent
 * the world's store and bus. The outbox relay idles at 10 ms so tests need not wait long for it.
 */
export async function gateway(w: World, options: GatewayOptions = {}): Promise<TestGateway> {
  const tracking = {
    ...(options.polling === undefined ? {} : { polling: options.polling }),
    ...(options.maxTrackingTimeMs === undefined
      ? {}
      : { maxTrackingTimeMs: options.maxTrackingTimeMs }),
  };
  const { gateway: gw, parts } = await assembleGateway(
    {
      agents: [
        { name: 'ops', url: w.agent.url },
        ...Object.entries(options.agents ?? {}).map(([name, url]) => ({ name, url })),
      ],
      ...(options.leaseTtl === undefined ? {} : { replicas: { leaseTtl: options.leaseTtl } }),
    },
    {
      store: w.store,
      bus: w.bus,
      gate: options.gate ?? ALLOW_ALL,
      relay: options.relay === false ? false : { pollIntervalMs: 10 },
      tracking,
      ...(options.pushBaseUrl === undefined ? {} : { pushBaseUrl: options.pushBaseUrl }),
      ...(options.records === undefined ? {} : { records: options.records }),
      ...(options.onError === undefined ? {} : { onError: options.onError }),
      ...(options.dispatchMode === undefined ? {} : { dispatchMode: options.dispatchMode }),
      ...(options.onGateDecision === undefined ? {} : { onGateDecision: options.onGateDecision }),
    },
  );
  return {
    gw,
    fleet: parts.fleet,
    tracker: parts.tracker,
    stop: () => gw.close(),
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
  bind(receive: Gateway['pushReceiver']): void;
  /** The HTTP status of every push answered so far. */
  statuses: number[];
  close(): Promise<void>;
}

export async function startCallbackServer(
  receive?: Gateway['pushReceiver'],
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
