/**
 * A terminal claim that fails because the store is away is not dropped: the task terminal keeps
 * the task with the events its `after` hooks produced and claims it again until the store is
 * back — also for the blocking reply, which no tracker follows — and publishes its delta once.
 * Each gateway is `createGateway`; its records are wrapped to fail as a lost connection would.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPS_DELTAS } from '../examples/agents/ops-agent.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { FleetgateError } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { TaskRecordStore } from '../src/tasks/index.js';
import { createStoreTaskRecords } from '../src/tasks/index.js';
import type { GatewayRecords, World } from './support/gateway.js';
import { gateway, until, world } from './support/gateway.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const deltasOf = (w: World, taskId: string): EventEnvelope[] =>
  w.deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);

const unavailable = (): Promise<never> =>
  Promise.reject(
    new FleetgateError('FLEETGATE_STORE_UNAVAILABLE', 'PostgreSQL is unavailable (query)'),
  );

/** Wraps a gateway's task records: claim and create fail with FLEETGATE_STORE_UNAVAILABLE while `down()`. */
function flakyRecords(down: () => boolean): {
  /** Claims refused so far. */
  failures: () => number;
  wrap: (real: TaskRecordStore) => TaskRecordStore;
  /** For `GatewayOptions.records`. */
  records: (built: GatewayRecords) => GatewayRecords;
} {
  let failures = 0;
  const wrap = (real: TaskRecordStore): TaskRecordStore => ({
    ...real,
    claim: (...args) => {
      if (!down()) return real.claim(...args);
      failures += 1;
      return unavailable();
    },
    create: (...args) => (down() ? unavailable() : real.create(...args)),
  });
  return {
    failures: () => failures,
    wrap,
    records: (built) => ({ ...built, tasks: wrap(built.tasks) }),
  };
}

describe('task terminal: a claim while the store is away', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(0);
  });
  afterAll(() => w.close());

  it('keeps a blocking reply’s task and claims it once the store is back: one delta, published once', async () => {
    let down = true;
    const flaky = flakyRecords(() => down);
    const g = await gateway(w, { records: flaky.records });
    try {
      const result = await g.gw.call('ops', 'pr_review', 'go', {
        correlationId: randomUUID(),
      });
      // The agent finished the task: the caller gets its answer while the claim waits.
      expect(result).toMatchObject({ ok: true, terminal: true, state: 'completed' });
      const taskId = result.task!.id;
      await until(() => flaky.failures() >= 2, 5_000, 'a second failed claim');
      expect(g.fleet.terminal.retrying()).toBe(1);
      expect(deltasOf(w, taskId)).toEqual([]);
      down = false;
      await until(
        () => deltasOf(w, taskId).length > 0,
        15_000,
        'the delta after the store is back',
      );
      await sleep(100);
      expect(deltasOf(w, taskId)).toHaveLength(1);
      expect(deltasOf(w, taskId)[0]!.payload).toMatchObject({ deltas: OPS_DELTAS['pr_review'] });
      expect(g.fleet.terminal.retrying()).toBe(0);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        terminalVia: 'reply',
        state: 'completed',
      });
    } finally {
      await g.stop();
    }
  });

  it('settles nothing twice when another path sees the task while its claim waits', async () => {
    let down = true;
    const flaky = flakyRecords(() => down);
    const g = await gateway(w, { records: flaky.records });
    try {
      const result = await g.gw.call('ops', 'pr_review', 'again');
      const task = result.task!;
      expect(await g.fleet.terminal.settle('ops', task, 'push')).toMatchObject({
        settled: false,
        reason: 'retrying',
      });
      down = false;
      await until(() => deltasOf(w, task.id).length > 0, 15_000, 'the delta');
      await sleep(100);
      expect(deltasOf(w, task.id)).toHaveLength(1);
    } finally {
      await g.stop();
    }
  });

  it('closing the gateway tries a waiting claim once more, then lets it go', async () => {
    const flaky = flakyRecords(() => true);
    const g = await gateway(w, { records: flaky.records });
    const terminal = g.fleet.terminal;
    let failuresBefore = 0;
    try {
      await g.gw.call('ops', 'pr_review', 'lost');
      expect(terminal.retrying()).toBe(1);
      // Just after the first timed retry (250 ms): the next one is 500 ms away.
      await until(() => flaky.failures() === 2, 5_000, 'the first timed retry');
      failuresBefore = flaky.failures();
    } finally {
      await g.stop();
    }
    expect(flaky.failures()).toBe(failuresBefore + 1);
    expect(terminal.retrying()).toBe(0);
    // Let go: no timed retry comes after the close.
    await sleep(700);
    expect(flaky.failures()).toBe(failuresBefore + 1);
  });
});

describe('dispatcher: a task that outlives the store going away', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(40);
  });
  afterAll(() => w.close());

  it('still follows a task whose dispatch record could not be updated, and publishes its delta once the store is back', async () => {
    let down = false;
    const flaky = flakyRecords(() => down);
    const g = await gateway(w, {
      polling: { intervalMs: 15 },
      dispatchMode: 'return-immediately',
      records: (built) => ({
        tasks: flaky.wrap(built.tasks),
        dispatches: {
          ...built.dispatches,
          // The store goes away right after the dispatch was recorded and the call went out.
          update: () => {
            down = true;
            return unavailable();
          },
        },
      }),
    });
    try {
      const error = await g.gw
        .dispatch({ agent: 'ops', skill: 'sitrep', text: 'go' })
        .answered()
        .catch((e: unknown) => e);
      expect(isFleetgateError(error, 'FLEETGATE_STORE_UNAVAILABLE')).toBe(true);
      // Followed from memory: polled to its end, its claim waiting for the store.
      await until(() => g.fleet.terminal.retrying() === 1, 5_000, 'the claim to wait');
      const [taskId] = w.agent.received.slice(-1).map((c) => c.taskId);
      down = false;
      await until(() => deltasOf(w, taskId!).length > 0, 15_000, 'the delta');
      await sleep(100);
      expect(deltasOf(w, taskId!)).toHaveLength(1);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId!)).toMatchObject({
        state: 'completed',
      });
    } finally {
      await g.stop();
    }
  });
});
