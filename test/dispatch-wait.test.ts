/**
 * `POST /api/dispatch?wait=…` on a running gateway: the wait bounds the answer. A call the agent is
 * still working on when the wait is up is answered as it stands (202) and goes on to its end.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/harness.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';
import { withoutListTasks } from './support/unlisted-agent.js';

interface Dispatch {
  id: string;
  status: string;
  taskId: string | null;
}

describe('POST /api/dispatch?wait', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  /** Calls whose text is `hold` keep working at the agent until this is released. */
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-wait-'));
    agent = await startOpsAgent({
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        ...(call.text === 'hold' ? { hold: held } : {}),
      }),
    });
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
      ].join('\n'),
    );
    gw = await startServiceProcess({ args: ['--config', config] });
  }, 60_000);

  afterAll(async () => {
    release();
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a call still at the agent when the wait is up, 202 running, and the call goes on', async () => {
    // The agent holds this call until the test releases it: an answer that waited for the agent
    // would never come.
    const answer = await api<Dispatch>(gw.url, '/api/dispatch?wait=1s', {
      body: { agent: 'ops', skill: 'sitrep', text: 'hold' },
    });
    expect(answer.status).toBe(202);
    expect(answer.body.status).toBe('running');
    expect(agent.received.some((r) => r.text === 'hold')).toBe(true);
    release();
    const ended = await eventually(async () => {
      const read = await api<Dispatch>(gw.url, `/api/dispatches/${answer.body.id}`);
      return read.body.status === 'completed' ? read.body : undefined;
    });
    expect(ended.status).toBe('completed');
  });

  it('answers a call that ends within the wait with its end, 200', async () => {
    const answer = await api<Dispatch>(gw.url, '/api/dispatch?wait=30s', {
      body: { agent: 'ops', skill: 'sitrep', text: 'status' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('completed');
  });
});

/**
 * The agents a cut-off answer is met at: one found by ListTasks, and one that cannot list its
 * tasks but streams (the call goes streamed; its stream named the task before the cut).
 */
const CUT_OFF_AGENTS = [
  { agent: 'an agent found by ListTasks', streaming: false },
  { agent: 'a streaming agent without ListTasks', streaming: true },
];

describe.each(CUT_OFF_AGENTS)(
  'a call whose answer outlasts limits.agentResponseTimeout, at $agent',
  ({ streaming }) => {
    let dir: string;
    let agent: RunningAgent;
    let gw: ServiceProcess;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'fleetgate-cut-off-'));
      // `slow` works 2.5 s, then counts itself on the board: longer than the gateway reads an answer.
      agent = await startOpsAgent({
        streaming,
        ...(streaming ? { decorateHandler: withoutListTasks() } : {}),
        behaviour: async (call): Promise<AgentPlan> =>
          call.text === 'slow'
            ? {
                ...(await opsBehaviour(call)),
                delayMs: 2_500,
                deltas: [{ domain: 'board', path: 'data.slowCalls', op: 'inc', value: 1 }],
              }
            : opsBehaviour(call),
      });
      const config = join(dir, 'fleetgate.yaml');
      writeFileSync(
        config,
        [
          'listen: { host: 127.0.0.1, port: 0 }',
          `store: sqlite:${join(dir, 'fleetgate.db')}`,
          `agents: [{ name: ops, url: ${agent.url} }]`,
          'limits: { agentResponseTimeout: 1s }',
        ].join('\n'),
      );
      gw = await startServiceProcess({ args: ['--config', config] });
    }, 60_000);

    afterAll(async () => {
      await gw?.stop('SIGKILL');
      await agent?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('is found at the agent when its answer is cut off, followed to its end, its deltas once', async () => {
      // `wait` sends the call blocking: the agent's answer would come after the gateway stopped
      // reading it. Before, the call ended failed (FLEETGATE_CALL_TIMEOUT) and its effects were lost.
      const answer = await api<Dispatch>(gw.url, '/api/dispatch?wait=20s', {
        body: { agent: 'ops', skill: 'sitrep', text: 'slow' },
      });
      expect([answer.status, answer.body.status]).toEqual([200, 'completed']);
      expect(answer.body.taskId).toEqual(expect.any(String));
      const board = await eventually(async () => {
        const read = await api<{ state: { data?: { slowCalls?: number } } }>(
          gw.url,
          '/api/world/board',
        );
        return read.status === 200 && read.body.state.data?.slowCalls !== undefined
          ? read.body.state
          : undefined;
      });
      expect(board.data?.slowCalls).toBe(1);
      // Sent once: the agent saw one call, and a second look finds the count unchanged.
      expect(agent.received.filter((r) => r.text === 'slow')).toHaveLength(1);
      const again = await api<{ state: { data?: { slowCalls?: number } } }>(
        gw.url,
        '/api/world/board',
      );
      expect(again.body.state.data?.slowCalls).toBe(1);
    });
  },
);
