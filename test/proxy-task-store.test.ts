/**
 * The proxy store's contract, one suite for every implementation: SQLite's prepared statements,
 * kysely on SQLite, and kysely on PostgreSQL. What the proxy, its push sender and retention rely
 * on: a message opens one task, a task that ended never moves again and a state change records its
 * deliveries with it, a delivery's tries are taken by compare-and-set, the sweepers see only what
 * is due, and retention deletes only tasks that ended, with their push rows.
 *
 * The tests share one store per variant. Times say which rows a store-wide query sees: the
 * deliveries of the due-list test are the only ones due before 10,000, and the prune test's tasks
 * the only ones that moved before 10,000.
 */
import { TaskState, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadA2aProxy,
  type ProxyPushConfig,
  type ProxyTask,
  type ProxyTaskStore,
} from '../src/service/proxy/index.js';
import { requirePostgres } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();
const { createProxyTaskStore, UNSENT_PUSH_GRACE_MS } = await loadA2aProxy();

type DeliveryKey = Parameters<ProxyTaskStore['takeAttempt']>[0];

/** The times every test but the due list and prune use start here. */
const LATER = 10_000;

function a2aTask(id: string, state: TaskState, text = ''): Task {
  return {
    id,
    contextId: `ctx-${id}`,
    status: { state, timestamp: undefined, message: undefined },
    artifacts: [],
    history: [],
    metadata: text === '' ? undefined : { text },
  };
}

describe.each(storeVariants(pgUp))('proxy task store ($kind, direct: $direct)', (variant) => {
  const { direct, skip } = variant;
  let testStore: TestStore;
  let tasks: ProxyTaskStore;
  let n = 0;

  beforeAll(async () => {
    if (skip) return;
    testStore = await openTestStore(variant, 'fgproxytasks', 2);
    const { store } = testStore;
    tasks = createProxyTaskStore(store.db, direct ? { sqlite: store.sqlite } : {});
  });

  afterAll(async () => {
    if (!skip) await testStore.remove();
  });

  function fresh(overrides: Partial<Omit<ProxyTask, 'updatedAt'>> = {}) {
    n += 1;
    const id = overrides.id ?? `p-${n}`;
    return {
      id,
      agent: 'ops',
      caller: 'alice',
      messageId: `m-${n}`,
      contextId: `ctx-${id}`,
      state: 'working',
      task: a2aTask(id, TaskState.TASK_STATE_WORKING),
      protocol: '1.0',
      createdAt: LATER + n,
      ...overrides,
    } satisfies Omit<ProxyTask, 'updatedAt'>;
  }

  function push(
    taskId: string,
    configId: string,
    url = `http://127.0.0.1:9/${configId}`,
  ): ProxyPushConfig {
    return {
      taskId,
      configId,
      config: {
        tenant: '',
        id: configId,
        taskId,
        url,
        token: `t-${configId}`,
        authentication: undefined,
      },
      protocol: '1.0',
    };
  }

  /** A task opened and moved to `state` at `at` (its last move). */
  async function movedTo(state: TaskState, at: number, pushes: string[] = []): Promise<string> {
    const moving = fresh({ createdAt: at - 1 });
    await tasks.claim(moving);
    for (const configId of pushes) await tasks.setPush(push(moving.id, configId), at - 1);
    const { changed } = await tasks.update(moving.id, { task: a2aTask(moving.id, state), at });
    expect(changed).toBe(true);
    return moving.id;
  }

  it.skipIf(skip)('opens a task once: the same message answers the task it opened', async () => {
    // The message id is unique per agent and caller only: other callers' and agents' tasks with
    // the same message id, opened first, are neither answered nor disturbed.
    const messageId = `m-shared-${n}`;
    const otherCaller = fresh({ messageId, caller: 'ada' });
    const otherAgent = fresh({ messageId, agent: 'ci' });
    for (const other of [otherCaller, otherAgent]) {
      expect(await tasks.claim(other)).toEqual({
        created: true,
        task: { ...other, updatedAt: other.createdAt },
      });
    }
    const first = fresh({ messageId, protocol: '0.3' });
    const stored = { ...first, updatedAt: first.createdAt };
    expect(await tasks.claim(first)).toEqual({ created: true, task: stored });
    expect(await tasks.get(first.id)).toEqual(stored);
    // The client sends the same message again: the task it opened, not a second one.
    const again = fresh({
      messageId,
      state: 'submitted',
      task: a2aTask('other', TaskState.TASK_STATE_SUBMITTED),
    });
    expect(await tasks.claim(again)).toEqual({ created: false, task: stored });
    expect(await tasks.get(again.id)).toBeUndefined();
    expect(await tasks.get(otherCaller.id)).toMatchObject({ agent: 'ops', caller: 'ada' });
    expect(await tasks.get(otherAgent.id)).toMatchObject({ agent: 'ci', caller: 'alice' });
    expect(await tasks.get('no-such-task')).toBeUndefined();
  });

  it.skipIf(skip)('moves a task that has not ended, never one that has', async () => {
    const opened = fresh();
    await tasks.claim(opened);
    const inputRequired = a2aTask(opened.id, TaskState.TASK_STATE_INPUT_REQUIRED, 'which one?');
    const moved = await tasks.update(opened.id, { task: inputRequired, at: LATER + 1_000 });
    const asMoved = {
      ...opened,
      state: 'input-required',
      task: inputRequired,
      updatedAt: LATER + 1_000,
    };
    // A state change records its deliveries: none, with no push configuration.
    expect(moved).toEqual({ changed: true, task: asMoved, pushes: [] });
    expect(await tasks.get(opened.id)).toEqual(asMoved);
    // The same state again: the task moves, no delivery is recorded.
    const sameState = a2aTask(opened.id, TaskState.TASK_STATE_INPUT_REQUIRED, 'still?');
    const same = await tasks.update(opened.id, { task: sameState, at: LATER + 1_100 });
    expect(same).toEqual({
      changed: true,
      task: { ...asMoved, task: sameState, updatedAt: LATER + 1_100 },
    });
    const completed = a2aTask(opened.id, TaskState.TASK_STATE_COMPLETED);
    const ended = await tasks.update(opened.id, { task: completed, at: LATER + 1_200 });
    const asEnded = { ...asMoved, state: 'completed', task: completed, updatedAt: LATER + 1_200 };
    expect(ended).toEqual({ changed: true, task: asEnded, pushes: [] });
    // Ended: a late update moves nothing and answers the task as stored.
    for (const state of [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_FAILED]) {
      expect(
        await tasks.update(opened.id, { task: a2aTask(opened.id, state), at: LATER + 1_300 }),
      ).toEqual({ changed: false, task: asEnded });
    }
    expect(await tasks.get(opened.id)).toEqual(asEnded);
    expect(await tasks.update('no-such-task', { task: completed, at: LATER + 1_300 })).toEqual({
      changed: false,
      task: undefined,
    });
  });

  it.skipIf(skip)(
    "records a state change's delivery to each push configuration with the change",
    async () => {
      const opened = fresh();
      await tasks.claim(opened);
      await tasks.setPush(push(opened.id, 'b'), LATER + 2_000);
      await tasks.setPush(push(opened.id, 'a'), LATER + 2_001);
      const at = LATER + 2_100;
      const moved = await tasks.update(opened.id, {
        task: a2aTask(opened.id, TaskState.TASK_STATE_COMPLETED),
        at,
      });
      expect(moved.changed).toBe(true);
      // The configurations as listPush lists them: by creation, then id.
      expect(moved.pushes).toEqual([push(opened.id, 'b'), push(opened.id, 'a')]);
      expect(moved.pushes).toEqual(await tasks.listPush(opened.id));
      const recorded = await tasks.deliveries(opened.id);
      expect(recorded.sort((x, y) => x.configId.localeCompare(y.configId))).toEqual([
        { configId: 'a', state: 'completed', status: 'sending', attempts: 0, error: null },
        { configId: 'b', state: 'completed', status: 'sending', attempts: 0, error: null },
      ]);
      // Due once the grace is over, with the task as changed.
      const ours = async (now: number) =>
        (await tasks.dueDeliveries(now, 1_000)).filter((d) => d.taskId === opened.id);
      expect(await ours(at + UNSENT_PUSH_GRACE_MS - 1)).toEqual([]);
      const due = await ours(at + UNSENT_PUSH_GRACE_MS);
      expect(due.map((d) => d.configId).sort()).toEqual(['a', 'b']);
      for (const d of due) {
        expect(d).toMatchObject({ state: 'completed', attempts: 0 });
        expect(d.task).toEqual(a2aTask(opened.id, TaskState.TASK_STATE_COMPLETED));
      }
      // The change's own replica takes the first try of each; nobody takes it twice.
      const key = { taskId: opened.id, configId: 'a', state: 'completed' };
      const task = a2aTask(opened.id, TaskState.TASK_STATE_COMPLETED);
      expect(await tasks.claimDelivery(key, task, at + 1, at + 60_000)).toBe(true);
      expect(await tasks.claimDelivery(key, task, at + 2, at + 60_000)).toBe(false);
      expect(await ours(at + UNSENT_PUSH_GRACE_MS)).toMatchObject([{ configId: 'b' }]);
      // The task ended: nothing more is recorded.
      const late = await tasks.update(opened.id, {
        task: a2aTask(opened.id, TaskState.TASK_STATE_FAILED),
        at: at + 10,
      });
      expect(late.changed).toBe(false);
      expect(late.pushes).toBeUndefined();
      expect(await tasks.deliveries(opened.id)).toHaveLength(2);
    },
  );

  it.skipIf(skip)('sets, reads, lists in order and deletes push configurations', async () => {
    const { id } = fresh();
    const other = fresh().id;
    await tasks.setPush(push(id, 'b'), LATER + 3_002);
    await tasks.setPush(push(id, 'z'), LATER + 3_001);
    await tasks.setPush(push(id, 'a'), LATER + 3_001);
    await tasks.setPush(push(other, 'a'), LATER + 3_000);
    expect(await tasks.listPush(id)).toEqual([push(id, 'a'), push(id, 'z'), push(id, 'b')]);
    expect(await tasks.getPush(id, 'z')).toEqual(push(id, 'z'));
    expect(await tasks.getPush(id, 'nope')).toBeUndefined();
    expect(await tasks.getPush('no-such-task', 'a')).toBeUndefined();
    // Set again: the configuration and protocol change, its place (its creation) stays.
    const changed = { ...push(id, 'a', 'http://127.0.0.1:9/moved'), protocol: '0.3' as const };
    await tasks.setPush(changed, LATER + 3_999);
    expect(await tasks.getPush(id, 'a')).toEqual(changed);
    expect(await tasks.listPush(id)).toEqual([changed, push(id, 'z'), push(id, 'b')]);
    await tasks.deletePush(id, 'z');
    await tasks.deletePush(id, 'nope');
    expect(await tasks.getPush(id, 'z')).toBeUndefined();
    expect(await tasks.listPush(id)).toEqual([changed, push(id, 'b')]);
    expect(await tasks.listPush(other)).toEqual([push(other, 'a')]);
    expect(await tasks.listPush('no-such-task')).toEqual([]);
  });

  it.skipIf(skip)('claims a new delivery for one caller only, its first try taken', async () => {
    const key = { taskId: fresh().id, configId: 'hook', state: 'completed' };
    const task = a2aTask(key.taskId, TaskState.TASK_STATE_COMPLETED);
    const claims = await Promise.all(
      [1, 2, 3].map((i) => tasks.claimDelivery(key, task, LATER + 4_000 + i, LATER + 9_000)),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await tasks.deliveries(key.taskId)).toEqual([
      { configId: 'hook', state: 'completed', status: 'sending', attempts: 1, error: null },
    ]);
    // Another state of the same task to the same configuration is its own delivery.
    const failed = { ...key, state: 'failed' };
    expect(await tasks.claimDelivery(failed, task, LATER + 4_010, LATER + 9_000)).toBe(true);
    expect(await tasks.deliveries(key.taskId)).toHaveLength(2);
  });

  it.skipIf(skip)(
    'takes each try once (compare-and-set on the tries seen), retries and ends a delivery',
    async () => {
      const key: DeliveryKey = { taskId: fresh().id, configId: 'hook', state: 'completed' };
      const task = a2aTask(key.taskId, TaskState.TASK_STATE_COMPLETED);
      const row = async () => (await tasks.deliveries(key.taskId))[0];
      expect(await tasks.claimDelivery(key, task, LATER + 5_000, LATER + 5_100)).toBe(true);
      // A caller that saw another count of tries takes nothing.
      expect(await tasks.takeAttempt(key, 0, LATER + 5_200, LATER + 5_300)).toBe(false);
      expect(await tasks.takeAttempt(key, 2, LATER + 5_200, LATER + 5_300)).toBe(false);
      expect(await row()).toMatchObject({ attempts: 1, status: 'sending' });
      const taken = await Promise.all(
        [1, 2, 3].map(() => tasks.takeAttempt(key, 1, LATER + 5_200, LATER + 5_300)),
      );
      expect(taken.filter(Boolean)).toHaveLength(1);
      expect(await row()).toMatchObject({ attempts: 2, status: 'sending', error: null });
      // A retry after a try someone has taken since changes nothing.
      await tasks.retryAt(key, 1, LATER + 5_400, 'stale');
      expect(await row()).toMatchObject({ attempts: 2, error: null });
      await tasks.retryAt(key, 2, LATER + 5_400, 'HTTP 503');
      expect(await row()).toEqual({
        configId: 'hook',
        state: 'completed',
        status: 'sending',
        attempts: 2,
        error: 'HTTP 503',
      });
      // The retry's time is the next try's: due then, not before.
      const ours = async (now: number) =>
        (await tasks.dueDeliveries(now, 1_000)).filter((d) => d.taskId === key.taskId);
      expect(await ours(LATER + 5_399)).toEqual([]);
      expect(await ours(LATER + 5_400)).toEqual([{ ...key, attempts: 2, task }]);
      expect(await tasks.takeAttempt(key, 2, LATER + 5_400, LATER + 5_500)).toBe(true);
      await tasks.endDelivery(key, { status: 'delivered', attempts: 3, at: LATER + 5_450 });
      expect(await row()).toEqual({
        configId: 'hook',
        state: 'completed',
        status: 'delivered',
        attempts: 3,
        error: null,
      });
      // Ended: no try is taken, no retry lands, and it is never due.
      expect(await tasks.takeAttempt(key, 3, LATER + 5_600, LATER + 5_700)).toBe(false);
      await tasks.retryAt(key, 3, LATER + 5_600, 'late');
      expect(await row()).toMatchObject({ status: 'delivered', attempts: 3, error: null });
      expect(await ours(LATER + 1_000_000)).toEqual([]);
      // A delivery that went dead keeps its last error.
      const dead = { ...key, state: 'failed' };
      expect(await tasks.claimDelivery(dead, task, LATER + 5_000, LATER + 5_100)).toBe(true);
      await tasks.endDelivery(dead, {
        status: 'dead',
        attempts: 1,
        error: 'HTTP 410',
        at: LATER + 5_800,
      });
      expect(await tasks.deliveries(key.taskId)).toEqual([
        { configId: 'hook', state: 'completed', status: 'delivered', attempts: 3, error: null },
        { configId: 'hook', state: 'failed', status: 'dead', attempts: 1, error: 'HTTP 410' },
      ]);
    },
  );

  it.skipIf(skip)('lists the deliveries due at a time, oldest first, up to the limit', async () => {
    // Deliveries moved (updated_at) and due (next_at) before 10,000: no other test's are.
    const { id } = fresh();
    const task = a2aTask(id, TaskState.TASK_STATE_COMPLETED);
    const key = (configId: string): DeliveryKey => ({ taskId: id, configId, state: 'completed' });
    const claims: [string, number, number][] = [
      ['d1', 300, 400],
      ['d2', 100, 500],
      ['d3', 200, 450],
      ['d4', 150, 800],
      ['d5', 50, 60],
    ];
    for (const [configId, at, leaseUntil] of claims) {
      expect(await tasks.claimDelivery(key(configId), task, at, leaseUntil)).toBe(true);
    }
    await tasks.endDelivery(key('d5'), { status: 'delivered', attempts: 1, at: 70 });
    const due = async (now: number, limit = 100) =>
      (await tasks.dueDeliveries(now, limit)).map((d) => d.configId);
    expect(await due(399)).toEqual([]);
    expect(await due(450)).toEqual(['d3', 'd1']);
    expect(await due(600)).toEqual(['d2', 'd3', 'd1']);
    expect(await due(600, 2)).toEqual(['d2', 'd3']);
    expect(await tasks.dueDeliveries(600, 1)).toEqual([{ ...key('d2'), attempts: 1, task }]);
    // A retry moves the next try; a try taken moves the delivery's place in line.
    await tasks.retryAt(key('d1'), 1, 700, 'HTTP 500');
    expect(await due(600)).toEqual(['d2', 'd3']);
    expect(await tasks.takeAttempt(key('d2'), 1, 350, 900)).toBe(true);
    expect(await due(900)).toEqual(['d4', 'd3', 'd1', 'd2']);
    expect((await tasks.dueDeliveries(900, 100)).map((d) => d.attempts)).toEqual([1, 1, 1, 2]);
  });

  it.skipIf(skip)(
    'prunes tasks that ended before the cut with their push rows, batch by batch',
    async () => {
      // The only tasks that moved before 10,000.
      const first = [
        await movedTo(TaskState.TASK_STATE_COMPLETED, 1_100, ['a', 'b']),
        await movedTo(TaskState.TASK_STATE_FAILED, 1_200, ['a']),
        await movedTo(TaskState.TASK_STATE_CANCELED, 1_300),
      ];
      const second = [
        await movedTo(TaskState.TASK_STATE_REJECTED, 1_600, ['a']),
        await movedTo(TaskState.TASK_STATE_COMPLETED, 1_700),
        await movedTo(TaskState.TASK_STATE_COMPLETED, 1_999, ['a']),
      ];
      const atCut = await movedTo(TaskState.TASK_STATE_COMPLETED, 2_000, ['a']);
      const inFlight = await movedTo(TaskState.TASK_STATE_INPUT_REQUIRED, 1_150, ['a']);
      const ended = [...first, ...second];
      for (const id of [...ended, atCut, inFlight]) {
        expect(
          await tasks.claimDelivery(
            { taskId: id, configId: 'x', state: 'completed' },
            a2aTask(id, TaskState.TASK_STATE_COMPLETED),
            2_500,
            3_000,
          ),
        ).toBe(true);
      }
      // Exactly a batch's multiple (3 in batches of 3), then 3 in batches of 2.
      expect(await tasks.prune(1_500, 3)).toBe(3);
      for (const id of first) expect(await tasks.get(id)).toBeUndefined();
      for (const id of second) expect(await tasks.get(id)).toBeDefined();
      expect(await tasks.prune(2_000, 2)).toBe(3);
      expect(await tasks.prune(2_000, 2)).toBe(0);
      for (const id of ended) {
        expect(await tasks.get(id)).toBeUndefined();
        expect(await tasks.listPush(id)).toEqual([]);
        expect(await tasks.getPush(id, 'a')).toBeUndefined();
        expect(await tasks.deliveries(id)).toEqual([]);
      }
      // A task that ended at the cut stays, and so does one in flight however old, with theirs.
      for (const id of [atCut, inFlight]) {
        expect(await tasks.get(id)).toBeDefined();
        expect(await tasks.listPush(id)).toEqual([push(id, 'a')]);
        expect((await tasks.deliveries(id)).map((d) => d.configId).sort()).toEqual(['a', 'x']);
      }
      expect(await tasks.get(inFlight)).toMatchObject({ state: 'input-required' });
    },
  );
});
