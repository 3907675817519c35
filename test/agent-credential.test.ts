/**
 * An agent that refuses every request without its credential is still followed to the end: the
 * configured `Authorization` goes on every request the gateway makes to it (send, stream,
 * GetTask, SubscribeToTask, push-config registration, CancelTask), not on the first call only.
 * A real SDK agent on loopback behind a recording proxy, a real SQLite store, `createGateway`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/harness.js';
import { startAgent } from '../examples/agents/harness.js';
import { declareOps, opsBehaviour, OPS_SKILLS } from '../examples/agents/ops-agent.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import type { Gateway, GatewayDeps, GatewayStore } from '../src/service/index.js';
import { createGateway, openGatewayStore } from '../src/service/index.js';
import type { DroppingProxy } from './support/dropping-proxy.js';
import { startDroppingProxy } from './support/dropping-proxy.js';
import type { CallbackServer } from './support/gateway.js';
import { startCallbackServer, until } from './support/gateway.js';

const SECRET = 'agent-secret-7f3a';

/** Lets a test end the agent's task when it chooses (or never). */
let release: () => void = () => undefined;
let holding: Promise<void> = Promise.resolve();
function holdNextTask(): void {
  holding = new Promise<void>((resolve) => (release = resolve));
}

describe('an agent that requires its credential on every request', () => {
  let agent: RunningAgent;
  let store: GatewayStore;
  let dir: string;
  let proxy: DroppingProxy | undefined;
  let callbacks: CallbackServer | undefined;
  let gw: Gateway | undefined;
  const bus = createInMemoryEventBus<OpenTopics>();
  const deltas: EventEnvelope[] = [];

  beforeAll(async () => {
    agent = await startAgent({
      name: 'ops',
      skills: Object.keys(OPS_SKILLS).map((id) => ({ id })),
      declare: declareOps,
      streaming: true,
      pushNotifications: true,
      bearerToken: SECRET,
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        hold: holding,
      }),
    });
    await bus.subscribe('world.state.delta', (e) => void deltas.push(e), { name: 'deltas' });
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-credential-'));
    store = await openGatewayStore(`sqlite:${join(dir, 'gw.db')}`);
  });
  afterEach(async () => {
    await gw?.close();
    await proxy?.close();
    await callbacks?.close();
    gw = undefined;
    proxy = undefined;
    callbacks = undefined;
  });
  afterAll(async () => {
    await bus.close();
    await store.close();
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A gateway whose only way to the agent is `proxy` (so every request is seen and counted). */
  async function start(
    drop: boolean,
    deps: Pick<GatewayDeps, 'tracking' | 'pushBaseUrl' | 'dispatchMode'>,
    onResubscribed?: () => void,
  ): Promise<Gateway> {
    proxy = await startDroppingProxy(agent.url, onResubscribed, { drop });
    gw = await createGateway(
      { agents: [{ name: 'ops', url: proxy.url, auth: { bearerEnv: 'OPS_AGENT_TOKEN' } }] },
      {
        store,
        bus,
        gate: ALLOW_ALL,
        relay: { pollIntervalMs: 10 },
        secrets: (name) => (name === 'OPS_AGENT_TOKEN' ? SECRET : undefined),
        ...deps,
      },
    );
    return gw;
  }

  /** Polls the dispatch record in the background so `until` can read its status. */
  function watch(g: Gateway, id: string): { status: () => string | undefined; stop: () => void } {
    let status: string | undefined;
    let stopped = false;
    void (async () => {
      while (!stopped) {
        status = (await g.dispatchRecord(id))?.status;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    return { status: () => status, stop: () => (stopped = true) };
  }

  const refused = (): string[] =>
    (proxy?.exchanges ?? []).filter((e) => e.status === 401).map((e) => e.method);

  it('is followed to the end by polling (GetTask)', async () => {
    holdNextTask();
    const g = await start(false, {
      dispatchMode: 'return-immediately',
      tracking: { polling: { intervalMs: 20, growth: 1 } },
    });
    const record = await g.dispatch({ agent: 'ops', skill: 'pr_review', text: 'PR 1' }).answered();
    expect(record.taskId).toBeTruthy();
    const w = watch(g, record.id);
    release();
    try {
      await until(() => w.status() === 'completed', 15_000, 'the polled dispatch to complete');
    } finally {
      w.stop();
    }
    expect(proxy!.exchanges.some((e) => e.method === 'GetTask' && e.status === 200)).toBe(true);
    expect(refused()).toEqual([]);
    expect(
      deltas.filter((e) => (e.payload as { taskId: string }).taskId === record.taskId),
    ).toHaveLength(1);
  });

  it('is followed to the end by its push notifications (push config registered with the credential)', async () => {
    holdNextTask();
    callbacks = await startCallbackServer();
    // Polling is an hour away: only a push can end this call within the test.
    const g = await start(false, {
      dispatchMode: 'return-immediately',
      pushBaseUrl: callbacks.base,
      tracking: { polling: { intervalMs: 3_600_000 } },
    });
    callbacks.bind(g.pushReceiver);
    const record = await g.dispatch({ agent: 'ops', skill: 'pr_review', text: 'PR 2' }).answered();
    await until(
      () => proxy!.exchanges.some((e) => e.method === 'CreateTaskPushNotificationConfig'),
      10_000,
      'the push config registration',
    );
    const w = watch(g, record.id);
    release();
    try {
      await until(() => w.status() === 'completed', 15_000, 'the pushed dispatch to complete');
    } finally {
      w.stop();
    }
    // Every push was accepted (a status-only push makes the tracker fetch the task at once).
    expect(callbacks.statuses.length).toBeGreaterThan(0);
    expect(callbacks.statuses.every((s) => s < 300)).toBe(true);
    expect(refused()).toEqual([]);
  });

  it('is followed to the end by resubscribing (SubscribeToTask) after its stream dropped', async () => {
    holdNextTask();
    // The task ends only once the resumed stream is attached at the agent.
    const g = await start(true, { tracking: { polling: { intervalMs: 3_600_000 } } }, () =>
      release(),
    );
    const record = await g
      .dispatch({
        agent: 'ops',
        skill: 'pr_review',
        text: 'PR 3',
        mode: 'streaming',
      })
      .answered();
    expect(proxy!.cut()).toBe(1);
    const w = watch(g, record.id);
    try {
      await until(
        () => w.status() === 'completed',
        15_000,
        'the resubscribed dispatch to complete',
      );
    } finally {
      w.stop();
    }
    expect(proxy!.exchanges.some((e) => e.method === 'SubscribeToTask' && e.status === 200)).toBe(
      true,
    );
    expect(proxy!.exchanges.some((e) => e.method === 'GetTask')).toBe(false);
    expect(refused()).toEqual([]);
  });

  it('cancels a task that ran past its tracking time at the agent, with the credential', async () => {
    holdNextTask(); // never released: the agent would work on it forever
    const g = await start(false, {
      dispatchMode: 'return-immediately',
      tracking: { polling: { intervalMs: 20, growth: 1 }, maxTrackingTimeMs: 200 },
    });
    const record = await g.dispatch({ agent: 'ops', skill: 'pr_review', text: 'PR 4' }).answered();
    const w = watch(g, record.id);
    try {
      await until(() => w.status() === 'failed', 15_000, 'the timed-out dispatch to fail');
    } finally {
      w.stop();
      release();
    }
    expect(proxy!.exchanges.some((e) => e.method === 'CancelTask' && e.status === 200)).toBe(true);
    expect(refused()).toEqual([]);
  });
});
