/**
 * The push receiver end to end: real HTTP, bodies produced by the SDK's own
 * DefaultPushNotificationSender (v1.0) and the v0.3 wire fixtures, task records and the terminal
 * claim in a real SQLite file and PostgreSQL.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkPush } from './support/sdk-push.js';
import { threeArtifactTask } from './fixtures/wire-fixtures.js';
import { createInMemoryEventBus, createOutboxRelay, writeOutboxEvent } from '../src/bus/index.js';
import { deterministicEventId } from '../src/protocol/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import type { NormalizedStreamEvent } from '../src/protocol/index.js';
import { extractWorldStateDeltas, isTerminalState } from '../src/protocol/index.js';
import type { TaskRecord, TaskRecordStore } from '../src/tasks/index.js';
import {
  createPushReceiver,
  createPushToken,
  createStoreTaskRecords,
  hashPushToken,
} from '../src/tasks/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';

const pgUp = await requirePostgres();

interface Receiver {
  url: (taskId: string) => string;
  events: { record: TaskRecord; event: NormalizedStreamEvent }[];
  close: () => Promise<void>;
}

/** A real HTTP server mounting the framework-free receiver at POST /callbacks/a2a/:taskId. */
async function startReceiver(
  records: TaskRecordStore,
  onEvent: (record: TaskRecord, event: NormalizedStreamEvent) => Promise<void> = () =>
    Promise.resolve(),
): Promise<Receiver> {
  const events: Receiver['events'] = [];
  const receive = createPushReceiver({
    records,
    onEvent: async (record, event) => {
      events.push({ record, event });
      await onEvent(record, event);
    },
  });
  const server: Server = createServer((req, res) => {
    const match = /^\/callbacks\/a2a\/([^/]+)$/.exec(req.url ?? '');
    if (req.method !== 'POST' || match === null) {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receive({
        taskId: decodeURIComponent(match[1]!),
        headers: req.headers,
        body: Buffer.concat(chunks),
      })
        .then((answer) => {
          res
            .writeHead(answer.status, { 'content-type': 'application/json' })
            .end(JSON.stringify(answer.body));
        })
        .catch((error: unknown) => res.writeHead(500).end(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (taskId) => `http://127.0.0.1:${port}/callbacks/a2a/${encodeURIComponent(taskId)}`,
    events,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function working(task: Task): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: task.id,
        contextId: task.contextId,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
        metadata: undefined,
      },
    },
  };
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pgUp)(`push receiver on ${backend}`, () => {
    let store: GatewayStore;
    let records: TaskRecordStore;
    let dir: string | undefined;
    const schema = uniqueName('push');

    beforeAll(async () => {
      if (backend === 'sqlite') {
        dir = mkdtempSync(join(tmpdir(), 'fleetgate-push-'));
        store = await openGatewayStore(`sqlite:${join(dir, 'tasks.db')}`);
      } else store = await openGatewayStore(PG_URL, { schema });
      records = createStoreTaskRecords(store.db);
    });
    afterAll(async () => {
      if (backend === 'postgres')
        await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
      await store.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    async function track(task: Task, token: string): Promise<void> {
      await records.create({
        agent: 'ops',
        taskId: task.id,
        skill: 'pr_review',
        correlationId: `corr-${task.id}`,
        state: 'working',
        pushTokenHash: hashPushToken(token),
        createdAt: Date.now(),
        updatedAt: Date.now(),
      });
    }

    it('accepts the v1.0 bodies the SDK sender posts, with either auth header', async () => {
      const receiver = await startReceiver(records);
      try {
        for (const scheme of [undefined, 'Bearer']) {
          const task = { ...threeArtifactTask(), id: `t-${scheme ?? 'token'}-${backend}` };
          const token = createPushToken();
          await track(task, token);
          await sdkPush(receiver.url(task.id), task, token, {
            responses: [working(task), { payload: { $case: 'task', value: task } }],
            ...(scheme === undefined ? {} : { scheme }),
          });
        }
        expect(receiver.events.map((e) => e.event.type)).toEqual([
          'statusUpdate',
          'task',
          'statusUpdate',
          'task',
        ]);
        const last = receiver.events.at(-1)!.event;
        expect(last.type === 'task' && last.task.state).toBe('completed');
        expect(
          extractWorldStateDeltas(last.type === 'task' ? last.task : undefined).entries,
        ).toHaveLength(4);
        expect(receiver.events[0]!.record).toMatchObject({ agent: 'ops', skill: 'pr_review' });
      } finally {
        await receiver.close();
      }
    });

    it('accepts v0.3 bodies', async () => {
      const receiver = await startReceiver(records);
      try {
        const token = createPushToken();
        await track({ ...threeArtifactTask(), id: 'task-3a' }, token);
        for (const file of [
          'stream-status-working.v03.json',
          'task-three-artifacts.v03.json',
          'stream-artifact.v03.json',
        ]) {
          const body = readFileSync(new URL(`fixtures/wire/${file}`, import.meta.url), 'utf8');
          const res = await fetch(receiver.url('task-3a'), {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-a2a-notification-token': token },
            body,
          });
          expect(res.status, file).toBe(200);
        }
        expect(receiver.events.map((e) => e.event.type)).toEqual([
          'statusUpdate',
          'task',
          'artifactUpdate',
        ]);
      } finally {
        await receiver.close();
      }
    });

    it('answers 401 for a wrong secret, 404 for an unknown task, 400 with a reason for garbage', async () => {
      const receiver = await startReceiver(records);
      try {
        const token = createPushToken();
        await track({ ...threeArtifactTask(), id: `guarded-${backend}` }, token);
        const post = (taskId: string, headers: Record<string, string>, body: string) =>
          fetch(receiver.url(taskId), {
            method: 'POST',
            headers: { 'content-type': 'application/a2a+json', ...headers },
            body,
          });
        const body = JSON.stringify({
          statusUpdate: { taskId: `guarded-${backend}`, status: { state: 'TASK_STATE_WORKING' } },
        });
        expect(
          (await post(`guarded-${backend}`, { 'x-a2a-notification-token': 'nope' }, body)).status,
        ).toBe(401);
        expect((await post(`guarded-${backend}`, {}, body)).status).toBe(401);
        expect(
          (await post(`guarded-${backend}`, { authorization: `Bearer ${token}x` }, body)).status,
        ).toBe(401);
        expect(
          (await post('no-such-task', { 'x-a2a-notification-token': token }, body)).status,
        ).toBe(404);
        const garbage = await post(
          `guarded-${backend}`,
          { 'x-a2a-notification-token': token },
          '{"hello":',
        );
        expect(garbage.status).toBe(400);
        expect(((await garbage.json()) as { error: { message: string } }).error.message).toMatch(
          /not JSON/,
        );
        const wrongShape = await post(
          `guarded-${backend}`,
          { 'x-a2a-notification-token': token },
          '{"hello":1}',
        );
        expect(wrongShape.status).toBe(400);
        expect(await wrongShape.text()).toContain(
          'none of task, message, statusUpdate, artifactUpdate',
        );
        const otherTask = await post(
          `guarded-${backend}`,
          { 'x-a2a-notification-token': token },
          JSON.stringify({
            statusUpdate: { taskId: 'another', status: { state: 'TASK_STATE_WORKING' } },
          }),
        );
        expect(otherTask.status).toBe(400);
        expect(receiver.events).toEqual([]);
        expect(
          (await post(`guarded-${backend}`, { authorization: `Bearer ${token}` }, body)).status,
        ).toBe(200);
      } finally {
        await receiver.close();
      }
    });

    it('publishes once when the same terminal push arrives twice, or from many paths at once', async () => {
      const bus = createInMemoryEventBus();
      const seen: EventEnvelope[] = [];
      await bus.subscribe('world.state.delta', (e) => void seen.push(e as EventEnvelope), {
        name: 'seen',
      });
      const relay = createOutboxRelay({ db: store.db, bus, pollIntervalMs: 20 });
      const onTerminal = async (
        record: TaskRecord,
        event: NormalizedStreamEvent,
      ): Promise<boolean> => {
        if (event.type !== 'task' || !isTerminalState(event.task.state)) return false;
        const { entries } = extractWorldStateDeltas(event.task);
        return records.claim(
          record.agent,
          record.taskId,
          { via: 'push', state: event.task.state, at: Date.now() },
          (trx) =>
            writeOutboxEvent(
              trx,
              'world.state.delta',
              {
                source: record.agent,
                skill: record.skill,
                deltas: entries,
                taskId: record.taskId,
                correlationId: record.correlationId,
              },
              { id: deterministicEventId('world.state.delta', record.agent, record.taskId) },
            ).then(() => undefined),
        );
      };
      const receiver = await startReceiver(
        records,
        async (record, event) => void (await onTerminal(record, event)),
      );
      try {
        const task = { ...threeArtifactTask(), id: `twice-${backend}` };
        const token = createPushToken();
        await track(task, token);
        const done: StreamResponse = { payload: { $case: 'task', value: task } };
        await sdkPush(receiver.url(task.id), task, token, { responses: [done, done] });
        // Twenty more paths racing for the same terminal task: exactly one claim wins.
        const record = (await records.get('ops', task.id))!;
        const normalized = receiver.events.at(-1)!.event;
        const wins = await Promise.all(
          Array.from({ length: 20 }, () => onTerminal(record, normalized)),
        );
        expect(wins.filter(Boolean)).toEqual([]);
        relay.start();
        await relay.drain();
        await bus.idle();
        expect(seen.map((e) => (e.payload as { taskId: string }).taskId)).toEqual([task.id]);
        expect(await records.get('ops', task.id)).toMatchObject({
          state: 'completed',
          terminalVia: 'push',
        });
        expect((await records.inFlight()).map((r) => r.taskId)).not.toContain(task.id);
      } finally {
        await relay.stop();
        await receiver.close();
        await bus.close();
      }
    });

    it('lets exactly one of many concurrent claims win', async () => {
      const token = createPushToken();
      const task = { ...threeArtifactTask(), id: `race-${backend}` };
      await track(task, token);
      const wins = await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          records.claim('ops', task.id, {
            via: i % 2 === 0 ? 'poll' : 'push',
            state: 'completed',
            at: Date.now(),
          }),
        ),
      );
      expect(wins.filter(Boolean)).toHaveLength(1);
    });
  });
}
