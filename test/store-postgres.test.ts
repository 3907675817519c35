/** The store on the real PostgreSQL server: schema isolation, migrations once, BIGINT as number. */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { GATEWAY_MIGRATIONS, openGatewayStore } from '../src/service/index.js';

const pgUp = await requirePostgres();

describe.skipIf(!pgUp)('openStore on PostgreSQL', () => {
  it('opens one new schema from several processes starting at once (replicas)', async () => {
    const schema = uniqueName('fgrace');
    const opened = await Promise.allSettled(
      Array.from({ length: 8 }, () => openGatewayStore(PG_URL, { schema })),
    );
    try {
      expect(opened.map((o) => o.status)).toEqual(Array(8).fill('fulfilled'));
      const migrated = opened.flatMap((o) => (o.status === 'fulfilled' ? o.value.migrated : []));
      // The migrations ran once between them.
      expect(migrated).toEqual(Object.keys(GATEWAY_MIGRATIONS));
    } finally {
      const stores = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
      if (stores[0] !== undefined) {
        await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(stores[0].db);
      }
      for (const store of stores) await store.close();
    }
  });

  it('migrates a fresh schema once and reads BIGINT columns as numbers', async () => {
    const schema = uniqueName('fgst');
    const first = await openGatewayStore(PG_URL, { schema });
    try {
      expect(first.kind).toBe('postgres');
      expect(first.migrated).toEqual(Object.keys(GATEWAY_MIGRATIONS));
      const second = await openGatewayStore(PG_URL, { schema });
      try {
        expect(second.migrated).toEqual([]);
      } finally {
        await second.close();
      }
      await first.db
        .insertInto('fleetgate_outbox')
        .values({
          id: 'e1',
          topic: 't',
          payload: '{}',
          correlation_id: 'e1',
          time: new Date(0).toISOString(),
          created_at: 1_800_000_000_000,
          sent_at: null,
          last_error: null,
        })
        .execute();
      const row = await first.db
        .selectFrom('fleetgate_outbox')
        .selectAll()
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ seq: 1, created_at: 1_800_000_000_000, attempts: 0 });
      const where = await sql<{ t: string }>`select table_schema as t from information_schema.tables
        where table_name = 'fleetgate_outbox' and table_schema = ${schema}`.execute(first.db);
      expect(where.rows).toEqual([{ t: schema }]);
    } finally {
      await sql`drop schema ${sql.id(schema)} cascade`.execute(first.db);
      await first.close();
    }
  });
});
