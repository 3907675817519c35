/**
 * The gateway's migrations are composed from the domains that own them; a store migrated by an
 * earlier release (one list in the store, `0001_outbox` … `0005_dispatch`) must see the same
 * names in the same order and the same schema, or it would run them again or miss a table.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { GATEWAY_MIGRATIONS, openGatewayStore } from '../src/service/index.js';

interface PinnedSchema {
  migrations: string[];
  schema: { type: string; name: string; sql: string | null }[];
}

const pinned = JSON.parse(
  readFileSync(new URL('./fixtures/store-schema-0005.json', import.meta.url), 'utf8'),
) as PinnedSchema;

describe('GATEWAY_MIGRATIONS', () => {
  it('keeps the shipped migration names, in order', () => {
    expect(Object.keys(GATEWAY_MIGRATIONS)).toEqual(pinned.migrations);
  });

  it('creates exactly the shipped schema (tables, columns, indexes) on SQLite', async () => {
    const store = await openGatewayStore('sqlite::memory:');
    try {
      expect(store.migrated).toEqual(pinned.migrations);
      const rows = await sql<PinnedSchema['schema'][number]>`
        select type, name, sql from sqlite_master
        where name not like 'sqlite_%' and name not like 'fleetgate_migration%'
        order by name`.execute(store.db);
      expect(rows.rows).toEqual(pinned.schema);
    } finally {
      await store.close();
    }
  });
});
