/**
 * store-paths: what each room's SQLite direct path buys. On a SQLite store, five rooms run their
 * hot statements as prepared statements on the store's direct access (`store.sqlite`, writes
 * group-committed) instead of through kysely; this runs, per room, the store operations ONE
 * proxied call (`proxy-vs-direct`: a blocking `SendMessage` to ops `sitrep`, autonomous, answered
 * with a completed task) makes on it, once with the direct access and once through kysely only,
 * each on a fresh SQLite file store of its own:
 *
 * - `dispatch`: the dispatch records of the call as `fleetgate start` runs it (the gate lets it go
 *   at once): `create` with `skill.dispatch.requested` and `skill.dispatch.started`, the holder
 *   and the ids sent, then `update` to `completed` with `skill.dispatch.completed` (the dispatcher
 *   reads nothing more: the task ended in the reply that named it, so `onTaskSettled` stops
 *   before `byTask`);
 * - `tasks`: the terminal claim of the call's task, with its two outbox rows (`cost.sample`,
 *   `world.state.delta`), group `loop` (other calls in flight);
 * - `world`: one unit of work of the materialiser applying the call's delta (one `set` on
 *   `board`), with its `world.state.updated` row;
 * - `relay`: one relay round reading the call's six outbox rows (requested, started, completed,
 *   cost sample, world delta, world update), publishing them to an in-memory bus and marking them
 *   sent (a running relay on SQLite mostly takes them from the writers instead of reading them:
 *   `bus/outbox-handover.ts`);
 * - `proxy`: the proxy task of the call: `claim`, then the `update` to completed (the blocking
 *   path syncs once, with the row it opened: no `get`).
 *
 * Eight sequences are in flight at a time, as eight concurrent calls would be (the group commit
 * batches their writes), except the relay's: a relay runs one round at a time, so its rounds run
 * one after the other (the rows of a round's calls are written before its window). The store's
 * checkpointer is told after every eighth sequence on both paths (in the gateway the other rooms'
 * commits tell it). Each round is measured as process CPU (`process.cpuUsage`, user + system, its
 * threads included: the checkpoints) from its first sequence until its writes committed and its
 * last checkpoint ran, divided by its sequences; the two paths alternate in rounds after a
 * warm-up round of each, and the rounds are printed on stderr.
 *
 * - `<room>_direct_cpu_us_per_call`, `<room>_kysely_cpu_us_per_call`: the median round of each;
 * - `<room>_direct_saves_us_per_call`: the median of the rounds' differences (kysely − direct,
 *   each round against the one beside it).
 *
 * How to read it: a room's saving set against the gateway's CPU per proxied call
 * (`gateway_cpu_ms_per_call` in proxy-vs-direct, ~1.5 ms) is the share of that figure its fast
 * path buys; the house rule keeps a fast path that buys ≥ 3% (≥ ~45 µs of 1.5 ms) and deletes one
 * that buys less. The percentages are printed on stderr against {@link GATEWAY_CPU_US_PER_CALL}.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import {
  OUTBOX_WRITERS,
  createEventIdGenerator,
  createInMemoryEventBus,
  createOutboxRelay,
  insertOutboxRows,
  type OutboxEventInput,
} from '../src/bus/index.js';
import {
  createStoreDispatchRecords,
  type DispatchRecord,
  type DispatchSend,
} from '../src/dispatch/index.js';
import { newRecordId } from '../src/protocol/ids/index.js';
import { openGatewayStore, type GatewayStore } from '../src/service/index.js';
import { loadA2aProxy } from '../src/service/proxy/index.js';
import { createStoreTaskRecords } from '../src/tasks/index.js';
import {
  createSqlWorldStore,
  createWorldMaterialiser,
  type WorldStateDeltaEnvelope,
} from '../src/world/index.js';
import { note, report } from './report.js';

const BENCH = 'store-paths';
/** Sequences in flight at a time: eight concurrent calls. */
const IN_FLIGHT = 8;
/** Measured rounds of each path, after one warm-up round of each. */
const ROUNDS = 8;
/** The wait at the end of a round's window for its last checkpoint (the worker's interval is 100 ms). */
const SETTLE_MS = 150;
/** `gateway_cpu_ms_per_call` of proxy-vs-direct, in µs: what the savings are set against. */
const GATEWAY_CPU_US_PER_CALL = 1500;

const AGENT = 'ops';
const SKILL = 'sitrep';
/** The delta ops `sitrep` reports (examples/agents/ops-agent.ts). */
const DELTAS = [{ domain: 'board', path: 'data.lastSitrep', op: 'set' as const, value: 'green' }];
const REPLY_TEXT = `${SKILL}: ${DELTAS.length} change(s)`;

/** One path of a room, on its own store. */
interface Path {
  /** Unmeasured: what the `calls` sequences of a round need first (the relay's rows). */
  prepare?(calls: number): Promise<void>;
  /** The store operations of one call, as the gateway makes them. */
  call(): Promise<void>;
}

/** A room with an optional direct path. */
interface Room {
  name: string;
  /** Sequences in flight at a time. */
  inFlight: number;
  /** Sequences per round (each round about half a second or less on the slower path). */
  calls: number;
  /** Builds the room on `store`, with the direct access or through kysely only. */
  open(store: GatewayStore, direct: boolean): Promise<Path>;
}

/** What the rooms pass for the direct path: the store's direct access, or nothing. */
/** The `cost.sample` payload of one call's task. */
function costSample(taskId: string): Record<string, unknown> {
  return {
    agent: AGENT,
    skill: SKILL,
    taskId,
    tokensIn: 120,
    tokensOut: 40,
    costUsd: 0.0021,
    wallMs: 3.2,
    success: true,
    measured: 'agent',
  };
}

/** The `world.state.delta` payload of one call's task. */
function worldDelta(taskId: string, correlationId: string): Record<string, unknown> {
  return { source: AGENT, skill: SKILL, deltas: DELTAS, taskId, correlationId, state: 'completed' };
}

function sqliteOf(store: GatewayStore, direct: boolean): { sqlite?: GatewayStore['sqlite'] } {
  return direct ? { sqlite: store.sqlite } : {};
}

function fail(what: string): never {
  throw new Error(`store-paths: ${what}`);
}

// --- The rooms ------------------------------------------------------------------------------

const dispatchRoom: Room = {
  name: 'dispatch',
  inFlight: IN_FLIGHT,
  calls: 1600,
  open(store, direct) {
    const records = createStoreDispatchRecords(store.db, {
      ...sqliteOf(store, direct),
      eventId: createEventIdGenerator(),
    });
    const owner = randomUUID();
    return Promise.resolve({
      async call() {
        const now = Date.now();
        const record: DispatchRecord = {
          id: newRecordId(),
          agent: AGENT,
          skill: SKILL,
          correlationId: newRecordId(),
          status: 'running',
          taskId: null,
          createdAt: now,
          updatedAt: now,
          result: null,
        };
        // `Dispatcher.dispatch` past a gate that lets the call go at once (`decideAtOnce`): the
        // record, its two events, its holder and the ids sent in one unit; then the reply's move.
        const send: DispatchSend = {
          owner,
          messageId: randomUUID(),
          contextId: randomUUID(),
          sentAt: now,
        };
        await records.create(record, {
          announce: [{ topic: 'skill.dispatch.requested' }, { topic: 'skill.dispatch.started' }],
          send,
        });
        const moved = await records.update(record.id, {
          status: 'completed',
          at: Date.now(),
          taskId: randomUUID(),
          result: { state: 'completed', text: REPLY_TEXT },
          announce: { topic: 'skill.dispatch.completed', extra: { state: 'completed' } },
        });
        if (!moved.changed) fail('a dispatch did not move');
      },
    });
  },
};

const tasksRoom: Room = {
  name: 'tasks',
  inFlight: IN_FLIGHT,
  calls: 3600,
  open(store, direct) {
    const records = createStoreTaskRecords(store.db, sqliteOf(store, direct));
    const eventId = createEventIdGenerator();
    return Promise.resolve({
      async call() {
        const taskId = randomUUID();
        const correlationId = newRecordId();
        const at = Date.now();
        const won = await records.claim(
          AGENT,
          taskId,
          {
            via: 'reply',
            state: 'completed',
            at,
            call: { skill: SKILL, correlationId, startedAt: at - 3 },
            group: 'loop',
          },
          [
            {
              topic: 'cost.sample',
              payload: costSample(taskId),
              id: eventId(),
              correlationId,
            },
            {
              topic: 'world.state.delta',
              payload: worldDelta(taskId, correlationId),
              id: eventId(),
              correlationId,
            },
          ],
        );
        if (!won) fail('a terminal claim was lost');
      },
    });
  },
};

const worldRoom: Room = {
  name: 'world',
  inFlight: IN_FLIGHT,
  calls: 3200,
  open(store, direct) {
    const world = createWorldMaterialiser({
      store: createSqlWorldStore({
        db: store.db,
        kind: store.kind,
        outbox: OUTBOX_WRITERS,
        ...sqliteOf(store, direct),
      }),
      bus: createInMemoryEventBus(),
    });
    const eventId = createEventIdGenerator();
    return Promise.resolve({
      async call() {
        const taskId = randomUUID();
        const correlationId = newRecordId();
        const event: WorldStateDeltaEnvelope = {
          id: eventId(),
          topic: 'world.state.delta',
          time: new Date().toISOString(),
          correlationId,
          payload: { source: AGENT, skill: SKILL, taskId, correlationId, deltas: DELTAS },
        };
        const applied = await world.apply(event);
        if (applied.skipped || applied.applied !== DELTAS.length) fail('a delta was not applied');
      },
    });
  },
};

/** The outbox rows one call leaves for the relay (payloads as the rooms write them). */
function rowsOfOneCall(eventId: () => string): OutboxEventInput[] {
  const now = Date.now();
  const correlationId = newRecordId();
  const taskId = randomUUID();
  const record = {
    id: newRecordId(),
    agent: AGENT,
    skill: SKILL,
    correlationId,
    status: 'running',
    taskId: null as string | null,
    createdAt: now,
    updatedAt: now,
    result: null as unknown,
  };
  const completed = {
    ...record,
    status: 'completed',
    taskId,
    result: { state: 'completed', text: REPLY_TEXT },
    state: 'completed',
  };
  const row = (topic: string, payload: unknown): OutboxEventInput => ({
    topic,
    payload,
    id: eventId(),
    correlationId,
  });
  return [
    row('skill.dispatch.requested', record),
    row('skill.dispatch.started', record),
    row('skill.dispatch.completed', completed),
    row('cost.sample', costSample(taskId)),
    row('world.state.delta', worldDelta(taskId, correlationId)),
    row('world.state.updated', { domain: 'board', version: 1, paths: ['data.lastSitrep'] }),
  ];
}

const ROWS_PER_CALL = rowsOfOneCall(() => '').length;

const relayRoom: Room = {
  name: 'relay',
  // One round at a time: a relay never runs two.
  inFlight: 1,
  calls: 1800,
  open(store, direct) {
    const sqlite = store.sqlite ?? fail('the store has no direct access');
    const relay = createOutboxRelay({
      db: store.db,
      ...sqliteOf(store, direct),
      bus: createInMemoryEventBus(),
      // A round takes the rows of one call.
      batchSize: ROWS_PER_CALL,
    });
    const eventId = createEventIdGenerator();
    return Promise.resolve({
      async prepare(calls) {
        // Written the same way for both paths, outside the measured window.
        await sqlite.write((sql) => {
          for (let i = 0; i < calls; i += 1)
            insertOutboxRows(sql, rowsOfOneCall(eventId), Date.now());
        });
      },
      async call() {
        const sent = await relay.relayOnce();
        if (sent !== ROWS_PER_CALL) fail(`a relay round sent ${sent} rows`);
      },
    });
  },
};

/** A client's message to the proxy, as the SDK sends it. */
function clientMessage(ids: { id: string; contextId: string }): Message {
  return {
    messageId: randomUUID(),
    contextId: ids.contextId,
    taskId: ids.id,
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'text', value: 'status' },
        metadata: undefined,
        filename: '',
        mediaType: '',
      },
    ],
    metadata: { 'x-effect-domain-skill': SKILL },
    extensions: [],
    referenceTaskIds: [],
  };
}

const proxyRoom: Room = {
  name: 'proxy',
  inFlight: IN_FLIGHT,
  calls: 3200,
  async open(store, direct) {
    const { createProxyTaskStore } = await loadA2aProxy();
    const tasks = createProxyTaskStore(store.db, sqliteOf(store, direct));
    return {
      async call() {
        const ids = { id: newRecordId(), contextId: randomUUID() };
        const message = clientMessage(ids);
        const fleetgate = { agent: AGENT, skill: SKILL, skillVia: 'metadata', skillReason: '' };
        const submitted: Task = {
          ...ids,
          status: {
            state: TaskState.TASK_STATE_SUBMITTED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          artifacts: [],
          history: [message],
          metadata: { fleetgate },
        };
        const claimed = await tasks.claim({
          ...ids,
          agent: AGENT,
          caller: 'bench',
          messageId: message.messageId,
          state: 'submitted',
          task: submitted,
          protocol: '1.0',
          createdAt: Date.now(),
        });
        if (!claimed.created) fail('a proxy task was not created');
        const completed: Task = {
          ...submitted,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          artifacts: [
            {
              artifactId: randomUUID(),
              name: '',
              description: '',
              parts: [
                {
                  content: { $case: 'text', value: REPLY_TEXT },
                  metadata: undefined,
                  filename: '',
                  mediaType: '',
                },
              ],
              metadata: undefined,
              extensions: [],
            },
          ],
        };
        const updated = await tasks.update(ids.id, { task: completed, at: Date.now() });
        if (!updated.changed) fail('a proxy task did not move');
      },
    };
  },
};

// --- The measurement ------------------------------------------------------------------------

/** One path of a room on its fresh store. */
interface Side {
  label: 'direct' | 'kysely';
  store: GatewayStore;
  path: Path;
  /** CPU µs per call of each measured round. */
  rounds: number[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** One round of `calls` sequences on `side`; resolves its CPU µs per call. */
async function round(room: Room, side: Side, calls: number): Promise<number> {
  const sqlite = side.store.sqlite ?? fail('the store has no direct access');
  await side.path.prepare?.(calls);
  await sqlite.idle();
  await sleep(SETTLE_MS);
  globalThis.gc?.();
  let started = 0;
  let done = 0;
  const caller = async (): Promise<void> => {
    while (started < calls) {
      started += 1;
      await side.path.call();
      done += 1;
      // The checkpointer hears of commits through the direct access only: told here on both
      // paths, as the other rooms' commits tell it in the gateway.
      if (done % IN_FLIGHT === 0) await sqlite.write(() => undefined);
    }
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: room.inFlight }, caller));
  await sqlite.idle();
  await sleep(SETTLE_MS);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

async function openSide(room: Room, label: Side['label'], dirs: string[]): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `fleetgate-bench-store-paths-${room.name}-${label}-`));
  dirs.push(dir);
  const store = await openGatewayStore(`sqlite:${join(dir, 'fleetgate.db')}`);
  if (store.sqlite === undefined) fail('a SQLite store without direct access');
  return { label, store, path: await room.open(store, label === 'direct'), rounds: [] };
}

/** Both paths of `room`, alternating, on fresh stores; reports its three figures. */
async function measureRoom(room: Room): Promise<void> {
  const dirs: string[] = [];
  const sides: Side[] = [];
  try {
    sides.push(await openSide(room, 'direct', dirs), await openSide(room, 'kysely', dirs));
    const [direct, kysely] = sides as [Side, Side];
    for (const side of sides) {
      const warm = await round(room, side, room.calls);
      note(`${room.name} ${side.label} warm-up: ${warm.toFixed(1)} µs/call`);
    }
    const savings: number[] = [];
    for (let r = 0; r < ROUNDS; r += 1) {
      // Which path goes first alternates, so a drift of the machine weighs on both alike.
      for (const side of r % 2 === 0 ? [direct, kysely] : [kysely, direct]) {
        side.rounds.push(await round(room, side, room.calls));
      }
      savings.push(kysely.rounds[r]! - direct.rounds[r]!);
      note(
        `${room.name} round ${r + 1}: direct ${direct.rounds[r]!.toFixed(1)}, kysely ${kysely.rounds[r]!.toFixed(1)}, saves ${savings[r]!.toFixed(1)} µs/call`,
      );
    }
    const saves = median(savings);
    report({
      bench: BENCH,
      metric: `${room.name}_direct_cpu_us_per_call`,
      value: median(direct.rounds),
      unit: 'us',
    });
    report({
      bench: BENCH,
      metric: `${room.name}_kysely_cpu_us_per_call`,
      value: median(kysely.rounds),
      unit: 'us',
    });
    report({
      bench: BENCH,
      metric: `${room.name}_direct_saves_us_per_call`,
      value: saves,
      unit: 'us',
    });
    note(
      `${room.name}: the direct path saves ${((100 * saves) / GATEWAY_CPU_US_PER_CALL).toFixed(1)}% of ${GATEWAY_CPU_US_PER_CALL} µs per call`,
    );
  } finally {
    for (const side of sides) await side.store.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

const t0 = performance.now();
for (const room of [dispatchRoom, tasksRoom, worldRoom, relayRoom, proxyRoom]) {
  await measureRoom(room);
}
note(`store-paths took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
