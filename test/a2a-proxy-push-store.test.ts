/**
 * The push delivery of a proxy task's new state is recorded with the state change itself: a
 * replica that stops right after committing the change (before its first try) leaves the delivery
 * due, and another replica's sweeper sends it — once. On a SQLite file and on PostgreSQL, two
 * push senders sharing one store, a real HTTP callback.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskState, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadA2aProxy, type ProxyTaskStore } from '../src/service/proxy/index.js';
import { requirePostgres, uniqueName } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();
const { createProxyTaskStore, createPushDelivery, UNSENT_PUSH_GRACE_MS } = await loadA2aProxy();

function task(id: string, state: TaskState): Task {
  return {
    id,
    contextId: `ctx-${id}`,
    status: { state, timestamp: undefined, message: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

interface Received {
  taskId: string;
  state: string;
}

describe.each(storeVariants(pgUp))(
  'proxy push deliveries recorded with the state change ($kind, direct: $direct)',
  (variant) => {
    const { direct, skip } = variant;
    let opened: TestStore;
    let tasks: ProxyTaskStore;
    let server: Server;
    let url: string;
    const received: Received[] = [];

    beforeAll(async () => {
      if (skip) return;
      opened = await openTestStore(variant, 'fgproxypush', 4);
      const { store } = opened;
      // A SQLite store's direct access, as the gateway passes it; or kysely alone.
      tasks = createProxyTaskStore(store.db, direct ? { sqlite: store.sqlite } : {});
      server = createServer((req, res) => {
        let text = '';
        req.on('data', (chunk: Buffer) => (text += chunk.toString()));
        req.on('end', () => {
          const body = JSON.parse(text) as { task?: { id?: string; status?: { state?: string } } };
          received.push({ taskId: body.task?.id ?? '', state: body.task?.status?.state ?? '' });
          res.writeHead(200).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    });

    afterAll(async () => {
      if (skip) return;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await opened.remove();
    });

    async function openTask(id: string, at: number): Promise<void> {
      await tasks.claim({
        id,
        agent: 'ops',
        caller: 'alice',
        messageId: `m-${id}`,
        contextId: `ctx-${id}`,
        state: 'working',
        task: task(id, TaskState.TASK_STATE_WORKING),
        protocol: '1.0',
        createdAt: at,
      });
      await tasks.setPush(
        {
          taskId: id,
          configId: 'hook',
          config: {
            tenant: '',
            id: 'hook',
            taskId: id,
            url,
            token: 't',
            authentication: undefined,
          },
          protocol: '1.0',
        } as never,
        at,
      );
    }

    function sender(clock: { now: number }) {
      return createPushDelivery({
        store: tasks,
        attempts: 3,
        backoffMs: 50,
        timeoutMs: 2000,
        sweepMs: 0,
        now: () => clock.now,
        onError: () => undefined,
      });
    }

    it.skipIf(skip)(
      'a change whose replica stopped before its first try is sent by another replica, once',
      async () => {
        const clock = { now: Date.now() };
        const id = uniqueName('stopped');
        await openTask(id, clock.now);
        // Replica A commits the terminal state, then stops before it claims the delivery.
        const { changed } = await tasks.update(id, {
          task: task(id, TaskState.TASK_STATE_COMPLETED),
          at: clock.now,
        });
        expect(changed).toBe(true);
        expect(await tasks.deliveries(id)).toMatchObject([
          { configId: 'hook', state: 'completed', status: 'sending', attempts: 0 },
        ]);
        const b = sender(clock);
        const c = sender(clock);
        // Within the grace the change's own replica could still take it: nobody else does.
        await Promise.all([b.sweep(), c.sweep()]);
        await Promise.all([b.idle(), c.idle()]);
        expect(received.filter((r) => r.taskId === id)).toEqual([]);
        clock.now += UNSENT_PUSH_GRACE_MS + 1;
        await Promise.all([b.sweep(), c.sweep()]);
        await Promise.all([b.idle(), c.idle()]);
        expect(received.filter((r) => r.taskId === id)).toEqual([
          { taskId: id, state: 'TASK_STATE_COMPLETED' },
        ]);
        expect(await tasks.deliveries(id)).toMatchObject([
          { state: 'completed', status: 'delivered', attempts: 1 },
        ]);
        b.stop();
        c.stop();
      },
    );

    it.skipIf(skip)(
      "the change's own replica takes the recorded delivery at once; a sweep later sends nothing more",
      async () => {
        const clock = { now: Date.now() };
        const id = uniqueName('live');
        await openTask(id, clock.now);
        const a = sender(clock);
        const b = sender(clock);
        const { task: stored } = await tasks.update(id, {
          task: task(id, TaskState.TASK_STATE_INPUT_REQUIRED),
          at: clock.now,
        });
        await a.notify(stored!.task, stored!.state);
        await a.notify(stored!.task, stored!.state);
        await a.idle();
        clock.now += UNSENT_PUSH_GRACE_MS + 1;
        await b.sweep();
        await b.idle();
        // An update to the same state records nothing new.
        await tasks.update(id, {
          task: task(id, TaskState.TASK_STATE_INPUT_REQUIRED),
          at: clock.now,
        });
        clock.now += UNSENT_PUSH_GRACE_MS + 1;
        await b.sweep();
        await b.idle();
        expect(received.filter((r) => r.taskId === id)).toEqual([
          { taskId: id, state: 'TASK_STATE_INPUT_REQUIRED' },
        ]);
        expect(await tasks.deliveries(id)).toMatchObject([
          { state: 'input-required', status: 'delivered', attempts: 1 },
        ]);
        a.stop();
        b.stop();
      },
    );
  },
);
