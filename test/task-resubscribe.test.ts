/**
 * A stream that breaks mid-way is resumed with SubscribeToTask: a gateway (`createGateway`) calls
 * a real streaming SDK agent through a proxy that cuts the first streaming response after its
 * first event.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { startStreamingAgent, streamingBehaviour } from '../examples/agents/streaming-agent.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { createStoreTaskRecords } from '../src/tasks/index.js';
import { startDroppingProxy } from './support/dropping-proxy.js';
import { assembleGateway } from '../src/service/internal.js';

/** Settled once the tracker's SubscribeToTask stream is attached at the agent. */
const resubscribed = (() => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
})();

describe('resubscribe', () => {
  let agent: RunningAgent;
  let store: GatewayStore;
  let dir: string;
  beforeAll(async () => {
    // The task stays working until the tracker's SubscribeToTask reached the agent: the end is
    // seen on the resumed stream however slow the machine is.
    const base = streamingBehaviour(0);
    agent = await startStreamingAgent({
      behaviour: async (call) => ({ ...(await base(call)), hold: resubscribed.promise }),
    });
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-resub-'));
    store = await openGatewayStore(`sqlite:${join(dir, 'tasks.db')}`);
  });
  afterAll(async () => {
    await store.close();
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes a dropped stream with SubscribeToTask and finishes the task once', async () => {
    const proxy = await startDroppingProxy(agent.url, () => resubscribed.resolve());
    const bus = createInMemoryEventBus<OpenTopics>();
    const deltas: EventEnvelope[] = [];
    await bus.subscribe('world.state.delta', (e) => void deltas.push(e), { name: 'deltas' });
    const records = createStoreTaskRecords(store.db);
    const errors: unknown[] = [];
    // The agent is configured at the proxy's address: every call to it goes through the cut.
    const { gateway: gw, parts } = await assembleGateway(
      { agents: [{ name: 'stream', url: proxy.url }] },
      {
        store,
        bus,
        gate: ALLOW_ALL,
        relay: { pollIntervalMs: 10 },
        tracking: { polling: { intervalMs: 60_000 } },
        onError: (e) => errors.push(e),
      },
    );
    const tracker = parts.tracker;
    try {
      const result = await gw.call('stream', 'build', 'go', { mode: 'streaming' });
      expect(proxy.cut()).toBe(1);
      expect(result).toMatchObject({ terminal: false, streamDropped: true });
      await tracker.follow({
        agent: 'stream',
        skill: 'build',
        correlationId: result.correlationId,
        taskId: result.task!.id,
        state: result.state === 'message' ? 'unknown' : result.state,
        resubscribe: true,
        task: result.task!,
      });
      const taskId = result.task!.id;
      const end = Date.now() + 10_000;
      while (!deltas.some((e) => (e.payload as { taskId: string }).taskId === taskId)) {
        if (Date.now() > end) throw new Error(`no delta; errors: ${String(errors)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      await new Promise((r) => setTimeout(r, 80));
      const mine = deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);
      expect(mine).toHaveLength(1);
      expect((mine[0]!.payload as { deltas: unknown[] }).deltas).toHaveLength(2);
      expect(tracker.claims()).toMatchObject({ resubscribe: 1, poll: 0 });
      expect(await records.get('stream', taskId)).toMatchObject({
        terminalVia: 'resubscribe',
        state: 'completed',
      });
    } finally {
      await gw.close();
      await bus.close();
      await proxy.close();
    }
  });
});
