/**
 * Two gateway replicas (`createGateway`) on one PostgreSQL schema and one JetStream stream, each
 * with its own store handle and bus connection. Replica A starts 500 tasks on a
 * real @a2a-js/sdk agent (return-immediately, finishing a little later) and receives their push
 * notifications (bodies from the SDK's own sender); replica B learns the same tasks by restart
 * recovery from the shared database and polls them. A separate JetStream consumer counts
 * `world.state.delta`: one per task, none missing, none doubled.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { TaskState } from '@a2a-js/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sdkPush } from './support/sdk-push.js';
import type { RunningAgent } from '../examples/agents/harness.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import type { EventBus } from '../src/bus/index.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import type { FleetClient } from '../src/dispatch/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import type { TaskTracker, TaskTrackerOptions } from '../src/tasks/index.js';
import { createPushToken } from '../src/tasks/index.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import type { Gateway, GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { assembleGateway } from '../src/service/internal.js';

const pgUp = await requirePostgres();
const natsUp = await requireNats();

const TASKS = 500;
const BATCH = 25;
/** How long the agent works on a task before it completes it. */
const AGENT_DELAY_MS = 120;
/** Pushes reach replica A up to this long after the task completed (so B's polls win some). */
const PUSH_JITTER_MS = 200;

/** One gateway replica: every object its own, only the database schema and the stream shared. */
interface Replica {
  store: GatewayStore;
  bus: JetStreamEventBus<OpenTopics>;
  gw: Gateway;
  /** `parts.fleet` and `parts.tracker`. */
  fleet: FleetClient;
  tracker: TaskTracker;
  /** Publishes of the replica that JetStream reported as duplicates (`Nats-Msg-Id`). */
  duplicates: () => number;
  /** Failures of the replica's background work (polls, hooks, relay, consumers). */
  errors: unknown[];
  stop: () => Promise<void>;
}

interface Shared {
  schema: string;
  stream: string;
  prefix: string;
  agent: RunningAgent;
}

async function replica(
  s: Shared,
  name: string,
  polling: NonNullable<TaskTrackerOptions['polling']>,
): Promise<Replica> {
  const store = await openGatewayStore(PG_URL, { schema: s.schema, poolSize: 6 });
  const bus = await createJetStreamEventBus<OpenTopics>({
    servers: NATS_URL,
    stream: s.stream,
    subjectPrefix: s.prefix,
    name: `fleetgate-${name}`,
  });
  let duplicates = 0;
  const errors: unknown[] = [];
  // The replica's view of the bus, counting what the server dropped as a duplicate.
  const counting: EventBus<OpenTopics> = {
    publish: async (topic, payload, options) => {
      const result = await bus.publish(topic, payload, options);
      if (result.duplicate) duplicates += 1;
      return result;
    },
    subscribe: (pattern, handler, options) => bus.subscribe(pattern, handler, options),
    close: () => bus.close(),
    maxPayloadBytes: bus.maxPayloadBytes,
  };
  // On PostgreSQL the relay locks the outbox rows of each round: no row goes out twice.
  const { gateway: gw, parts } = await assembleGateway(
    { agents: [{ name: 'ops', url: s.agent.url }] },
    {
      store,
      bus: counting,
      gate: ALLOW_ALL,
      relay: { pollIntervalMs: 50 },
      tracking: { polling },
      onError: (error, where) => errors.push({ replica: name, where, error }),
    },
  );
  return {
    store,
    bus,
    gw,
    fleet: parts.fleet,
    tracker: parts.tracker,
    duplicates: () => duplicates,
    errors,
    stop: () => gw.close(),
  };
}

/** A real HTTP server mounting a tracker's push receiver; counts the answers by status. */
async function mountReceiver(gw: Gateway): Promise<{
  url: (id: string) => string;
  statuses: Map<number, number>;
  close: () => Promise<void>;
}> {
  const receive = gw.pushReceiver;
  const statuses = new Map<number, number>();
  const server: Server = createServer((req, res) => {
    const taskId = decodeURIComponent((req.url ?? '').replace(/^\/callbacks\/a2a\//, ''));
    receive({ taskId, headers: req.headers, body: req }).then(
      (a) => {
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        res
          .writeHead(a.status, {
            'content-type': 'application/json',
            ...(a.discardBody === true ? { connection: 'close' } : {}),
          })
          .end(JSON.stringify(a.body));
      },
      (error: unknown) => {
        statuses.set(500, (statuses.get(500) ?? 0) + 1);
        res.writeHead(500).end(String(error));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (id) => `http://127.0.0.1:${port}/callbacks/a2a/${encodeURIComponent(id)}`,
    statuses,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Messages the stream holds on `subject`, asked of the server on a connection of its own. */
async function storedOn(stream: string, subject: string): Promise<number> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  } finally {
    await nc.close();
  }
}

describe.skipIf(!pgUp || !natsUp)('two gateway replicas on PostgreSQL + JetStream', () => {
  const name = uniqueName('fgrep');
  let s: Shared | undefined;
  let a: Replica | undefined;
  let b: Replica | undefined;
  let observer: JetStreamEventBus<OpenTopics> | undefined;

  beforeAll(async () => {
    const agent = await startOpsAgent({
      behaviour: async (call) => ({ ...(await opsBehaviour(call)), delayMs: AGENT_DELAY_MS }),
    });
    s = {
      schema: name,
      stream: name.toUpperCase(),
      prefix: name,
      agent,
    };
    // Opened one after the other: the first open creates the schema and migrates it.
    a = await replica(s, 'a', { intervalMs: 60_000 }); // A: pushes only, its polls never come
    b = await replica(s, 'b', { intervalMs: 40, maxIntervalMs: 400, perAgentConcurrency: 16 });
    observer = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream: s.stream,
      subjectPrefix: s.prefix,
      name: 'fleetgate-observer',
    });
  });

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await observer?.close();
    await a?.bus.close();
    await b?.bus.close();
    if (s !== undefined) await deleteNatsStream(s.stream);
    if (a !== undefined) {
      await sql`drop schema if exists ${sql.id(name)} cascade`.execute(a.store.db);
    }
    await a?.store.close();
    await b?.store.close();
    await s?.agent.close();
  });

  it(
    'publishes exactly one world.state.delta per task on NATS when 500 tasks finish via push to ' +
      'one replica and poll on the other',
    async () => {
      const A = a!;
      const B = b!;
      // A consumer of its own, from the start of the stream: what every downstream reader sees.
      const seen: EventEnvelope[] = [];
      await observer!.subscribe('world.state.delta', (e) => void seen.push(e), {
        name: 'replica-test-observer',
        from: 'all',
      });
      // The SDK's sender logs every push it sends with console.info: 500 lines of noise.
      const quiet = vi.spyOn(console, 'info').mockImplementation(() => undefined);
      const receiver = await mountReceiver(A.gw);
      const { client } = await A.fleet.agentClient('ops');

      /** Waits until the agent finished the task, then pushes it to A after a random delay. */
      const pushWhenDone = async (taskId: string, token: string): Promise<void> => {
        await sleep(AGENT_DELAY_MS);
        for (let tries = 0; tries < 500; tries += 1) {
          const task = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
          if (task.status?.state === TaskState.TASK_STATE_COMPLETED) {
            await sleep(Math.random() * PUSH_JITTER_MS);
            await sdkPush(receiver.url(taskId), task, token);
            return;
          }
          await sleep(20);
        }
        throw new Error(`task ${taskId} did not complete at the agent`);
      };

      const ids: string[] = [];
      const pushes: Promise<void>[] = [];
      let recovered = 0;
      try {
        for (let start = 0; start < TASKS; start += BATCH) {
          const started = await Promise.all(
            Array.from({ length: BATCH }, async () => {
              const token = createPushToken();
              const result = await A.gw.call('ops', 'pr_review', 'go', {
                mode: 'return-immediately',
              });
              expect(result.terminal).toBe(false);
              const taskId = result.task!.id;
              await A.tracker.follow({
                agent: 'ops',
                skill: 'pr_review',
                correlationId: result.correlationId,
                taskId,
                state: result.state === 'message' ? 'unknown' : result.state,
                pushToken: token,
              });
              return { taskId, token };
            }),
          );
          // B knows only what the shared database tells it: the in-flight records A wrote.
          recovered += await B.tracker.recover();
          for (const { taskId, token } of started) {
            ids.push(taskId);
            pushes.push(pushWhenDone(taskId, token));
          }
        }
        await Promise.all(pushes);
        await until(
          () => new Set(seen.map((e) => (e.payload as { taskId: string }).taskId)).size >= TASKS,
          30_000,
          `${TASKS} world.state.delta on NATS`,
        );
        // Both relays drain the shared outbox; then give late re-sends a moment to show up.
        await Promise.all([A.gw.settle(), B.gw.settle()]);
        await sleep(300);

        expect(receiver.statuses).toEqual(new Map([[200, TASKS]]));
        expect(recovered).toBeGreaterThanOrEqual(TASKS);

        const byTask = new Map<string, number>();
        for (const e of seen) {
          const taskId = (e.payload as { taskId: string }).taskId;
          byTask.set(taskId, (byTask.get(taskId) ?? 0) + 1);
        }
        expect(seen).toHaveLength(TASKS);
        expect([...byTask.keys()].sort()).toEqual([...ids].sort());
        expect([...byTask.values()].every((n) => n === 1)).toBe(true);
        expect(new Set(seen.map((e) => e.id)).size).toBe(TASKS);
        // What the stream itself holds, independent of any consumer.
        expect(await storedOn(s!.stream, `${s!.prefix}.world.state.delta`)).toBe(TASKS);

        // Each task was claimed once, by one path of one replica, and both paths won some.
        const rows = await A.store.db
          .selectFrom('fleetgate_task')
          .select(['terminal_via'])
          .where('task_id', 'in', ids)
          .execute();
        expect(rows).toHaveLength(TASKS);
        const via = new Map<string | null, number>();
        for (const r of rows) via.set(r.terminal_via, (via.get(r.terminal_via) ?? 0) + 1);
        const claimsA = A.tracker.claims();
        const claimsB = B.tracker.claims();
        expect(claimsA.push + claimsB.recovery).toBe(TASKS);
        expect(via).toEqual(
          new Map([
            ['push', claimsA.push],
            ['recovery', claimsB.recovery],
          ]),
        );
        expect(claimsA.push).toBeGreaterThan(0);
        expect(claimsB.recovery).toBeGreaterThan(0);
        expect(B.tracker.size).toBe(0);
        expect([...A.errors, ...B.errors]).toEqual([]);
        const outbox = await A.store.db
          .selectFrom('fleetgate_outbox')
          .select((eb) => [
            eb.fn.countAll<number>().as('n'),
            eb.fn.count<number>('sent_at').as('sent'),
          ])
          .where('topic', '=', 'world.state.delta')
          .executeTakeFirstOrThrow();
        expect({ n: Number(outbox.n), sent: Number(outbox.sent) }).toEqual({
          n: TASKS,
          sent: TASKS,
        });
        console.log(
          `replicas: A push ${claimsA.push} (lost ${claimsA.lost}), B recovery ${claimsB.recovery} ` +
            `(lost ${claimsB.lost}); relay duplicates dropped by JetStream A ${A.duplicates()} ` +
            `B ${B.duplicates()}; A still tracking ${A.tracker.size}`,
        );
      } finally {
        await Promise.allSettled(pushes);
        await receiver.close();
        quiet.mockRestore();
      }
    },
    60_000,
  );
});
