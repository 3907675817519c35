/**
 * Dispatch records' moves: an ended dispatch never changes again, and a move `from` a status
 * (compare-and-set) changes a dispatch only in that status — on SQLite through its direct
 * statements and through kysely, and on PostgreSQL. Each move says whether it changed the record,
 * so of two paths ending one dispatch only the one that moved it announces it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreDispatchRecords, type DispatchRecordStore } from '../src/dispatch/index.js';
import { requirePostgres } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();

describe.each(storeVariants(pgUp))('dispatch record moves ($kind, direct: $direct)', (variant) => {
  const { direct, skip } = variant;
  let opened: TestStore;
  let records: DispatchRecordStore;
  let n = 0;

  beforeAll(async () => {
    if (skip) return;
    opened = await openTestStore(variant, 'fgdispatchrec', 2);
    const { store } = opened;
    records = createStoreDispatchRecords(store.db, direct ? { sqlite: store.sqlite } : {});
  });

  afterAll(async () => {
    if (!skip) await opened.remove();
  });

  async function held(): Promise<string> {
    n += 1;
    const id = `d-${n}`;
    await records.create({
      id,
      agent: 'ops',
      skill: 'bulk_migration',
      correlationId: `c-${n}`,
      status: 'awaiting-approval',
      taskId: null,
      createdAt: 1_000,
      updatedAt: 1_000,
      result: null,
    });
    return id;
  }

  it.skipIf(skip)('moves a dispatch from the status named, and leaves one in another', async () => {
    const id = await held();
    const running = await records.update(id, { status: 'running', at: 2_000 });
    expect(running).toMatchObject({
      changed: true,
      record: { status: 'running', updatedAt: 2_000 },
    });
    // Another replica's release, read while the dispatch was still held, comes late: no change.
    const late = await records.update(id, {
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_APPROVAL_VOID', message: 'the approval is consumed' } },
      at: 3_000,
      from: 'awaiting-approval',
    });
    expect(late).toMatchObject({
      changed: false,
      record: { status: 'running', updatedAt: 2_000, result: null },
    });

    const other = await held();
    const rejected = await records.update(other, {
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_APPROVAL_REJECTED', message: 'no' } },
      at: 3_000,
      from: 'awaiting-approval',
    });
    expect(rejected).toMatchObject({
      changed: true,
      record: { status: 'rejected', updatedAt: 3_000 },
    });
  });

  it.skipIf(skip)(
    'tells the move that changed a dispatch from one that came in the same millisecond',
    async () => {
      const id = await held();
      const change = {
        status: 'rejected' as const,
        result: { error: { code: 'FLEETGATE_APPROVAL_REJECTED', message: 'no' } },
        at: 4_000,
        from: 'awaiting-approval' as const,
      };
      // Two rejections of one held call, both read it held, one clock reading: one moved it.
      const [first, second] = await Promise.all([
        records.update(id, change),
        records.update(id, change),
      ]);
      expect([first.changed, second.changed].sort()).toEqual([false, true]);
      expect(first.record).toEqual(second.record);
      expect(second.record).toMatchObject({ status: 'rejected', updatedAt: 4_000 });
    },
  );

  it.skipIf(skip)('answers a move with the record as stored after it', async () => {
    const id = await held();
    const steps = [
      { status: 'running' as const, at: 2_000 },
      { status: 'running' as const, at: 2_500, taskId: 't-1' },
      { status: 'completed' as const, at: 3_000, result: { state: 'completed', text: 'done' } },
      // Left out of a change, the task id and the result keep what is stored.
      { status: 'failed' as const, at: 4_000 },
    ];
    for (const step of steps) {
      const moved = await records.update(id, step);
      expect(moved.record).toEqual(await records.get(id));
    }
    expect(await records.get(id)).toMatchObject({
      status: 'completed',
      taskId: 't-1',
      updatedAt: 3_000,
      result: { state: 'completed', text: 'done' },
    });
  });

  it.skipIf(skip)('never changes a dispatch that ended', async () => {
    const id = await held();
    await records.update(id, { status: 'completed', at: 2_000, result: { state: 'completed' } });
    const after = await records.update(id, { status: 'failed', at: 3_000 });
    expect(after).toMatchObject({
      changed: false,
      record: { status: 'completed', updatedAt: 2_000 },
    });
    expect(await records.update('d-none', { status: 'failed', at: 3_000 })).toEqual({
      changed: false,
      record: undefined,
    });
  });
});
