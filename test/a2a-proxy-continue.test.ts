/**
 * A message that continues a task through the A2A proxy: the board bot's `plan_sprint` asks which
 * milestone (`input-required`); the unmodified SDK client answers with `message.taskId` set to the
 * proxy's task id — blocking and streaming — and the agent gets the answer on its own task, the
 * task completes under the same id, and its deltas reach the world state once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startBoardBot } from '../examples/demo/board-bot.js';
import { sdkClient, userMessage } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'cont-admin-0123456789abcdef';
const OPERATOR = 'cont-operator-0123456789ab';

function textOf(task: Task): string {
  return task.artifacts
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('\n');
}

function statusText(task: Task): string {
  return (task.status?.message?.parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');
}

describe('continuing a task through the A2A proxy', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-proxy-continue-'));
    agent = await startBoardBot();
    const file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: board, url: ${agent.url} }]`,
        'policy: { sweepInterval: 200ms }',
        'proxy: { holdFor: 2s }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: PC_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: PC_OPERATOR, roles: [operator] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', file],
      env: { PC_ADMIN: ADMIN, PC_OPERATOR: OPERATOR },
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a sprint plan and returns its task once the agent asks its question. */
  async function askedTask(client: Client, text: string): Promise<Task> {
    let task = (await client.sendMessage({
      tenant: '',
      message: userMessage(text, { 'x-effect-domain-skill': 'plan_sprint' }),
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    const gate = task.status?.message?.metadata?.['fleetgate'] as
      { awaiting?: string; approvalId?: string } | undefined;
    if (gate?.awaiting === 'approval') {
      await api(gw.url, `/api/approvals/${gate.approvalId}/approve`, { token: ADMIN, body: {} });
      task = await eventually(async () => {
        const t = await client.getTask({ tenant: '', id: task.id });
        const meta = t.status?.message?.metadata?.['fleetgate'] as
          { awaiting?: string } | undefined;
        return t.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED &&
          meta?.awaiting !== 'approval'
          ? t
          : undefined;
      });
    }
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(task)).toContain('Which milestone');
    return task;
  }

  function answer(task: Task, text: string) {
    return {
      tenant: '',
      message: { ...userMessage(text), taskId: task.id, contextId: task.contextId },
      configuration: undefined,
      metadata: undefined,
    };
  }

  it("sends a blocking answer to the agent's task and completes the task, deltas once", async () => {
    const client = await sdkClient(`${gw.url}/a2a/board`, { token: OPERATOR });
    const before = agent.received.length;
    const asked = await askedTask(client, 'plan the sprint');
    expect(agent.received.length).toBe(before + 1);
    const agentTaskId = agent.received.at(-1)!.taskId;

    const done = (await client.sendMessage(answer(asked, 'M7'))) as Task;
    expect(done.id).toBe(asked.id);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(done)).toContain('Sprint planned for M7.');
    // The answer went to the agent on its own task, under the task's skill.
    expect(agent.received.length).toBe(before + 2);
    const got = agent.received.at(-1)!;
    expect(got.taskId).toBe(agentTaskId);
    expect(got.text).toBe('M7');
    expect(got.skill).toBe('plan_sprint');

    const { body: dispatch } = await api<{ status: string; taskId: string }>(
      gw.url,
      `/api/dispatches/${asked.id}`,
      { token: OPERATOR },
    );
    expect(dispatch).toMatchObject({ status: 'completed', taskId: agentTaskId });
    const world = await eventually(async () => {
      const { body } = await api<{ version: number; state: { data?: { sprint?: string } } }>(
        gw.url,
        '/api/world/board',
        { token: OPERATOR },
      );
      return body.state?.data?.sprint === 'M7' ? body : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { body: settled } = await api<{ version: number; state: { data: unknown } }>(
      gw.url,
      '/api/world/board',
      { token: OPERATOR },
    );
    expect(settled.version).toBe(world.version);
    expect(settled.state.data).toMatchObject({ sprint: 'M7', inProgress: 3 });

    // The task ended: another message to it is refused, and nothing reaches the agent.
    await expect(client.sendMessage(answer(asked, 'M8'))).rejects.toThrow(/already ended/);
    expect(agent.received.length).toBe(before + 2);
  });

  it('streams the continued task to its end', async () => {
    const client = await sdkClient(`${gw.url}/a2a/board`, { token: OPERATOR });
    const asked = await askedTask(client, 'plan another sprint');
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(answer(asked, 'M9'))) events.push(event);
    const first = events[0]!.payload;
    expect(first?.$case).toBe('task');
    expect((first?.value as Task).id).toBe(asked.id);
    const last = events.at(-1)!.payload;
    const state =
      last?.$case === 'statusUpdate'
        ? last.value.status?.state
        : last?.$case === 'task'
          ? last.value.status?.state
          : undefined;
    expect(state).toBe(TaskState.TASK_STATE_COMPLETED);
    const task = await client.getTask({ tenant: '', id: asked.id });
    expect(textOf(task)).toContain('Sprint planned for M9.');
  });

  it('refuses a message to an unknown task, forwarding nothing', async () => {
    const client = await sdkClient(`${gw.url}/a2a/board`, { token: ADMIN });
    const before = agent.received.length;
    await expect(
      client.sendMessage(answer({ id: 'no-such-task', contextId: '' } as Task, 'x')),
    ).rejects.toThrow(/Task not found/);
    expect(agent.received.length).toBe(before);
  });
});
