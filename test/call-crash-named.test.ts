/**
 * A streamed call keeps its task's id the moment the agent's stream names it, before the answer
 * ends: a gateway killed (SIGKILL) mid-stream is followed up by that id after its restart, also at
 * an agent that cannot list its tasks (an agent of A2A v0.3 has no ListTasks), so recovery has no
 * other way to find the task. A call the gateway waits for (`?wait`) goes streamed to an agent
 * that streams, for the same reason. `fleetgate start` as a child process; the calls through its
 * A2A proxy and its HTTP API, the outcome read through its HTTP API.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/harness.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import { callSitrep, sdkClient } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { eventually, startServiceProcess } from './support/gateway-service.js';
import { until } from './support/gateway.js';
import { withoutListTasks } from './support/unlisted-agent.js';

function newHold(): { promise: Promise<void>; release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

interface Dispatch {
  id: string;
  status: string;
  taskId: string | null;
  result: { error?: { code: string; message: string } } | null;
}

describe('a streamed call whose gateway died mid-stream, at an agent without ListTasks', () => {
  let agent: RunningAgent;
  let dir: string;
  let config: string;
  let gateway: ServiceProcess | undefined;
  /** Each task the agent starts waits for this before it ends. */
  let hold = newHold();
  let listed = 0;

  beforeAll(async () => {
    agent = await startOpsAgent({
      streaming: true,
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        hold: hold.promise,
      }),
      decorateHandler: withoutListTasks(() => (listed += 1)),
    });
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-call-crash-named-'));
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'gw.db')}`,
        'bus: memory',
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'replicas: { leaseTtl: 3s }',
      ].join('\n'),
    );
  }, 60_000);

  afterAll(async () => {
    hold.release();
    await gateway?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<ServiceProcess> =>
    (gateway = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 }));

  async function dispatches(g: ServiceProcess): Promise<Dispatch[]> {
    const response = await fetch(`${g.url}/api/dispatches?agent=ops`);
    return ((await response.json()) as { dispatches: Dispatch[] }).dispatches;
  }

  /** Starts one call through `door`; resolves once the agent has it, with its task id. */
  const doors = {
    'a proxied SendStreamingMessage': async (g: ServiceProcess): Promise<void> => {
      const client = await sdkClient(`${g.url}/a2a/ops`);
      callSitrep(client, true).catch(() => undefined);
    },
    // Blocking, as the gateway sends a call it waits for: streamed, since the agent streams.
    'POST /api/dispatch?wait': (g: ServiceProcess): Promise<void> => {
      void fetch(`${g.url}/api/dispatch?wait=60s`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'status' }),
      }).catch(() => undefined);
      return Promise.resolve();
    },
  };

  for (const [door, send] of Object.entries(doors)) {
    it(`is followed to its end by the task id its stream named (${door}), its delta applied once`, async () => {
      hold = newHold();
      const before = agent.received.length;
      const g = await start();
      await send(g);
      await until(() => agent.received.length > before, 20_000, 'the call to reach the agent');
      const taskId = agent.received[before]!.taskId;
      // The stream named the task (its first event) while the agent still works on it.
      const running = await eventually(
        async () => (await dispatches(g)).find((d) => d.taskId === taskId),
        10_000,
        'the task id on the running call',
      );
      expect(running.status).toBe('running');
      await g.stop('SIGKILL');
      gateway = undefined;

      hold.release();
      const restarted = await start();
      const ended = await eventually(
        async () => {
          const call = (await dispatches(restarted)).find((d) => d.id === running.id);
          return call !== undefined && call.status !== 'running' ? call : undefined;
        },
        30_000,
        'the call to end after the restart',
      );
      expect(ended).toMatchObject({ status: 'completed', taskId });
      const history = await (
        await fetch(`${restarted.url}/api/world/board/history?limit=100`)
      ).json();
      const applied = (
        history as { records: { taskId?: string; status?: string }[] }
      ).records.filter((r) => r.taskId === taskId && r.status === 'applied');
      expect(applied).toHaveLength(1);
      // Sent once, and never looked for by its context: the agent could not have answered.
      expect(agent.received).toHaveLength(before + 1);
      expect(listed).toBe(0);
      await restarted.stop('SIGTERM');
      gateway = undefined;
    }, 120_000);
  }
});
