/**
 * A stream that breaks mid-way is resumed with SubscribeToTask: a gateway (`createGateway`) calls
 * a real streaming SDK agent through a proxy that cuts the first streaming response after its
 * first event.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { startStreamingAgent, streamingBehaviour } from '../examples/agents/streaming-agent.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import type { GatewayStore } from '../src/service/index.js';
import { createGateway, openGatewayStore } from '../src/service/index.js';
import { createStoreTaskRecords } from '../src/tasks/index.js';

/**
 * Forwards to the agent; the first SendStreamingMessage response is cut after its first chunk.
 * `onResubscribed` runs once the agent answered a SubscribeToTask (its stream is attached).
 */
async function startDroppingProxy(
  target: string,
  onResubscribed: () => void,
): Promise<{ url: string; cut: () => number; close: () => Promise<void> }> {
  const { hostname, port } = new URL(target);
  let cut = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const dropThis = cut === 0 && body.toString().includes('SendStreamingMessage');
      const resubscribe = body.toString().includes('SubscribeToTask');
      const upstream = httpRequest(
        { hostname, port, path: req.url, method: req.method, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          if (resubscribe) onResubscribed();
          up.on('data', (chunk: Buffer) => {
            if (!dropThis) {
              res.write(chunk);
              return;
            }
            if (cut > 0) return;
            cut += 1;
            up.destroy();
            // Cut the connection once the first event reached the client.
            res.write(chunk, () => setTimeout(() => res.socket?.destroy(), 20));
          });
          up.on('end', () => res.end());
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: () => cut,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

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
    const gw = await createGateway(
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
    const tracker = gw.internals.tracker;
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
