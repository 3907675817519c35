/**
 * The task tracker of a gateway (`createGateway`) against a real slow @a2a-js/sdk agent (working,
 * then completed with deltas) and a real SQLite file: poll only, push only (bodies produced by the
 * SDK's own sender), and push racing poll — one world.state.delta per task every time.
 */
import { randomUUID } from 'node:crypto';
import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkPush } from './support/sdk-push.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import type { TestGateway, World } from './support/gateway.js';
import { gateway, startCallbackServer, until, world } from './support/gateway.js';
import { createPushToken, createStoreTaskRecords } from '../src/tasks/index.js';

/** Starts a call that returns at once with a working task, and hands it to the tracker. */
async function startTask(g: TestGateway, pushToken?: string): Promise<string> {
  const t = g.tracker;
  const result = await g.gw.call('ops', 'pr_review', 'go', { mode: 'return-immediately' });
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('task tracker', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(40);
  });
  afterAll(() => w.close());

  it('finishes a slow task via poll, with one world.state.delta', async () => {
    const g = await gateway(w, { polling: { intervalMs: 15 } });
    try {
      const taskId = await startTask(g);
      await until(() => deltasOf(w, taskId).length > 0);
      await sleep(100);
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
    const g = await gateway(w, { polling: { intervalMs: 60_000 } });
    const receiver = await startCallbackServer(g.gw.pushReceiver);
    try {
      const token = createPushToken();
      const taskId = await startTask(g, token);
      const { client } = await g.fleet.agentClient('ops');
      await sleep(80);
      const done = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
      await sdkPush(receiver.url(taskId), done, token);
      await sdkPush(receiver.url(taskId), done, token); // the agent retries: still one event
      await until(() => deltasOf(w, taskId).length > 0);
      await sleep(50);
      expect(deltasOf(w, taskId)).toHaveLength(1);
      expect(g.tracker.claims()).toMatchObject({ push: 1, poll: 0 });
    } finally {
      await receiver.close();
      await g.stop();
    }
  });

  it('records a terminal reply durably, so a later push or poll of the task is a no-op', async () => {
    const g = await gateway(w);
    try {
      const result = await g.gw.call('ops', 'pr_review', 'go');
      expect(result.terminal).toBe(true);
      const taskId = result.task!.id;
      await until(() => deltasOf(w, taskId).length > 0);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        state: 'completed',
        terminalVia: 'reply',
        skill: 'pr_review',
      });
      expect(await g.tracker.observe('ops', result.task!, 'push')).toBe(false);
      await sleep(50);
      expect(deltasOf(w, taskId)).toHaveLength(1);
    } finally {
      await g.stop();
    }
  });

  it('publishes exactly one world.state.delta per task when push and poll race, 200 times', async () => {
    const g = await gateway(w, { polling: { intervalMs: 60_000, perAgentConcurrency: 64 } });
    const receiver = await startCallbackServer(g.gw.pushReceiver);
    const { client } = await g.fleet.agentClient('ops');
    try {
      const ids: string[] = [];
      for (let batch = 0; batch < 10; batch += 1) {
        const tokens = Array.from({ length: 20 }, () => createPushToken());
        const started = await Promise.all(
          tokens.map(async (token) => ({ token, id: await startTask(g, token) })),
        );
        await sleep(80);
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
      await sleep(100);
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
    const a = await gateway(w, { polling: { intervalMs: 60_000 } });
    const taskId = await startTask(a);
    await a.stop();
    await sleep(80); // the agent finishes meanwhile
    expect(deltasOf(w, taskId)).toHaveLength(0);

    // Gateway B starts on the same store: its start reloads the task, which completes once.
    const b = await gateway(w, { polling: { intervalMs: 15 } });
    try {
      await until(() => deltasOf(w, taskId).length > 0);
      expect(b.tracker.claims().recovery).toBe(1);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        terminalVia: 'recovery',
      });
      // Gateway A comes back to life and sees the same terminal task: a no-op.
      const back = await gateway(w, { polling: { intervalMs: 60_000 } });
      try {
        const { client } = await back.fleet.agentClient('ops');
        const done = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
        const result = await back.fleet.terminal.settle('ops', done, 'poll', {
          call: { agent: 'ops', skill: 'pr_review', correlationId: 'c', startedAt: 0 },
        });
        expect(result).toEqual({ settled: false, reason: 'claimed' });
      } finally {
        await back.stop();
      }
      await sleep(100);
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
    const g = await gateway(w, {
      polling: { intervalMs: 60_000 },
      pushBaseUrl: `${server.base}/`,
    });
    server.bind(g.gw.pushReceiver);
    try {
      const taskId = await startTask(g);
      const record = await createStoreTaskRecords(w.store.db).get('ops', taskId);
      expect(record?.pushTokenHash).toMatch(/^[0-9a-f]{64}$/);
      await until(() => deltasOf(w, taskId).length > 0);
      await sleep(80);
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
    const dying = await gateway(w, { relay: false });
    const result = await dying.gw.call('ops', 'pr_review', 'go');
    await dying.stop();
    await sleep(50);
    const taskId = result.task!.id;
    expect(deltasOf(w, taskId)).toHaveLength(0);
    // The next start relays what the outbox holds; nothing is published twice.
    const next = await gateway(w);
    try {
      await until(() => deltasOf(w, taskId).length > 0);
      await sleep(80);
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

  it('hands input-required to the dispatch once (awaiting-input), never reporting it as an end', async () => {
    const waiting: EventEnvelope[] = [];
    const sub = await w.bus.subscribe(
      'skill.dispatch.awaiting-input',
      (e) => void waiting.push(e),
      {
        name: `awaiting-${randomUUID()}`,
      },
    );
    const g = await gateway(w, { polling: { intervalMs: 10 }, dispatchMode: 'return-immediately' });
    try {
      const record = await g.gw
        .dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' })
        .answered();
      const taskId = record.taskId!;
      await until(() => waiting.length > 0);
      await sleep(60);
      expect(waiting.map((e) => (e.payload as { id: string }).id)).toEqual([record.id]);
      expect(await g.gw.dispatchRecord(record.id)).toMatchObject({ status: 'awaiting-input' });
      expect(g.tracker.size).toBe(1);
      expect(deltasOf(w, taskId)).toHaveLength(0);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        state: 'input-required',
        terminalAt: null,
      });
    } finally {
      await sub.unsubscribe();
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
    const g = await gateway(w, { polling: { intervalMs: 20 }, maxTrackingTimeMs: 100 });
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
