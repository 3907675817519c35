/**
 * A terminal claim that fails because the store is away is not dropped: the task terminal keeps
 * the task with the events its `after` hooks produced and claims it again until the store is
 * back — also for the blocking reply, which no tracker follows — and publishes its delta once.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPS_DELTAS } from '../examples/agents/ops-agent.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { FleetgateError } from '../src/protocol/index.js';
import type { DispatchRecordStore } from '../src/dispatch/index.js';
import { createStoreDispatchRecords, Dispatcher } from '../src/dispatch/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { TaskRecordStore } from '../src/tasks/index.js';
import { createStoreTaskRecords } from '../src/tasks/index.js';
import type { World } from './support/gateway.js';
import { gateway, until, world } from './support/gateway.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const deltasOf = (w: World, taskId: string): EventEnvelope[] =>
  w.deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);

const unavailable = (): Promise<never> =>
  Promise.reject(
    new FleetgateError('FLEETGATE_STORE_UNAVAILABLE', 'PostgreSQL is unavailable (query)'),
  );

/** Task records whose claim and create fail with FLEETGATE_STORE_UNAVAILABLE while `down()`. */
function flakyRecords(w: World, down: () => boolean): TaskRecordStore & { failures: number } {
  const real = createStoreTaskRecords(w.store.db);
  const records = {
    ...real,
    failures: 0,
    claim: (...args: Parameters<TaskRecordStore['claim']>) => {
      if (!down()) return real.claim(...args);
      records.failures += 1;
      return unavailable();
    },
    create: (...args: Parameters<TaskRecordStore['create']>) =>
      down() ? unavailable() : real.create(...args),
  };
  return records;
}

describe('task terminal: a claim while the store is away', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(0);
  });
  afterAll(() => w.close());

  it('keeps a blocking reply’s task and claims it once the store is back: one delta, published once', async () => {
    let down = true;
    const records = flakyRecords(w, () => down);
    const g = gateway(w, { records });
    try {
      const result = await g.fleet.call('ops', 'pr_review', 'go', {
        correlationId: randomUUID(),
      });
      // The agent finished the task: the caller gets its answer while the claim waits.
      expect(result).toMatchObject({ ok: true, terminal: true, state: 'completed' });
      const taskId = result.task!.id;
      await until(() => records.failures >= 2, 5_000, 'a second failed claim');
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
      expect(await records.get('ops', taskId)).toMatchObject({
        terminalVia: 'reply',
        state: 'completed',
      });
    } finally {
      await g.stop();
    }
  });

  it('settles nothing twice when another path sees the task while its claim waits', async () => {
    let down = true;
    const records = flakyRecords(w, () => down);
    const g = gateway(w, { records });
    try {
      const result = await g.fleet.call('ops', 'pr_review', 'again');
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

  it('stop() tries a waiting claim once more, then lets it go', async () => {
    const records = flakyRecords(w, () => true);
    const g = gateway(w, { records });
    const terminal = g.fleet.terminal;
    try {
      await g.fleet.call('ops', 'pr_review', 'lost');
      expect(terminal.retrying()).toBe(1);
    } finally {
      await g.stop();
    }
    const failuresBefore = records.failures;
    await terminal.stop();
    expect(records.failures).toBe(failuresBefore + 1);
    expect(terminal.retrying()).toBe(0);
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
    const records = flakyRecords(w, () => down);
    const real = createStoreDispatchRecords(w.store.db);
    const dispatches: DispatchRecordStore = {
      ...real,
      // The store goes away right after the dispatch was recorded and the call went out.
      update: () => {
        down = true;
        return unavailable();
      },
    };
    const g = gateway(w, { records, polling: { intervalMs: 15 } });
    const dispatcher = new Dispatcher({
      fleet: g.fleet,
      records: dispatches,
      tracker: g.tracker,
      bus: w.bus,
      mode: 'return-immediately',
    });
    try {
      const error = await dispatcher
        .dispatch({ agent: 'ops', skill: 'sitrep', text: 'go' })
        .catch((e: unknown) => e);
      expect(isFleetgateError(error, 'FLEETGATE_STORE_UNAVAILABLE')).toBe(true);
      // Followed from memory: polled to its end, its claim waiting for the store.
      await until(() => g.fleet.terminal.retrying() === 1, 5_000, 'the claim to wait');
      const [taskId] = w.agent.received.slice(-1).map((c) => c.taskId);
      down = false;
      await until(() => deltasOf(w, taskId!).length > 0, 15_000, 'the delta');
      await sleep(100);
      expect(deltasOf(w, taskId!)).toHaveLength(1);
      expect(await records.get('ops', taskId!)).toMatchObject({ state: 'completed' });
    } finally {
      await g.stop();
    }
  });
});
