/**
 * The whole schema a fresh gateway store gets, pinned on both engines: every table with its
 * columns (type, nullability, default, collation), keys, constraints and indexes, as the catalog
 * reports them. A shipped migration never changes (a store migrated by an earlier release would not
 * run it again), so the pinned text changes only when a migration is added; then it is written
 * anew (`vitest run test/store-schema.test.ts -u`) and the diff shows exactly what the new
 * migration adds.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openGatewayStore, type GatewayStore } from '../src/service/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';

const pgUp = await requirePostgres();

/** SQLite's own record of each table and index, as created. */
async function sqliteSchema(store: GatewayStore): Promise<string> {
  const rows = await sql<{ type: string; name: string; sql: string | null }>`
    select type, name, sql from sqlite_master
    where name not like 'sqlite_%' and name not like 'fleetgate_migration%'
    order by type desc, name`.execute(store.db);
  return rows.rows
    .map((row) => `-- ${row.type} ${row.name}\n${row.sql ?? '(implicit)'};\n`)
    .join('\n');
}

/** PostgreSQL's catalog of a schema's tables, columns, constraints and indexes, schema-free. */
async function postgresSchema(store: GatewayStore, schema: string): Promise<string> {
  const columns = await sql<{
    table: string;
    column: string;
    type: string;
    not_null: boolean;
    default: string | null;
    collation: string | null;
  }>`
    select c.relname as table, a.attname as column, format_type(a.atttypid, a.atttypmod) as type,
      a.attnotnull as not_null, pg_get_expr(d.adbin, d.adrelid) as default,
      case when a.attcollation <> t.typcollation then co.collname end as collation
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    join pg_namespace n on n.oid = c.relnamespace
    join pg_type t on t.oid = a.atttypid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    left join pg_collation co on co.oid = a.attcollation
    where n.nspname = ${schema} and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped
      and c.relname not like 'fleetgate_migration%'
    order by c.relname, a.attnum`.execute(store.db);
  const constraints = await sql<{ table: string; name: string; definition: string }>`
    select c.relname as table, k.conname as name, pg_get_constraintdef(k.oid) as definition
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relname not like 'fleetgate_migration%'
    order by c.relname, k.conname`.execute(store.db);
  const indexes = await sql<{ name: string; definition: string }>`
    select indexname as name, indexdef as definition from pg_indexes
    where schemaname = ${schema} and tablename not like 'fleetgate_migration%'
    order by indexname`.execute(store.db);
  const local = (text: string): string =>
    text.replaceAll(`"${schema}".`, '').replaceAll(`${schema}.`, '');
  const out: string[] = [];
  let table = '';
  for (const column of columns.rows) {
    if (column.table !== table) {
      table = column.table;
      out.push(`\n-- table ${table}`);
    }
    const parts = [column.column, column.type];
    if (column.collation !== null) parts.push(`collate "${column.collation}"`);
    if (column.not_null) parts.push('not null');
    if (column.default !== null) parts.push(`default ${local(column.default)}`);
    out.push(parts.join(' '));
  }
  out.push('\n-- constraints');
  for (const k of constraints.rows) out.push(`${k.table}.${k.name}: ${k.definition}`);
  out.push('\n-- indexes');
  for (const index of indexes.rows) out.push(local(index.definition));
  return `${out.join('\n').trimStart()}\n`;
}

describe('the schema of a fresh gateway store', () => {
  it('is the pinned one on SQLite', async () => {
    const store = await openGatewayStore('sqlite::memory:');
    try {
      await expect(await sqliteSchema(store)).toMatchFileSnapshot(
        './fixtures/store-schema.sqlite.sql',
      );
    } finally {
      await store.close();
    }
  });

  it.skipIf(!pgUp)('is the pinned one on PostgreSQL', async () => {
    const schema = uniqueName('fleetgate_schema');
    const store = await openGatewayStore(PG_URL, { schema, poolSize: 2 });
    try {
      await expect(await postgresSchema(store, schema)).toMatchFileSnapshot(
        './fixtures/store-schema.postgres.sql',
      );
    } finally {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
      await store.close();
    }
  });
});
