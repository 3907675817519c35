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

/** Shipped indexes a later migration dropped, by name, with that migration. */
const RETIRED: ReadonlyMap<string, string> = new Map([
  // No query read through it; placing every audit row in it was most of an audit write.
  ['fleetgate_world_audit_domain_path', '0301_world_audit_path_index'],
]);

/**
 * Nullable columns a later migration added to a shipped table, by table, with that migration
 * (SQLite keeps the table's text with the added columns appended). Replicas of the release before
 * keep writing such a table, leaving the column out.
 */
const ADDED: ReadonlyMap<string, readonly { migration: string; columns: string }[]> = new Map([
  [
    'fleetgate_dispatch',
    [
      // Who asked for a call.
      { migration: '0900_dispatch_requester', columns: '"requested_by" text' },
      // The door it came through; who holds it, what it sent and its trace context, on its row.
      {
        migration: '1000_dispatch_call_columns',
        columns:
          '"door" text, "owner" text, "message_id" text, "context_id" text, "sent_at" bigint, ' +
          '"traceparent" text',
      },
    ],
  ],
]);

/** A shipped table or index as it stands after every migration: with the columns added since. */
function withAdded(row: PinnedSchema['schema'][number]): PinnedSchema['schema'][number] {
  const added = ADDED.get(row.name);
  if (added === undefined || row.type !== 'table' || row.sql === null) return row;
  const columns = added.map((a) => a.columns).join(', ');
  return { ...row, sql: row.sql.replace(/\)$/, `, ${columns})`) };
}

describe('GATEWAY_MIGRATIONS', () => {
  it('keeps the shipped migration names, in order, and adds new ones after them', () => {
    const names = Object.keys(GATEWAY_MIGRATIONS);
    expect(names.slice(0, pinned.migrations.length)).toEqual(pinned.migrations);
    for (const added of names.slice(pinned.migrations.length)) {
      expect(added > pinned.migrations.at(-1)!).toBe(true);
    }
  });

  it('keeps exactly the shipped schema (tables, columns, indexes) on SQLite', async () => {
    const store = await openGatewayStore('sqlite::memory:');
    try {
      expect(store.migrated.slice(0, pinned.migrations.length)).toEqual(pinned.migrations);
      const rows = await sql<PinnedSchema['schema'][number]>`
        select type, name, sql from sqlite_master
        where name not like 'sqlite_%' and name not like 'fleetgate_migration%'
        order by name`.execute(store.db);
      // The shipped tables and indexes are exactly as they were; later migrations only add, but
      // for an index a later migration retired and the nullable columns later migrations added
      // (named here, with the migration that did).
      const shipped = new Set(pinned.schema.map((row) => row.name));
      expect(rows.rows.filter((row) => shipped.has(row.name))).toEqual(
        pinned.schema.filter((row) => !RETIRED.has(row.name)).map(withAdded),
      );
      for (const [name, migration] of RETIRED) {
        expect(store.migrated).toContain(migration);
        expect(rows.rows.map((row) => row.name)).not.toContain(name);
      }
      for (const { migration } of [...ADDED.values()].flat()) {
        expect(store.migrated).toContain(migration);
      }
    } finally {
      await store.close();
    }
  });
});
