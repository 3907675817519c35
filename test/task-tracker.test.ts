/**
 * The task tracker against a real slow @a2a-js/sdk agent (working, then completed with deltas)
 * and a real SQLite file: poll only, push only (bodies produced by the SDK's own sender), and push
 * racing poll — one world.state.delta per task every time.
 */
import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkPush } from './support/sdk-push.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import type { Gateway, World } from './support/gateway.js';
import { gateway, startCallbackServer, until, world } from './support/gateway.js';
import { createPushToken, createStoreTaskRecords } from '../src/tasks/index.js';

/** Starts a call that returns at once with a working task, and hands it to the tracker. */
async function startTask(g: Gateway, pushToken?: string): Promise<string> {
  const t = g.tracker;
  const result = await g.fleet.call('ops', 'pr_review', 'go', { mode: 'return-immediately' });
  expect(result.terminal).toBe(false);
  const taskId = result.task!.id;
  await t.follow({
    agent: 'ops',
    skill: 'pr_review',
    correlationId: result.correlationId,
    taskId,
    state: result.state === 'message' ? 'unknown' : result.state,
    ...(pushToken === undefined ? {} : { pushToken }),
  });
  return taskId;
}

const deltasOf = (w: World, taskId: string): EventEnvelope[] =>
  w.deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);

describe('task tracker', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(40);
  });
  afterAll(() => w.close());

  it('finishes a slow task via poll, with one world.state.delta', async () => {
    const g = gateway(w, { polling: { intervalMs: 15 } });
    try {
      const taskId = await startTask(g);
      await until(() => deltasOf(w, taskId).length > 0);
      await new Promise((r) => setTimeout(r, 100));
      expect(deltasOf(w, taskId)).toHaveLength(1);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        state: 'completed',
        terminalVia: 'poll',
      });
      expect(g.tracker.size).toBe(0);
    } finally {
      await g.stop();
    }
  });

  it('finishes a slow task via push (the SDK sender’s body), with one world.state.delta', async () => {
    const g = gateway(w, { polling: { intervalMs: 60_000 } });
    const receiver = await startCallbackServer(g.tracker.pushReceiver());
    try {
      const token = createPushToken();
      const taskId = await startTask(g, token);
      const { client } = await g.fleet.agentClient('ops');
      await new Promise((r) => setTimeout(r, 80));
      const done = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
      await sdkPush(receiver.url(taskId), done, token);
      await sdkPush(receiver.url(taskId), done, token); // the agent retries: still one event
      await until(() => deltasOf(w, taskId).length > 0);
      await new Promise((r) => setTimeout(r, 50));
      expect(deltasOf(w, taskId)).toHaveLength(1);
      expect(g.tracker.claims()).toMatchObject({ push: 1, poll: 0 });
    } finally {
      await receiver.close();
      await g.stop();
    }
  });

  it('records a terminal reply durably, so a later push or poll of the task is a no-op', async () => {
    const g = gateway(w);
    try {
      const result = await g.fleet.call('ops', 'pr_review', 'go');
      expect(result.terminal).toBe(true);
      const taskId = result.task!.id;
      await until(() => deltasOf(w, taskId).length > 0);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        state: 'completed',
        terminalVia: 'reply',
        skill: 'pr_review',
      });
      expect(await g.tracker.observe('ops', result.task!, 'push')).toBe(false);
      await new Promise((r) => setTimeout(r, 50));
      expect(deltasOf(w, taskId)).toHaveLength(1);
    } finally {
      await g.stop();
    }
  });

  it('publishes exactly one world.state.delta per task when push and poll race, 200 times', async () => {
    const g = gateway(w, { polling: { intervalMs: 60_000, perAgentConcurrency: 64 } });
    const receiver = await startCallbackServer(g.tracker.pushReceiver());
    const { client } = await g.fleet.agentClient('ops');
    try {
      const ids: string[] = [];
      for (let batch = 0; batch < 10; batch += 1) {
        const tokens = Array.from({ length: 20 }, () => createPushToken());
        const started = await Promise.all(
          tokens.map(async (token) => ({ token, id: await startTask(g, token) })),
        );
        await new Promise((r) => setTimeout(r, 80));
        const finished = await Promise.all(
          started.map(async (s) => ({
            ...s,
            task: await client.getTask({ tenant: '', id: s.id, historyLength: 0 }),
          })),
        );
        // Push and poll for every task in the same tick, in random order.
        await Promise.all(
          finished.flatMap((f) => {
            const paths = [
              () => sdkPush(receiver.url(f.id), f.task, f.token),
              () => Promise.resolve(g.tracker.pollNow('ops', f.id)),
            ];
            if (Math.random() < 0.5) paths.reverse();
            return paths.map((p) => p());
          }),
        );
        ids.push(...started.map((s) => s.id));
      }
      await until(() => ids.every((id) => deltasOf(w, id).length > 0), 20_000);
      await new Promise((r) => setTimeout(r, 100));
      expect(ids.map((id) => deltasOf(w, id).length)).toEqual(ids.map(() => 1));
      const claims = g.tracker.claims();
      expect(claims.push + claims.poll).toBe(200);
      expect(g.tracker.size).toBe(0);
    } finally {
      await receiver.close();
      await g.stop();
    }
  });

  it('completes a task on recovery after the gateway that started it went away, once', async () => {
    // Gateway A starts the task, then stops before it ever sees the end (polls far in the future).
    const a = gateway(w, { polling: { intervalMs: 60_000 } });
    const taskId = await startTask(a);
    await a.stop();
    await new Promise((r) => setTimeout(r, 80)); // the agent finishes meanwhile
    expect(deltasOf(w, taskId)).toHaveLength(0);

    // Gateway B starts on the same store: the task is reloaded and completed, once.
    const b = gateway(w, { polling: { intervalMs: 15 } });
    try {
      expect(await b.tracker.recover()).toBeGreaterThanOrEqual(1);
      await until(() => deltasOf(w, taskId).length > 0);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        terminalVia: 'recovery',
      });
      // Gateway A comes back to life and sees the same terminal task: a no-op.
      const { client } = await a.fleet.agentClient('ops');
      const done = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
      const result = await a.fleet.terminal.settle('ops', done, 'poll', {
        call: { agent: 'ops', skill: 'pr_review', correlationId: 'c', startedAt: 0 },
      });
      expect(result).toEqual({ settled: false, reason: 'claimed' });
      await new Promise((r) => setTimeout(r, 100));
      expect(deltasOf(w, taskId)).toHaveLength(1);
      expect((deltasOf(w, taskId)[0]!.payload as { skill: string }).skill).toBe('pr_review');
    } finally {
      await b.stop();
    }
  });
});

describe('task tracker with an agent that sends push notifications', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(60, {}, { pushNotifications: true });
  });
  afterAll(() => w.close());

  it('registers a push config with a per-task secret and finishes the task from the agent’s pushes', async () => {
    // The receiver's URL must exist before the tracker; its handler is bound right after.
    const server = await startCallbackServer();
    const g = gateway(w, {
      polling: { intervalMs: 60_000 },
      pushBaseUrl: `${server.base}/`,
    });
    server.bind(g.tracker.pushReceiver());
    try {
      const taskId = await startTask(g);
      const record = await createStoreTaskRecords(w.store.db).get('ops', taskId);
      expect(record?.pushTokenHash).toMatch(/^[0-9a-f]{64}$/);
      await until(() => deltasOf(w, taskId).length > 0);
      await new Promise((r) => setTimeout(r, 80));
      expect(deltasOf(w, taskId)).toHaveLength(1);
      expect(g.tracker.claims()).toMatchObject({ push: 1, poll: 0 });
      expect(server.statuses.length).toBeGreaterThan(0);
      expect(server.statuses.every((status) => status === 200)).toBe(true);
    } finally {
      await g.stop();
      await server.close();
    }
  });
});

describe('task tracker crash windows', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(0);
  });
  afterAll(() => w.close());

  it('delivers the events of a claim committed just before the process died, once, after restart', async () => {
    // The gateway claims the terminal reply (events in the outbox) and dies before relaying them.
    const dying = gateway(w, { relay: false });
    const result = await dying.fleet.call('ops', 'pr_review', 'go');
    await dying.stop();
    await new Promise((r) => setTimeout(r, 50));
    const taskId = result.task!.id;
    expect(deltasOf(w, taskId)).toHaveLength(0);
    // The next start relays what the outbox holds; nothing is published twice.
    const next = gateway(w);
    try {
      await until(() => deltasOf(w, taskId).length > 0);
      await new Promise((r) => setTimeout(r, 80));
      expect(deltasOf(w, taskId)).toHaveLength(1);
    } finally {
      await next.stop();
    }
  });
});

describe('task tracker and interrupted tasks', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(20, { state: 'input-required', statusText: 'which repo?' });
  });
  afterAll(() => w.close());

  it('hands input-required to the gate hook, never reporting it as an end', async () => {
    const interrupted: string[] = [];
    const g = gateway(w, {
      polling: { intervalMs: 10 },
      onInterrupted: (record, state) => {
        interrupted.push(`${record.taskId}:${state}`);
        return Promise.resolve();
      },
    });
    try {
      const taskId = await startTask(g);
      await until(() => interrupted.length > 0);
      await new Promise((r) => setTimeout(r, 60));
      expect(interrupted).toEqual([`${taskId}:input-required`]);
      expect(g.tracker.size).toBe(1);
      expect(deltasOf(w, taskId)).toHaveLength(0);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        state: 'input-required',
        terminalAt: null,
      });
    } finally {
      await g.stop();
    }
  });
});

describe('task tracker limits', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(5_000);
  });
  afterAll(() => w.close());

  it('cancels a task at the agent after the tracking time and fails its call', async () => {
    const g = gateway(w, { polling: { intervalMs: 20 }, maxTrackingTimeMs: 100 });
    try {
      const taskId = await startTask(g);
      await until(() => g.tracker.claims().timeout === 1);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        state: 'canceled',
        terminalVia: 'timeout',
      });
      const { client } = await g.fleet.agentClient('ops');
      const remote = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
      expect(remote.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    } finally {
      await g.stop();
    }
  });
});
