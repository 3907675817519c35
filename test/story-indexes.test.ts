/**
 * The call page's story reads one call's events from the outbox by correlation id and its world
 * changes from the audit log by agent and task (routes-calls.ts): on SQLite and on PostgreSQL
 * those reads go through the indexes of `0700_story_indexes`, not through every row of the
 * tables. The queries here have the story route's shape (filter, order, limit).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';

const pgUp = await requirePostgres();

/** Outbox rows over correlation ids, audit rows over tasks: enough that a scan costs more. */
const OUTBOX_ROWS = 6000;
const CORRELATIONS = 1500;
const AUDIT_ROWS = 8000;
const TASKS = 2000;

async function seed(db: Kysely<unknown>): Promise<void> {
  for (let from = 0; from < OUTBOX_ROWS; from += 500) {
    const rows = Array.from({ length: 500 }, (_, i) => {
      const n = from + i;
      return sql`(${`ev-${n}`}, 'world.state.delta', '{}', ${`corr-${n % CORRELATIONS}`},
        '2026-01-01T00:00:00.000Z', ${n}, ${n})`;
    });
    await sql`insert into fleetgate_outbox
      (id, topic, payload, correlation_id, time, created_at, sent_at)
      values ${sql.join(rows)}`.execute(db);
  }
  for (let from = 0; from < AUDIT_ROWS; from += 500) {
    const rows = Array.from({ length: 500 }, (_, i) => {
      const n = from + i;
      return sql`('board', ${`data.p${n % 40}`}, 'set', '1', null, '1', 'applied', null, ${n},
        ${`agent-${n % 7}`}, 'sitrep', ${`task-${n % TASKS}`}, ${`delta-${n}`}, 0,
        '2026-01-01T00:00:00.000Z', ${n})`;
    });
    await sql`insert into fleetgate_world_audit
      (domain, path, op, value, previous, next, status, reason, version, agent, skill, task_id,
       event_id, entry_index, time, recorded_at)
      values ${sql.join(rows)}`.execute(db);
  }
}

/** The story route's two reads, with the values of one call. */
const eventsOfCall = sql`select seq, id, topic, payload, time, created_at from fleetgate_outbox
  where correlation_id = ${'corr-17'} order by seq limit ${2000}`;
const changesOfTask = sql`select seq, domain, path, op, value, previous, next, status, reason,
  version, recorded_at from fleetgate_world_audit
  where task_id = ${'task-17'} and agent = ${'agent-3'} order by seq limit ${5000}`;

async function sqlitePlan(db: Kysely<unknown>, query: RawBuilder<unknown>): Promise<string> {
  const plan = await sql<{ detail: string }>`explain query plan ${query}`.execute(db);
  return plan.rows.map((r) => r.detail).join('\n');
}

async function postgresPlan(db: Kysely<unknown>, query: RawBuilder<unknown>): Promise<string> {
  const plan = await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(db);
  return plan.rows.map((r) => r['QUERY PLAN']).join('\n');
}

describe('the call story on SQLite', () => {
  let store: GatewayStore;

  beforeAll(async () => {
    store = await openGatewayStore('sqlite::memory:');
    await seed(store.db as Kysely<unknown>);
  });
  afterAll(async () => {
    await store?.close();
  });

  it('reads a call’s events through the outbox index by correlation id, in seq order', async () => {
    const plan = await sqlitePlan(store.db as Kysely<unknown>, eventsOfCall);
    expect(plan).toContain('USING INDEX fleetgate_outbox_by_correlation (correlation_id=?)');
    expect(plan).not.toMatch(/^SCAN fleetgate_outbox/m);
    // The index gives the order: no temporary b-tree to sort.
    expect(plan).not.toContain('TEMP B-TREE');
  });

  it('reads a task’s world changes through the audit index by agent and task', async () => {
    const plan = await sqlitePlan(store.db as Kysely<unknown>, changesOfTask);
    expect(plan).toContain('USING INDEX fleetgate_world_audit_by_task (agent=? AND task_id=?)');
    expect(plan).not.toContain('TEMP B-TREE');
  });
});

describe.skipIf(!pgUp)('the call story on PostgreSQL', () => {
  const schema = uniqueName('fgstory');
  let store: GatewayStore;

  beforeAll(async () => {
    store = await openGatewayStore(PG_URL, { schema });
    await seed(store.db as Kysely<unknown>);
    // Statistics as a running gateway's autovacuum would have gathered them.
    await sql`analyze fleetgate_outbox`.execute(store.db);
    await sql`analyze fleetgate_world_audit`.execute(store.db);
  }, 60_000);
  afterAll(async () => {
    if (store !== undefined) {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
      await store.close();
    }
  });

  it('reads a call’s events through the outbox index by correlation id', async () => {
    const plan = await postgresPlan(store.db as Kysely<unknown>, eventsOfCall);
    expect(plan).toMatch(
      /Index (Only )?Scan.* on fleetgate_outbox_by_correlation|Bitmap Index Scan on fleetgate_outbox_by_correlation/,
    );
    expect(plan).not.toContain('Seq Scan');
  });

  it('reads a task’s world changes through the audit index by agent and task', async () => {
    const plan = await postgresPlan(store.db as Kysely<unknown>, changesOfTask);
    expect(plan).toMatch(
      /Index (Only )?Scan using fleetgate_world_audit_by_task|Bitmap Index Scan on fleetgate_world_audit_by_task/,
    );
    expect(plan).not.toContain('Seq Scan');
  });
});
