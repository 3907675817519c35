/**
 * The task records' contract, one suite for every implementation: SQLite's prepared statements,
 * kysely on SQLite, and kysely on PostgreSQL. What recovery, the push receiver, retention and the
 * terminal claim rely on: a record is created once, a late sighting never moves a terminal record,
 * recovery pages through every record in flight whatever their order, retention deletes only
 * terminal records, and of several claims one wins and only its events reach the outbox.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createStoreTaskRecords,
  type TaskRecord,
  type TaskRecordStore,
} from '../src/tasks/index.js';
import { requirePostgres } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();

describe.each(storeVariants(pgUp))('task records ($kind, direct: $direct)', (variant) => {
  const { direct, skip } = variant;
  let opened: TestStore;
  let records: TaskRecordStore;
  let n = 0;

  beforeAll(async () => {
    if (skip) return;
    opened = await openTestStore(variant, 'fgtaskrec', 2);
    const { store } = opened;
    records = createStoreTaskRecords(store.db, direct ? { sqlite: store.sqlite } : {});
  });

  afterAll(async () => {
    if (!skip) await opened.remove();
  });

  function fresh(
    overrides: Partial<TaskRecord> = {},
  ): Omit<TaskRecord, 'terminalAt' | 'terminalVia'> {
    n += 1;
    return {
      agent: 'ops',
      taskId: `t-${n}`,
      skill: 'sitrep',
      correlationId: `c-${n}`,
      state: 'submitted',
      pushTokenHash: null,
      createdAt: 1_000 + n,
      updatedAt: 1_000 + n,
      ...overrides,
    };
  }

  async function outboxIds(): Promise<string[]> {
    const rows = await sql<{ id: string }>`select id from fleetgate_outbox order by seq`.execute(
      opened.store.db,
    );
    return rows.rows.map((r) => r.id);
  }

  it.skipIf(skip)('creates a record once and reads it back by its key and by task id', async () => {
    const record = fresh({ pushTokenHash: 'ab'.repeat(32) });
    await records.create(record);
    // A second create (another replica followed the same task) keeps the first as it is.
    await records.create({ ...record, skill: 'other', state: 'working', updatedAt: 9_999 });
    const expected = { ...record, terminalAt: null, terminalVia: null };
    expect(await records.get('ops', record.taskId)).toEqual(expected);
    expect(await records.get('ops', 'no-such-task')).toBeUndefined();
    // Task ids are the agents': two agents may share one.
    await records.create({ ...record, agent: 'ci' });
    const both = await records.byTaskId(record.taskId);
    expect(both.map((r) => r.agent).sort()).toEqual(['ci', 'ops']);
    expect(await records.byTaskId('no-such-task')).toEqual([]);
  });

  it.skipIf(skip)('notes a state in flight, never on a terminal record', async () => {
    const record = fresh();
    await records.create(record);
    await records.noteState('ops', record.taskId, 'working', 5_000);
    expect(await records.get('ops', record.taskId)).toMatchObject({
      state: 'working',
      updatedAt: 5_000,
    });
    expect(
      await records.claim('ops', record.taskId, { via: 'poll', state: 'completed', at: 6_000 }),
    ).toBe(true);
    // A late poll's sighting of the working state moves nothing.
    await records.noteState('ops', record.taskId, 'working', 7_000);
    expect(await records.get('ops', record.taskId)).toMatchObject({
      state: 'completed',
      updatedAt: 6_000,
      terminalAt: 6_000,
      terminalVia: 'poll',
    });
  });

  it.skipIf(skip)('lets one claim win, and writes only the winner’s events', async () => {
    const record = fresh();
    await records.create(record);
    const event = (id: string) => ({
      id,
      topic: 'skill.dispatch.completed',
      payload: { taskId: record.taskId, by: id },
      correlationId: record.correlationId,
    });
    const before = await outboxIds();
    // Three paths see the end at once: the reply, a poll and a push.
    const won = await Promise.all([
      records.claim('ops', record.taskId, { via: 'reply', state: 'completed', at: 2_000 }, [
        event(`${record.taskId}-reply`),
      ]),
      records.claim('ops', record.taskId, { via: 'poll', state: 'failed', at: 2_001 }, [
        event(`${record.taskId}-poll`),
      ]),
      records.claim('ops', record.taskId, { via: 'push', state: 'completed', at: 2_002 }, [
        event(`${record.taskId}-push`),
      ]),
    ]);
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = (['reply', 'poll', 'push'] as const)[won.indexOf(true)]!;
    expect(await records.get('ops', record.taskId)).toMatchObject({ terminalVia: winner });
    const added = (await outboxIds()).filter((id) => !before.includes(id));
    expect(added).toEqual([`${record.taskId}-${winner}`]);
  });

  it.skipIf(skip)(
    'records a task never followed as terminal when the claim names its call',
    async () => {
      const { taskId, correlationId } = fresh();
      const call = { skill: 'sitrep', correlationId, startedAt: 1_500 };
      expect(
        await records.claim('ops', taskId, { via: 'reply', state: 'completed', at: 1_700, call }, [
          { id: `${taskId}-e`, topic: 'skill.dispatch.completed', payload: {}, correlationId },
        ]),
      ).toBe(true);
      expect(await records.get('ops', taskId)).toEqual({
        agent: 'ops',
        taskId,
        skill: 'sitrep',
        correlationId,
        state: 'completed',
        pushTokenHash: null,
        createdAt: 1_500,
        updatedAt: 1_700,
        terminalAt: 1_700,
        terminalVia: 'reply',
      });
      expect(await outboxIds()).toContain(`${taskId}-e`);
      // The same reply seen again (a restart's recovery): it lost, and wrote nothing.
      expect(
        await records.claim('ops', taskId, { via: 'reply', state: 'completed', at: 1_800, call }, [
          { id: `${taskId}-again`, topic: 'skill.dispatch.completed', payload: {}, correlationId },
        ]),
      ).toBe(false);
      expect(await outboxIds()).not.toContain(`${taskId}-again`);
      // Without the call, a task never recorded is not claimed.
      expect(
        await records.claim('ops', 'never-seen', { via: 'push', state: 'completed', at: 1 }),
      ).toBe(false);
      expect(await records.get('ops', 'never-seen')).toBeUndefined();
    },
  );

  it.skipIf(skip)('pages through every record in flight, in order, across ties', async () => {
    // Records in flight that share a creation time and an agent: the page key takes the task id.
    const at = 50_000;
    const created = [
      fresh({ agent: 'b', taskId: 'x2', createdAt: at }),
      fresh({ agent: 'a', taskId: 'x3', createdAt: at }),
      fresh({ agent: 'b', taskId: 'x1', createdAt: at }),
      fresh({ agent: 'a', taskId: 'x1', createdAt: at + 1 }),
      fresh({ agent: 'a', taskId: 'x0', createdAt: at - 1 }),
    ];
    for (const record of created) await records.create(record);
    await records.claim('b', 'x2', { via: 'poll', state: 'completed', at: at + 5 });
    const seen: string[] = [];
    let after: Pick<TaskRecord, 'createdAt' | 'agent' | 'taskId'> | undefined;
    for (;;) {
      const page = await records.inFlight({ ...(after === undefined ? {} : { after }), limit: 2 });
      seen.push(...page.map((r) => `${r.createdAt}/${r.agent}/${r.taskId}`));
      if (page.length < 2) break;
      after = page[page.length - 1]!;
    }
    const ours = seen.filter(
      (key) => Number(key.split('/')[0]) >= at - 1 && Number(key.split('/')[0]) <= at + 1,
    );
    expect(ours).toEqual([`${at - 1}/a/x0`, `${at}/a/x3`, `${at}/b/x1`, `${at + 1}/a/x1`]);
    // Every record in flight once, none terminal.
    expect(new Set(seen).size).toBe(seen.length);
    for (const key of seen) {
      const [, agent, taskId] = key.split('/');
      expect((await records.get(agent!, taskId!))!.terminalAt).toBeNull();
    }
  });

  it.skipIf(skip)(
    'prunes terminal records claimed before the cut, batch by batch, never one in flight',
    async () => {
      const cut = 900_000;
      const old = [fresh(), fresh(), fresh()];
      const recent = fresh();
      const inFlight = fresh({ createdAt: 1 });
      for (const record of [...old, recent, inFlight]) await records.create(record);
      for (const record of old) {
        await records.claim(record.agent, record.taskId, {
          via: 'poll',
          state: 'completed',
          at: cut - 10,
        });
      }
      await records.claim(recent.agent, recent.taskId, {
        via: 'poll',
        state: 'completed',
        at: cut + 10,
      });
      // Records of the other cases were claimed long before the cut too: prune counts them all.
      const pruned = await records.prune(cut, 2);
      expect(pruned).toBeGreaterThanOrEqual(old.length);
      for (const record of old)
        expect(await records.get(record.agent, record.taskId)).toBeUndefined();
      expect(await records.get(recent.agent, recent.taskId)).toBeDefined();
      expect(await records.get(inFlight.agent, inFlight.taskId)).toBeDefined();
      expect(await records.prune(cut, 2)).toBe(0);
    },
  );
});
