/**
 * Migrations declare their tables and indexes in the words of SQL and the store spells them for
 * the engine: a declaration it cannot read fails the migration with a coded error naming the
 * table and column (or index) and the form expected, and undoing a migration drops what it
 * declared. Both engines.
 */
import { sql, type Kysely, type TableMetadata } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  composeMigrations,
  openStore,
  type Store,
  type StoreMigrations,
} from '../src/store/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';

const pgUp = await requirePostgres();

/**
 * The tables of the store's own schema: kysely's introspection lists every schema of the
 * database, and the shared test database may hold other tables (another suite's, a store opened
 * there by hand).
 */
async function ownTables(store: Store<unknown>): Promise<TableMetadata[]> {
  const tables = await store.db.introspection.getTables();
  if (store.kind === 'sqlite') return tables;
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
    store.db,
  );
  return tables.filter((t) => t.schema === rows[0]!.schema);
}

const ENGINES = [
  { kind: 'sqlite' as const, skip: false },
  { kind: 'postgres' as const, skip: !pgUp },
];

/** Opens a fresh store of `kind` with `migrations`, runs `work`, and removes the store. */
async function withStore(
  kind: 'sqlite' | 'postgres',
  migrations: StoreMigrations,
  work: (store: Store<unknown>) => Promise<void>,
): Promise<void> {
  const schema = uniqueName('fleetgate_declared');
  const store =
    kind === 'sqlite'
      ? await openStore<unknown>('sqlite::memory:', { migrations })
      : await openStore<unknown>(PG_URL, { migrations, schema, poolSize: 2 });
  try {
    await work(store);
  } finally {
    if (kind === 'postgres') {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
    }
    await store.close();
  }
}

/** The tables and indexes of a store, by name. */
async function names(store: Store<unknown>): Promise<{ tables: string[]; indexes: string[] }> {
  const tables = await ownTables(store);
  const indexes =
    store.kind === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'index'
          and name not like 'sqlite_%'`.execute(store.db)
      : await sql<{ name: string }>`select indexname as name from pg_indexes
          where schemaname = current_schema() and indexname not in (select conname from pg_constraint)`.execute(
          store.db,
        );
  return {
    tables: tables.map((t) => t.name).filter((n) => !n.startsWith('fleetgate_migration')),
    indexes: indexes.rows.map((r) => r.name).sort(),
  };
}

describe.each(ENGINES)('declared tables on $kind', ({ kind, skip }) => {
  it.skipIf(skip)('builds each column as declared and keys a serial', async () => {
    const migrations = composeMigrations({
      '0001_items': {
        tables: {
          item: {
            columns: {
              seq: 'serial primary key',
              name: 'text collate "C" not null unique',
              tries: 'integer not null default 3',
              copy: 'int64',
            },
          },
        },
        indexes: { item_untried: 'item (seq) where copy is null' },
      },
    });
    await withStore(kind, migrations, async (store) => {
      const db = store.db as unknown as Kysely<{
        item: { seq?: number; name: string; tries?: number; copy?: number | null };
      }>;
      await db.insertInto('item').values({ name: 'b' }).execute();
      await db.insertInto('item').values({ name: 'B' }).execute();
      const rows = await db.selectFrom('item').selectAll().orderBy('name').execute();
      // Byte order on both engines ('B' < 'b'), keys that grow, the default, a nullable int64.
      expect(rows.map((r) => [r.name, Number(r.seq), Number(r.tries), r.copy])).toEqual([
        ['B', 2, 3, null],
        ['b', 1, 3, null],
      ]);
      await expect(db.insertInto('item').values({ name: 'b' }).execute()).rejects.toThrow();
      expect((await names(store)).indexes).toContain('item_untried');
    });
  });

  it.skipIf(skip)(
    'refuses a column it cannot read, naming the migration, the column and the form',
    async () => {
      for (const [spec, form] of [
        ['txt not null', 'type [collate "C"]'],
        ['text null', 'type [collate "C"]'],
        ['serial', 'serial only as a primary key'],
        ['bigint collate "C"', 'collate only on text'],
      ] as const) {
        const failing = withStore(
          kind,
          composeMigrations({ '0001_bad': { tables: { thing: { columns: { id: spec } } } } }),
          () => Promise.resolve(),
        );
        await expect(failing).rejects.toMatchObject({
          code: 'FLEETGATE_STORE_MIGRATION_FAILED',
          details: { migration: '0001_bad' },
        });
        await expect(failing).rejects.toThrow(`thing.id is declared "${spec}"`);
        await expect(failing).rejects.toThrow(form);
      }
    },
  );

  it.skipIf(skip)('refuses an index it cannot read, naming it and the form', async () => {
    const failing = withStore(
      kind,
      composeMigrations({
        '0001_bad': {
          tables: { thing: { columns: { id: 'text primary key' } } },
          indexes: { thing_by_id: 'thing(id)' },
        },
      }),
      () => Promise.resolve(),
    );
    await expect(failing).rejects.toThrow(
      `Index thing_by_id is declared "thing(id)"; expected 'table (column, …) [where column is null]'`,
    );
  });

  it.skipIf(skip)('undoes a migration by dropping what it declared, newest first', async () => {
    const migrations = composeMigrations(
      { '0001_a': { tables: { a: { columns: { id: 'text primary key' } } } } },
      {
        '0001_a': {
          tables: { b: { columns: { id: 'text not null', at: 'bigint' }, primaryKey: ['id'] } },
          indexes: { b_at: 'b (at)' },
        },
        '0002_more': {
          addColumns: { a: { note: 'text', size: 'integer' } },
          indexes: { a_note: 'a (note, size)' },
        },
      },
    );
    await withStore(kind, migrations, async (store) => {
      expect(await names(store)).toEqual({ tables: ['a', 'b'], indexes: ['a_note', 'b_at'] });
      await migrations['0002_more']!.down!(store.db, kind);
      const columns = (await ownTables(store)).find((t) => t.name === 'a');
      expect(columns?.columns.map((c) => c.name)).toEqual(['id']);
      expect(await names(store)).toEqual({ tables: ['a', 'b'], indexes: ['b_at'] });
      await migrations['0001_a']!.down!(store.db, kind);
      expect(await names(store)).toEqual({ tables: [], indexes: [] });
    });
  });
});
