/**
 * The push receiver end to end: real HTTP, bodies produced by the SDK's own
 * DefaultPushNotificationSender (v1.0) and the v0.3 wire fixtures, task records and the terminal
 * claim in a real SQLite file and PostgreSQL.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkPush } from './support/sdk-push.js';
import { threeArtifactTask } from './fixtures/wire-fixtures.js';
import { createInMemoryEventBus, createOutboxRelay } from '../src/bus/index.js';
import { deterministicEventId } from '../src/protocol/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import type { NormalizedStreamEvent } from '../src/protocol/index.js';
import { extractWorldStateDeltas, isTerminalState } from '../src/protocol/index.js';
import type { PushReceiverOptions, TaskRecord, TaskRecordStore } from '../src/tasks/index.js';
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
  /** Bytes the server had read from each push's socket when the receiver answered. */
  bytesRead: number[];
  close: () => Promise<void>;
}

/** A real HTTP server mounting the framework-free receiver at POST /callbacks/a2a/:taskId. */
async function startReceiver(
  records: TaskRecordStore,
  onEvent: (record: TaskRecord, event: NormalizedStreamEvent) => Promise<void> = () =>
    Promise.resolve(),
  limits: Pick<PushReceiverOptions, 'maxBodyBytes' | 'bodyTimeoutMs'> = {},
): Promise<Receiver> {
  const events: Receiver['events'] = [];
  const bytesRead: number[] = [];
  const receive = createPushReceiver({
    ...limits,
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
    // The body goes to the receiver unread: it authenticates first and reads within its limits.
    receive({ taskId: decodeURIComponent(match[1]!), headers: req.headers, body: req })
      .then((answer) => {
        bytesRead.push(req.socket.bytesRead);
        res
          .writeHead(answer.status, {
            'content-type': 'application/json',
            ...(answer.discardBody === true ? { connection: 'close' } : {}),
          })
          .end(JSON.stringify(answer.body));
      })
      .catch((error: unknown) => res.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (taskId) => `http://127.0.0.1:${port}/callbacks/a2a/${encodeURIComponent(taskId)}`,
    events,
    bytesRead,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * POSTs a body of `total` bytes, produced while it is sent (never held in memory), and stops
 * sending as soon as the answer arrives. `declared` sends a Content-Length; `drip` sends one small
 * chunk every few milliseconds.
 */
function streamPost(
  url: string,
  headers: Record<string, string>,
  total: number,
  declared = false,
  drip?: { chunkBytes: number; everyMs: number },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(declared ? { 'content-length': String(total) } : {}),
        ...headers,
      },
    });
    let answered = false;
    let sent = 0;
    const chunk = Buffer.alloc(drip?.chunkBytes ?? 64 * 1024, 0x20);
    const pump = (): void => {
      while (!answered && sent < total) {
        const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
        sent += piece.length;
        if (drip !== undefined) {
          request.write(piece);
          setTimeout(pump, drip.everyMs);
          return;
        }
        if (!request.write(piece)) {
          request.once('drain', pump);
          return;
        }
      }
      if (!answered) request.end();
    };
    request.on('response', (response) => {
      answered = true;
      const parts: Buffer[] = [];
      response.on('data', (c: Buffer) => parts.push(c));
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') });
      });
    });
    // The server may close while the body is still going out: the answer counts, not the pipe.
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
    pump();
  });
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
      records = createStoreTaskRecords(store.db, { sqlite: store.sqlite });
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

    it('answers 401 for a wrong secret and for an unknown task alike, 400 with a reason for garbage', async () => {
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
        // An unknown task id gets the very answer a wrong secret gets: ids cannot be probed.
        const unknown = await post('no-such-task', { 'x-a2a-notification-token': token }, body);
        const wrong = await post(`guarded-${backend}`, { 'x-a2a-notification-token': 'x' }, body);
        expect(unknown.status).toBe(401);
        expect(await unknown.text()).toBe(await wrong.text());
        // Only the Bearer scheme carries the secret (in any case).
        for (const scheme of ['Basic', 'Token', 'Digest']) {
          expect(
            (await post(`guarded-${backend}`, { authorization: `${scheme} ${token}` }, body))
              .status,
            scheme,
          ).toBe(401);
        }
        expect(
          (await post(`guarded-${backend}`, { authorization: `bearer ${token}` }, body)).status,
        ).toBe(200);
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
        expect(receiver.events).toHaveLength(1);
        expect(
          (await post(`guarded-${backend}`, { authorization: `Bearer ${token}` }, body)).status,
        ).toBe(200);
      } finally {
        await receiver.close();
      }
    });

    it('answers an unauthenticated push of a huge body without reading it', async () => {
      const receiver = await startReceiver(records);
      try {
        const token = createPushToken();
        await track({ ...threeArtifactTask(), id: `huge-${backend}` }, token);
        for (const headers of [
          {},
          { 'x-a2a-notification-token': 'wrong' },
          { authorization: `Basic ${token}` },
        ]) {
          const answer = await streamPost(receiver.url(`huge-${backend}`), headers, 256 << 20);
          expect(answer.status).toBe(401);
          expect(answer.body).toContain('FLEETGATE_PUSH_UNAUTHORIZED');
        }
        const unknown = await streamPost(receiver.url('nobody'), {}, 256 << 20);
        expect(unknown.status).toBe(401);
        // At most what the socket buffers before the answer: nowhere near 256 MiB.
        for (const read of receiver.bytesRead) expect(read).toBeLessThan(4 << 20);
        expect(receiver.events).toEqual([]);
      } finally {
        await receiver.close();
      }
    });

    it('stops reading an authenticated body past the limit (413), declared or streamed', async () => {
      const limit = 64 * 1024;
      const receiver = await startReceiver(records, undefined, { maxBodyBytes: limit });
      try {
        const token = createPushToken();
        const id = `big-${backend}`;
        await track({ ...threeArtifactTask(), id }, token);
        const headers = { 'x-a2a-notification-token': token };
        const chunked = await streamPost(receiver.url(id), headers, 64 << 20);
        expect(chunked.status).toBe(413);
        expect(chunked.body).toContain(`limit of ${limit} bytes`);
        const declared = await streamPost(receiver.url(id), headers, 64 << 20, true);
        expect(declared.status).toBe(413);
        for (const read of receiver.bytesRead) expect(read).toBeLessThan(4 << 20);
        // Within the limit, the same push goes through.
        const ok = await fetch(receiver.url(id), {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({
            statusUpdate: { taskId: id, status: { state: 'TASK_STATE_WORKING' } },
          }),
        });
        expect(ok.status).toBe(200);
      } finally {
        await receiver.close();
      }
    });

    it('gives up on a body that drips in too slowly (408)', async () => {
      const receiver = await startReceiver(records, undefined, { bodyTimeoutMs: 300 });
      try {
        const token = createPushToken();
        const id = `drip-${backend}`;
        await track({ ...threeArtifactTask(), id }, token);
        const answer = await streamPost(
          receiver.url(id),
          { 'x-a2a-notification-token': token },
          1 << 20,
          false,
          { chunkBytes: 1, everyMs: 50 },
        );
        expect(answer.status).toBe(408);
        expect(answer.body).toContain('not received within 300 ms');
        expect(receiver.events).toEqual([]);
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
      const relay = createOutboxRelay({
        db: store.db,
        sqlite: store.sqlite,
        bus,
        pollIntervalMs: 20,
      });
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
          [
            {
              topic: 'world.state.delta',
              payload: {
                source: record.agent,
                skill: record.skill,
                deltas: entries,
                taskId: record.taskId,
                correlationId: record.correlationId,
              },
              id: deterministicEventId('world.state.delta', record.agent, record.taskId),
            },
          ],
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
