/**
 * Bounded bookkeeping: restart recovery pages through every task in flight (not the first
 * 10,000), and the gateway's retention sweep deletes old sent outbox rows, terminal task records,
 * ended dispatches and the proxy's ended tasks with their push configurations and deliveries —
 * never anything still in flight — on SQLite and PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import type { DispatchRecord } from '../src/dispatch/index.js';
import { createStoreDispatchRecords } from '../src/dispatch/index.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import type { TaskRecord } from '../src/tasks/index.js';
import { createStoreTaskRecords, TaskTracker } from '../src/tasks/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { assembleGateway } from '../src/service/internal.js';
import { loadA2aProxy } from '../src/service/proxy/index.js';

const pgUp = await requirePostgres();
const { createProxyTaskStore } = await loadA2aProxy();
const DAY = 86_400_000;
const NOW = 1_900_000_000_000;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function sqliteUrl(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-retention-'));
  dirs.push(dir);
  return `sqlite:${join(dir, 'gw.db')}`;
}

function taskRow(i: number, createdAt: number, terminalAt: number | null) {
  return {
    agent: i % 2 === 0 ? 'ops' : 'ci',
    task_id: `task-${String(i).padStart(6, '0')}`,
    skill: 'pr_review',
    correlation_id: `c-${i}`,
    state: terminalAt === null ? 'working' : 'completed',
    push_token_hash: null,
    created_at: createdAt,
    updated_at: createdAt,
    terminal_at: terminalAt,
    terminal_via: terminalAt === null ? null : 'poll',
  };
}

describe('restart recovery', () => {
  it('recovers every task in flight, past 10,000, each once', async () => {
    const store = await openGatewayStore(sqliteUrl());
    try {
      const rows = Array.from({ length: 10_050 }, (_, i) =>
        // Many share a creation time: paging must not skip or repeat within one.
        taskRow(i, NOW - 1000 + Math.floor(i / 7), null),
      );
      rows.push(taskRow(99_999, NOW, NOW)); // terminal: not recovered
      for (let i = 0; i < rows.length; i += 500) {
        await store.db
          .insertInto('fleetgate_task')
          .values(rows.slice(i, i + 500))
          .execute();
      }
      const records = createStoreTaskRecords(store.db);
      const seen = new Set<string>();
      let after: TaskRecord | undefined;
      for (;;) {
        const page = await records.inFlight({ limit: 333, ...(after ? { after } : {}) });
        for (const r of page) seen.add(`${r.agent}/${r.taskId}`);
        after = page.at(-1);
        if (page.length < 333) break;
      }
      expect(seen.size).toBe(10_050);
      const tracker = new TaskTracker({
        records,
        // Never polled in this test: the polls are an hour away.
        polling: { intervalMs: 3_600_000 },
        fleet: {
          terminal: { release: () => false } as never,
          agentClient: () => Promise.reject(new Error('not called')),
        },
        now: () => NOW,
      });
      try {
        expect(await tracker.recover()).toBe(10_050);
        expect(tracker.size).toBe(10_050);
      } finally {
        tracker.stop();
      }
    } finally {
      await store.close();
    }
  });
});

async function seed(store: GatewayStore): Promise<void> {
  const old = NOW - 40 * DAY;
  const recent = NOW - DAY;
  const outbox = (id: string, sentAt: number | null, createdAt: number) => ({
    id,
    topic: 'world.state.delta',
    payload: '{}',
    correlation_id: id,
    time: new Date(createdAt).toISOString(),
    created_at: createdAt,
    sent_at: sentAt,
    last_error: null,
  });
  await store.db
    .insertInto('fleetgate_outbox')
    .values([
      outbox('sent-old', old, old),
      outbox('sent-recent', recent, recent),
      outbox('unsent-old', null, old),
    ])
    .execute();
  await store.db
    .insertInto('fleetgate_task')
    .values([taskRow(1, old, old), taskRow(2, recent, recent), taskRow(3, old, null)])
    .execute();
  const dispatches = createStoreDispatchRecords(store.db);
  const dispatch = (id: string, status: DispatchRecord['status'], at: number): DispatchRecord => ({
    id,
    agent: 'ops',
    skill: 'pr_review',
    correlationId: id,
    status,
    taskId: null,
    createdAt: at,
    updatedAt: at,
    result: null,
  });
  await dispatches.create(dispatch('ended-old', 'completed', old));
  await dispatches.create(dispatch('failed-old', 'failed', old));
  await dispatches.create(dispatch('ended-recent', 'completed', recent));
  await dispatches.create(dispatch('waiting-old', 'awaiting-approval', old));
  await dispatches.create(dispatch('running-old', 'running', old));
  const proxyTask = (id: string, state: string, at: number) => ({
    id,
    agent: 'ops',
    caller: 'alice',
    message_id: `m-${id}`,
    context_id: `c-${id}`,
    state,
    task: JSON.stringify({ id, contextId: `c-${id}` }),
    protocol: '1.0',
    created_at: at,
    updated_at: at,
  });
  await store.db
    .insertInto('fleetgate_proxy_task')
    .values([
      proxyTask('proxy-ended-old', 'completed', old),
      proxyTask('proxy-rejected-old', 'rejected', old),
      proxyTask('proxy-ended-recent', 'completed', recent),
      proxyTask('proxy-working-old', 'working', old),
      proxyTask('proxy-held-old', 'input-required', old),
    ])
    .execute();
  // A client's push configuration and a delivery of each of an old ended and a running task.
  for (const taskId of ['proxy-ended-old', 'proxy-working-old']) {
    await store.db
      .insertInto('fleetgate_proxy_push')
      .values({
        task_id: taskId,
        config_id: 'hook',
        config: '{}',
        protocol: '1.0',
        created_at: old,
      })
      .execute();
    await store.db
      .insertInto('fleetgate_proxy_push_delivery')
      .values({
        task_id: taskId,
        config_id: 'hook',
        state: 'working',
        status: 'delivered',
        attempts: 1,
        last_error: null,
        updated_at: old,
        next_at: null,
        task: null,
      })
      .execute();
  }
}

async function left(store: GatewayStore) {
  const ids = async (table: 'fleetgate_outbox' | 'fleetgate_dispatch' | 'fleetgate_proxy_task') =>
    (await store.db.selectFrom(table).select('id').orderBy('id').execute()).map((r) => r.id);
  return {
    outbox: await ids('fleetgate_outbox'),
    tasks: (
      await store.db.selectFrom('fleetgate_task').select('task_id').orderBy('task_id').execute()
    ).map((r) => r.task_id),
    dispatches: await ids('fleetgate_dispatch'),
    proxyTasks: await ids('fleetgate_proxy_task'),
    proxyPushes: (
      await store.db.selectFrom('fleetgate_proxy_push').select('task_id').execute()
    ).map((r) => r.task_id),
    proxyDeliveries: (
      await store.db.selectFrom('fleetgate_proxy_push_delivery').select('task_id').execute()
    ).map((r) => r.task_id),
  };
}

const EXPECTED_LEFT = {
  outbox: ['sent-recent', 'unsent-old'],
  tasks: ['task-000002', 'task-000003'],
  dispatches: ['ended-recent', 'running-old', 'waiting-old'],
  // The proxy's view of a dispatch goes with it; one still running or held stays.
  proxyTasks: ['proxy-ended-recent', 'proxy-held-old', 'proxy-working-old'],
  proxyPushes: ['proxy-working-old'],
  proxyDeliveries: ['proxy-working-old'],
};

describe('retention sweep', () => {
  it('deletes old sent, terminal and ended rows and keeps everything in flight (SQLite, through createGateway)', async () => {
    const url = sqliteUrl();
    const store = await openGatewayStore(url);
    await seed(store);
    await store.close();
    const { gateway: gw, parts } = await assembleGateway(
      { store: url, retention: { outbox: '7d', tasks: '7d', dispatches: '30d', interval: 0 } },
      { now: () => NOW, relay: false },
    );
    try {
      expect(await parts.retention.sweep()).toEqual({
        outbox: 1,
        tasks: 1,
        dispatches: 2,
        proxyTasks: 2,
      });
      expect(await left(parts.store)).toEqual(EXPECTED_LEFT);
      // A second sweep finds nothing more.
      expect(await parts.retention.sweep()).toEqual({
        outbox: 0,
        tasks: 0,
        dispatches: 0,
        proxyTasks: 0,
      });
    } finally {
      await gw.close();
    }
  });

  it('keeps rows forever when an age is 0', async () => {
    const url = sqliteUrl();
    const store = await openGatewayStore(url);
    await seed(store);
    await store.close();
    const { gateway: gw, parts } = await assembleGateway(
      { store: url, retention: { outbox: 0, tasks: 0, dispatches: 0, interval: 0 } },
      { now: () => NOW, relay: false },
    );
    try {
      expect(await parts.retention.sweep()).toEqual({
        outbox: 0,
        tasks: 0,
        dispatches: 0,
        proxyTasks: 0,
      });
      expect((await left(parts.store)).proxyTasks).toHaveLength(5);
    } finally {
      await gw.close();
    }
  });

  it.skipIf(!pgUp)('deletes in batches on PostgreSQL', async () => {
    const schema = uniqueName('fgret');
    const store = await openGatewayStore(PG_URL, { schema });
    try {
      await seed(store);
      const tasks = createStoreTaskRecords(store.db);
      const dispatches = createStoreDispatchRecords(store.db);
      const { pruneOutbox } = await import('../src/bus/index.js');
      expect(await pruneOutbox(store.db, NOW - 7 * DAY, 1)).toBe(1);
      expect(await tasks.prune(NOW - 7 * DAY, 1)).toBe(1);
      expect(await dispatches.prune(NOW - 30 * DAY, 1)).toBe(2);
      expect(await createProxyTaskStore(store.db).prune(NOW - 30 * DAY, 1)).toBe(2);
      expect(await left(store)).toEqual(EXPECTED_LEFT);
    } finally {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
      await store.close();
    }
  });
});
