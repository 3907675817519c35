/**
 * The dispatch records' contract, one suite for every implementation: SQLite's prepared
 * statements, kysely on SQLite, and kysely on PostgreSQL. Moves: an ended dispatch never changes
 * again, and a move `from` a status (compare-and-set) changes a dispatch only in that status; each
 * move says whether it changed the record, so of two paths ending one dispatch only the one that
 * moved it announces it, and its announcement is in the outbox exactly then. Beside the moves:
 * a record with its trace context and holder, the orphans a dead process leaves, a takeover, the
 * API's list with its filters and pages, and retention.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createStoreDispatchRecords,
  moveDispatch,
  type DispatchRecord,
  type DispatchRecordStore,
} from '../src/dispatch/index.js';
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
    let events = 0;
    records = createStoreDispatchRecords(store.db, {
      ...(direct ? { sqlite: store.sqlite } : {}),
      eventId: () => `${variant.kind}-${direct}-e${(events += 1)}`,
    });
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

  function record(overrides: Partial<DispatchRecord> = {}): DispatchRecord {
    n += 1;
    return {
      id: `r-${n}`,
      agent: 'ops',
      skill: 'sitrep',
      correlationId: `rc-${n}`,
      status: 'running',
      taskId: null,
      createdAt: 10_000 + n,
      updatedAt: 10_000 + n,
      result: null,
      ...overrides,
    };
  }

  async function outbox(correlationId: string): Promise<{ topic: string; payload: unknown }[]> {
    const rows = await sql<{ topic: string; payload: string }>`
      select topic, payload from fleetgate_outbox where correlation_id = ${correlationId} order by seq
    `.execute(opened.store.db);
    return rows.rows.map((r) => ({ topic: r.topic, payload: JSON.parse(r.payload) as unknown }));
  }

  /**
   * A dispatch's holder, send and trace context as its own row has them and as its side rows
   * (`fleetgate_dispatch_send`, `fleetgate_dispatch_trace`) do.
   */
  async function callColumns(id: string): Promise<{ row: unknown[]; side: unknown[] }> {
    const found = await sql<Record<string, string | number | null>>`
      select d.owner, d.message_id, d.context_id, d.sent_at, d.traceparent,
        s.owner as s_owner, s.message_id as s_message_id, s.context_id as s_context_id,
        s.sent_at as s_sent_at, t.traceparent as t_traceparent
      from fleetgate_dispatch d
      left join fleetgate_dispatch_send s on s.dispatch_id = d.id
      left join fleetgate_dispatch_trace t on t.dispatch_id = d.id
      where d.id = ${id}
    `.execute(opened.store.db);
    const r = found.rows[0]!;
    const sentAt = (v: unknown) => (v === null ? null : Number(v));
    return {
      row: [r.owner, r.message_id, r.context_id, sentAt(r.sent_at), r.traceparent],
      side: [r.s_owner, r.s_message_id, r.s_context_id, sentAt(r.s_sent_at), r.t_traceparent],
    };
  }

  it.skipIf(skip)(
    'writes who holds a call, what it sent and its trace context on its own row too, as its side rows have them',
    async () => {
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const plain = record();
      await records.create(plain);
      expect(await records.get(plain.id)).not.toHaveProperty('door');
      expect(await callColumns(plain.id)).toEqual({
        row: [null, null, null, null, null],
        side: [null, null, null, null, null],
      });
      // Sent at once: its holder and ids with the record, and the door it came through.
      const sent = record({ traceparent, door: 'a2a-proxy' });
      await records.create(sent, {
        send: { owner: 'gw-a', messageId: 'm-1', contextId: 'ctx-1', sentAt: 5 },
      });
      const first = ['gw-a', 'm-1', 'ctx-1', 5, traceparent];
      expect(await callColumns(sent.id)).toEqual({ row: first, side: first });
      expect(await records.get(sent.id)).toEqual(sent);
      expect(
        (await records.list({ limit: 5, agent: 'ops' })).find((r) => r.id === sent.id),
      ).toEqual(sent);
      // Held first, sent later.
      const later = record({ status: 'awaiting-approval' });
      await records.create(later);
      await records.sending(later, {
        owner: 'gw-b',
        messageId: 'm-2',
        contextId: 'ctx-2',
        sentAt: 9,
      });
      const second = ['gw-b', 'm-2', 'ctx-2', 9, null];
      expect(await callColumns(later.id)).toEqual({ row: second, side: second });
      // Taken over: the new holder on both; a lost takeover changes neither.
      expect(await records.takeOver(later.id, 'gw-b', 'gw-c')).toBe(true);
      expect(await records.takeOver(later.id, 'gw-b', 'gw-d')).toBe(false);
      const taken = ['gw-c', 'm-2', 'ctx-2', 9, null];
      expect(await callColumns(later.id)).toEqual({ row: taken, side: taken });
      // Released by its approval into a process's hands (the approvals' transaction), not sent yet.
      const released = record({ status: 'awaiting-approval', traceparent });
      await records.create(released);
      await opened.store.db
        .transaction()
        .execute((trx) =>
          moveDispatch(trx, released.id, 'awaiting-approval', 'running', 11, { owner: 'gw-e' }),
        );
      const inHand = ['gw-e', '', '', null, traceparent];
      expect(await callColumns(released.id)).toEqual({ row: inHand, side: inHand });
    },
  );

  it.skipIf(skip)(
    'records a dispatch with its trace context, its holder and its events, in one unit',
    async () => {
      const traced = record({
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      });
      const send = { owner: 'gw-a', messageId: 'm-1', contextId: 'ctx-1', sentAt: null };
      await records.create(traced, {
        send,
        announce: [
          { topic: 'skill.dispatch.requested' },
          { topic: 'skill.dispatch.started', extra: { decision: 'allow' } },
        ],
      });
      expect(await records.get(traced.id)).toEqual(traced);
      const events = await outbox(traced.correlationId);
      expect(events.map((e) => e.topic)).toEqual([
        'skill.dispatch.requested',
        'skill.dispatch.started',
      ]);
      expect(events[1]!.payload).toEqual({ ...traced, decision: 'allow' });
      // Without a task id, it is an orphan once its holder is gone: what it sent comes along.
      const orphans = await records.orphans(1_000);
      expect(orphans.find((o) => o.record.id === traced.id)).toEqual({ record: traced, send });
      // Sending commits the ids before the first byte leaves, with its own event.
      const sent = { ...send, sentAt: 12_345 };
      await records.sending(traced, sent, { topic: 'skill.dispatch.started' });
      expect((await records.orphans(1_000)).find((o) => o.record.id === traced.id)?.send).toEqual(
        sent,
      );
      // One call in flight read with what it sent; none for a call that is not in flight.
      expect(await records.held(traced.id)).toEqual({ record: traced, send: sent });
      expect(await records.held('no-such-dispatch')).toBeUndefined();
      expect((await outbox(traced.correlationId)).map((e) => e.topic)).toHaveLength(3);
      // A record alone: no holder, no event.
      const bare = record();
      await records.create(bare);
      expect(await records.get(bare.id)).toEqual(bare);
      expect(await outbox(bare.correlationId)).toEqual([]);
      expect((await records.orphans(1_000)).some((o) => o.record.id === bare.id)).toBe(false);
    },
  );

  it.skipIf(skip)(
    'keeps who asked for a dispatch through every read, move and event; names nobody for a call nobody named',
    async () => {
      const send = { owner: 'gw-asked', messageId: 'm', contextId: 'c', sentAt: 1 };
      const asked = record({ requestedBy: 'alice' });
      await records.create(asked, { send, announce: [{ topic: 'skill.dispatch.requested' }] });
      expect(await records.get(asked.id)).toEqual(asked);
      expect(await records.list({ correlationId: asked.correlationId, limit: 5 })).toEqual([asked]);
      expect((await records.orphans(1_000)).find((o) => o.record.id === asked.id)?.record).toEqual(
        asked,
      );
      const moved = await records.update(asked.id, {
        status: 'awaiting-input',
        taskId: 't-asked',
        at: 30_000,
        announce: { topic: 'skill.dispatch.awaiting-input' },
      });
      expect(moved.record).toEqual({
        ...asked,
        status: 'awaiting-input',
        taskId: 't-asked',
        updatedAt: 30_000,
      });
      expect(await records.byTask('ops', 't-asked')).toEqual(moved.record);
      expect(
        (await records.adrift(1_000, ['gw-other'])).find((o) => o.record.id === asked.id)?.record
          .requestedBy,
      ).toBe('alice');
      // Its events carry the record as it stands, who asked included.
      const events = await outbox(asked.correlationId);
      expect(events.map((e) => e.payload)).toEqual([asked, moved.record]);

      const nobody = record();
      await records.create(nobody);
      const read = await records.get(nobody.id);
      expect(read).toEqual(nobody);
      expect(read).not.toHaveProperty('requestedBy');
    },
  );

  it.skipIf(skip)(
    'lists orphans oldest first, only calls in flight without a task id, and lets one process take each over',
    async () => {
      const send = { owner: 'gw-dead', messageId: 'm', contextId: 'c', sentAt: 1 };
      const older = record({ createdAt: 1 });
      const waiting = record({ status: 'awaiting-input', createdAt: 2 });
      const withTask = record({ taskId: 't-known', createdAt: 3 });
      const ended = record({ status: 'completed', createdAt: 4 });
      for (const r of [withTask, ended, waiting, older]) await records.create(r, { send });
      const found = (await records.orphans(1_000)).map((o) => o.record.id);
      const ours = found.filter((id) => [older, waiting, withTask, ended].some((r) => r.id === id));
      expect(ours).toEqual([older.id, waiting.id]);
      expect(await records.orphans(1)).toHaveLength(1);
      // Two replicas take the same orphan over: one wins.
      const taken = await Promise.all([
        records.takeOver(older.id, 'gw-dead', 'gw-b'),
        records.takeOver(older.id, 'gw-dead', 'gw-c'),
      ]);
      expect(taken.sort()).toEqual([false, true]);
      const owner = (await records.orphans(1_000)).find((o) => o.record.id === older.id)!.send
        .owner;
      expect(['gw-b', 'gw-c']).toContain(owner);
      expect(await records.takeOver('no-such-dispatch', 'gw-dead', 'gw-b')).toBe(false);
    },
  );

  it.skipIf(skip)(
    'lists followed dispatches adrift oldest first: in flight with a task id, held by none of the living',
    async () => {
      const holder = (owner: string) => ({ owner, messageId: 'm', contextId: 'c', sentAt: 1 });
      const dead = `gw-dead-${Math.random().toString(36).slice(2)}`;
      const older = record({ taskId: 't-older', createdAt: 1 });
      const asking = record({ status: 'awaiting-input', taskId: 't-asking', createdAt: 2 });
      const unsent = record({ createdAt: 3 });
      const ended = record({ status: 'completed', taskId: 't-ended', createdAt: 4 });
      const alive = record({ taskId: 't-alive', createdAt: 5 });
      for (const r of [unsent, ended, asking, older])
        await records.create(r, { send: holder(dead) });
      await records.create(alive, { send: holder('gw-alive') });
      const ids = [older, asking, unsent, ended, alive].map((r) => r.id);
      const adrift = async (living: string[], limit = 1_000) =>
        (await records.adrift(limit, living))
          .filter((o) => ids.includes(o.record.id))
          .map((o) => [o.record.id, o.send.owner]);
      expect(await adrift(['gw-alive'])).toEqual([
        [older.id, dead],
        [asking.id, dead],
      ]);
      expect(await adrift(['gw-other'])).toEqual([
        [older.id, dead],
        [asking.id, dead],
        [alive.id, 'gw-alive'],
      ]);
      expect(await adrift([dead, 'gw-alive'])).toEqual([]);
      expect(await records.adrift(1, ['gw-alive'])).toHaveLength(1);
    },
  );

  it.skipIf(skip)('finds a dispatch by its task', async () => {
    const r = record({ agent: 'ci', taskId: 'task-of-ci' });
    await records.create(r);
    expect(await records.byTask('ci', 'task-of-ci')).toEqual(r);
    expect(await records.byTask('ops', 'task-of-ci')).toBeUndefined();
    expect(await records.get('no-such-dispatch')).toBeUndefined();
  });

  it.skipIf(skip)(
    'lists by every filter, newest first, page by page across equal times',
    async () => {
      const at = 500_000;
      const made = [
        record({ agent: 'lister', skill: 'a', createdAt: at, id: 'l-1' }),
        record({ agent: 'lister', skill: 'b', createdAt: at, id: 'l-2' }),
        record({ agent: 'lister', skill: 'a', createdAt: at + 1, id: 'l-3', status: 'completed' }),
        record({ agent: 'lister', skill: 'a', createdAt: at - 1, id: 'l-4', correlationId: 'lc' }),
        record({ agent: 'other', skill: 'a', createdAt: at + 2, id: 'l-5' }),
      ];
      for (const r of made) await records.create(r);
      const ids = (list: DispatchRecord[]) => list.map((r) => r.id);
      expect(ids(await records.list({ agent: 'lister', limit: 10 }))).toEqual([
        'l-3',
        'l-2',
        'l-1',
        'l-4',
      ]);
      expect(ids(await records.list({ agent: 'lister', skill: 'a', limit: 10 }))).toEqual([
        'l-3',
        'l-1',
        'l-4',
      ]);
      expect(ids(await records.list({ agent: 'lister', status: 'completed', limit: 10 }))).toEqual([
        'l-3',
      ]);
      expect(ids(await records.list({ correlationId: 'lc', limit: 10 }))).toEqual(['l-4']);
      // Pages of two: the second starts after the last of the first, also within one millisecond.
      const first = await records.list({ agent: 'lister', limit: 2 });
      expect(ids(first)).toEqual(['l-3', 'l-2']);
      const second = await records.list({ agent: 'lister', limit: 2, before: 'l-2' });
      expect(ids(second)).toEqual(['l-1', 'l-4']);
      expect(await records.list({ agent: 'lister', limit: 2, before: 'no-such-dispatch' })).toEqual(
        [],
      );
      expect(await records.list({ agent: 'lister', limit: 2, before: 'l-4' })).toEqual([]);
    },
  );

  it.skipIf(skip)(
    'finds calls by the end of their id, any case, every character taken literally',
    async () => {
      const made = [
        record({ agent: 'ender', createdAt: 600_000, id: 'e-0a1b2c3d' }),
        record({ agent: 'ender', createdAt: 600_001, id: 'e-ffff2c3d' }),
        record({ agent: 'ender', createdAt: 600_002, id: 'e-Mixed-X9' }),
        record({ agent: 'ender', createdAt: 600_003, id: 'e-pct%_\\z' }),
        record({ agent: 'ender', createdAt: 600_004, id: 'e-pctAB\\z' }),
      ];
      for (const r of made) await records.create(r);
      const ids = (list: DispatchRecord[]) => list.map((r) => r.id);
      const ending = async (idEndsWith: string) =>
        ids(await records.list({ agent: 'ender', idEndsWith, limit: 10 }));
      expect(await ending('2c3d')).toEqual(['e-ffff2c3d', 'e-0a1b2c3d']);
      expect(await ending('A1B2C3D')).toEqual(['e-0a1b2c3d']);
      expect(await ending('mixed-x9')).toEqual(['e-Mixed-X9']);
      // `%` and `_` match themselves, not any text or any character; `\` is itself too.
      expect(await ending('%_\\z')).toEqual(['e-pct%_\\z']);
      expect(await ending('__\\z')).toEqual([]);
      expect(await ending('%z')).toEqual([]);
      expect(await ending('nothing')).toEqual([]);
      // Longer than any id: nothing, not the whole id.
      expect(await ending('xe-0a1b2c3d')).toEqual([]);
      expect(await ending('e-0a1b2c3d')).toEqual(['e-0a1b2c3d']);
    },
  );

  it.skipIf(skip)(
    'prunes dispatches that ended before the cut, with who held them, batch by batch',
    async () => {
      const cut = 2_000_000;
      const send = { owner: 'gw', messageId: 'm', contextId: 'c', sentAt: 1 };
      const old = ['completed', 'failed', 'rejected', 'canceled'].map((status) =>
        record({ status: status as DispatchRecord['status'], createdAt: 1, updatedAt: cut - 1 }),
      );
      const recent = record({ status: 'completed', updatedAt: cut + 1 });
      const running = record({ status: 'running', updatedAt: 1 });
      for (const r of [...old, recent, running]) await records.create(r, { send });
      expect(await records.prune(cut, 3)).toBeGreaterThanOrEqual(old.length);
      for (const r of old) expect(await records.get(r.id)).toBeUndefined();
      expect(await records.get(recent.id)).toBeDefined();
      expect(await records.get(running.id)).toBeDefined();
      expect(await records.prune(cut, 3)).toBe(0);
      const sends = await sql<{ n: number }>`
      select count(*) as n from fleetgate_dispatch_send where dispatch_id in (${sql.join(old.map((r) => r.id))})
    `.execute(opened.store.db);
      expect(Number(sends.rows[0]!.n)).toBe(0);
    },
  );

  it.skipIf(skip)(
    'writes a move’s announcement only when the move changed the dispatch',
    async () => {
      const r = record({ status: 'awaiting-approval' });
      await records.create(r);
      const change = {
        status: 'rejected' as const,
        at: 20_000,
        from: 'awaiting-approval' as const,
        announce: { topic: 'skill.dispatch.rejected' as const, extra: { reason: 'no' } },
      };
      const [a, b] = await Promise.all([
        records.update(r.id, change),
        records.update(r.id, change),
      ]);
      expect([a.changed, b.changed].sort()).toEqual([false, true]);
      const events = await outbox(r.correlationId);
      expect(events).toEqual([
        {
          topic: 'skill.dispatch.rejected',
          payload: { ...r, status: 'rejected', updatedAt: 20_000, reason: 'no' },
        },
      ]);
    },
  );

  it.skipIf(skip)(
    'announces a write that keeps the status when asked to (a note on a call), never an ended one',
    async () => {
      const r = record({ status: 'running' });
      await records.create(r);
      const result = {
        error: { code: 'FLEETGATE_DISPATCH_CANCELED', message: 'Canceled by olive.' },
      };
      const note = {
        status: 'running' as const,
        at: 21_000,
        from: 'running' as const,
        result,
        announce: {
          topic: 'skill.dispatch.cancel-requested' as const,
          extra: { canceledBy: 'olive' },
        },
        keepsStatus: true,
      };
      const noted = await records.update(r.id, note);
      expect(noted).toMatchObject({ changed: false, record: { status: 'running', result } });
      // Without `keepsStatus` the same write is not announced.
      await records.update(r.id, { ...note, keepsStatus: false, at: 21_500 });
      await records.update(r.id, { status: 'canceled', at: 22_000, from: 'running' });
      // The call ended: a late note changes nothing and announces nothing.
      const late = await records.update(r.id, { ...note, at: 23_000 });
      expect(late).toMatchObject({ changed: false, record: { status: 'canceled' } });
      expect(await outbox(r.correlationId)).toEqual([
        {
          topic: 'skill.dispatch.cancel-requested',
          payload: { ...r, status: 'running', updatedAt: 21_000, result, canceledBy: 'olive' },
        },
      ]);
    },
  );
});
