/**
 * A dispatch is announced once per move, however many paths make it at the same time: two
 * rejections of one held call, or the reply and the terminal's `onSettled` ending one answered
 * task, in the same millisecond — on SQLite (direct and kysely) and PostgreSQL records, with the
 * gateway's in-memory bus. Only the path whose move changed the record writes its event (into the
 * outbox, in the unit of the move; a relay publishes it).
 */
import type { Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInMemoryEventBus, createOutboxRelay, type OutboxRelay } from '../src/bus/index.js';
import {
  Dispatcher,
  createStoreDispatchRecords,
  type DispatchRecord,
  type DispatchRecordStore,
  type PolicyGate,
} from '../src/dispatch/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { requirePostgres } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();

/** Every clock reading is the same millisecond: the moves cannot be told apart by their time. */
const AT = 1_700_000_000_000;

/** A gate that holds every call, and on release says a person rejected it. */
const rejectingGate: PolicyGate = {
  decide: () => Promise.resolve({ action: 'hold', reason: 'needs a person' }),
  release: () =>
    Promise.resolve({
      action: 'deny',
      reason: 'rejected by alice',
      code: 'FLEETGATE_APPROVAL_REJECTED',
    }),
};

describe.each(storeVariants(pgUp))('dispatch events once ($kind, direct: $direct)', (variant) => {
  const { direct, skip } = variant;
  let opened: TestStore;
  let records: DispatchRecordStore;
  const bus = createInMemoryEventBus();
  const events: EventEnvelope[] = [];
  let dispatcher: Dispatcher;
  let relay: OutboxRelay;
  let n = 0;

  beforeAll(async () => {
    if (skip) return;
    opened = await openTestStore(variant, 'fgdispatchonce', 4);
    const { store } = opened;
    records = createStoreDispatchRecords(store.db, direct ? { sqlite: store.sqlite } : {});
    await bus.subscribe('skill.dispatch.>', (e) => void events.push(e), { name: 'once' });
    relay = createOutboxRelay({ db: store.db, sqlite: direct ? store.sqlite : undefined, bus });
    const none = (): Promise<never> => Promise.reject(new Error('no call is sent in these tests'));
    dispatcher = new Dispatcher({
      fleet: { call: none, agentClient: none },
      records,
      tracker: { follow: () => Promise.resolve() },
      gate: rejectingGate,
      now: () => AT,
    });
  });

  afterAll(async () => {
    if (skip) return;
    await bus.close();
    await opened.remove();
  });

  async function recordOf(status: DispatchRecord['status'], taskId: string | null) {
    n += 1;
    const record: DispatchRecord = {
      id: `d-${n}`,
      agent: 'ops',
      skill: 'bulk_migration',
      correlationId: `c-${n}`,
      status,
      taskId,
      createdAt: AT,
      updatedAt: AT,
      result: null,
    };
    await records.create(record);
    return record;
  }

  async function topicsOf(id: string): Promise<string[]> {
    await relay.drain();
    await bus.idle();
    return events.filter((e) => (e.payload as { id: string }).id === id).map((e) => e.topic);
  }

  it.skipIf(skip)('announces a held call rejected by two releases at once once', async () => {
    const { id } = await recordOf('awaiting-approval', null);
    const [a, b] = await Promise.all([dispatcher.release(id), dispatcher.release(id)]);
    expect(a).toMatchObject({ status: 'rejected' });
    expect(b).toEqual(a);
    expect(await topicsOf(id)).toEqual(['skill.dispatch.rejected']);
  });

  it.skipIf(skip)('announces a task settled on two paths at once as completed once', async () => {
    const { id } = await recordOf('running', 'task-1');
    const task = {
      id: 'task-1',
      contextId: 'ctx-1',
      status: { state: 'TASK_STATE_COMPLETED' },
      artifacts: [],
      history: [],
    } as unknown as Task;
    const settled = { agent: 'ops', taskId: 'task-1', task, fresh: false };
    await Promise.all([dispatcher.onTaskSettled(settled), dispatcher.onTaskSettled(settled)]);
    expect(await records.get(id)).toMatchObject({ status: 'completed' });
    expect(await topicsOf(id)).toEqual(['skill.dispatch.completed']);
  });

  it.skipIf(skip)('announces a question seen on two paths at once once', async () => {
    const { id } = await recordOf('running', 'task-2');
    const change = { agent: 'ops', taskId: 'task-2', state: 'input-required' as const };
    await Promise.all([dispatcher.onTaskState(change), dispatcher.onTaskState(change)]);
    expect(await records.get(id)).toMatchObject({ status: 'awaiting-input' });
    expect(await topicsOf(id)).toEqual(['skill.dispatch.awaiting-input']);
  });
});
