/**
 * Undoing `0800_proxy_task_agent_id` on a PostgreSQL store kept in its own schema looks at its own
 * `fleetgate_proxy_task` only, not at another gateway's store in another schema of the same
 * database (kysely's introspection lists the tables of every schema).
 */
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { GATEWAY_MIGRATIONS, openGatewayStore, type GatewayStore } from '../src/service/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';

const pgUp = await requirePostgres();

const MIGRATION = '0800_proxy_task_agent_id';
const INDEX = 'fleetgate_proxy_task_by_agent_task';

/**
 * The stores a test opened, closed (their schemas dropped) after each test: a pair left for the
 * suite's end would sort before the next test's and stand in for its `other`.
 */
const opened: { store: GatewayStore; schema: string }[] = [];

afterEach(async () => {
  for (const { store, schema } of opened.splice(0)) {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
    await store.close();
  }
});

/**
 * Two freshly migrated gateway stores in two schemas of the test database: `own`, whose migration
 * is undone, and `other`. The other's name sorts before every other schema (`_` comes before any
 * letter), so a lookup across schemas finds its table first.
 */
async function openPair(): Promise<{ own: GatewayStore; other: GatewayStore }> {
  const other = uniqueName('_fg0800_other');
  const own = uniqueName('fg0800_own');
  const stores = {
    other: await openGatewayStore(PG_URL, { schema: other, poolSize: 1 }),
    own: await openGatewayStore(PG_URL, { schema: own, poolSize: 1 }),
  };
  opened.push({ store: stores.other, schema: other }, { store: stores.own, schema: own });
  return stores;
}

/** Whether the store's own `fleetgate_proxy_task` has the column, and whether the index exists. */
async function proxyTaskShape(store: GatewayStore): Promise<{ column: boolean; index: boolean }> {
  const columns = await sql<{ n: number }>`select count(*)::int as n from information_schema.columns
    where table_schema = current_schema() and table_name = 'fleetgate_proxy_task'
      and column_name = 'agent_task_id'`.execute(store.db);
  const indexes = await sql<{ n: number }>`select count(*)::int as n from pg_indexes
    where schemaname = current_schema() and indexname = ${INDEX}`.execute(store.db);
  return { column: columns.rows[0]!.n === 1, index: indexes.rows[0]!.n === 1 };
}

/** Puts a store in the state of one that ran 0800 when it still dropped the column. */
async function dropAgentTaskId(store: GatewayStore): Promise<void> {
  await sql`alter table fleetgate_proxy_task drop column agent_task_id`.execute(store.db);
}

/** Undoes 0800 on `store`, as the Migrator does (migrations see the store's tables untyped). */
async function undo0800(store: GatewayStore): Promise<void> {
  await GATEWAY_MIGRATIONS[MIGRATION]!.down!(store.db as Kysely<unknown>, 'postgres');
}

describe.skipIf(!pgUp)(`undoing ${MIGRATION} beside another schema`, () => {
  it('gives its own table the column back when another schema still has it', async () => {
    const { own, other } = await openPair();
    await dropAgentTaskId(own);
    expect(await proxyTaskShape(own)).toEqual({ column: false, index: false });

    await undo0800(own);

    expect(await proxyTaskShape(own)).toEqual({ column: true, index: true });
    expect(await proxyTaskShape(other)).toEqual({ column: true, index: false });
  });

  it('adds no column to its own table when another schema lacks it', async () => {
    const { own, other } = await openPair();
    await dropAgentTaskId(other);
    expect(await proxyTaskShape(own)).toEqual({ column: true, index: false });

    await undo0800(own);

    expect(await proxyTaskShape(own)).toEqual({ column: true, index: true });
    expect(await proxyTaskShape(other)).toEqual({ column: false, index: false });
  });
});
