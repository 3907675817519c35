/**
 * Tables and indexes as a migration declares them: data in the words of SQL, turned into DDL for
 * the engine at hand here, once. A room's migration lists what it creates and the store builds it,
 * so no room spells out a schema builder chain and every table reads the same way.
 */
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { ColumnDefinitionBuilder, CreateTableBuilder } from 'kysely';
import { FleetgateError } from '../protocol/index.js';

/** Which database engine a store runs on. */
export type StoreKind = 'sqlite' | 'postgres';

/**
 * A column in the words of SQL: `type [collate "C"] [primary key] [not null] [unique] [default N]`,
 * in that order. Types: `text`, `integer`, `bigint`; `serial` (with `primary key`: a 64-bit key
 * that only grows, `bigserial` on PostgreSQL, `integer primary key autoincrement` on SQLite, whose
 * keys are then never reused after deletes); `int64` (a serial's value kept elsewhere, spelled as
 * the key it copies: `bigint` on PostgreSQL, `integer` on SQLite). `collate "C"` orders text by
 * its bytes, which SQLite does anyway.
 *
 * @example
 * ```ts
 * const columns = { seq: 'serial primary key', id: 'text not null unique', attempts: 'integer not null default 0' };
 * ```
 */
export type ColumnSpec = string;

/** Columns by name, in the order the table has them. */
export type ColumnSpecs = Readonly<Record<string, ColumnSpec>>;

/** A table a migration creates. */
export interface TableSpec {
  readonly columns: ColumnSpecs;
  /** A primary key over several columns, named `<table>_pk`. */
  readonly primaryKey?: readonly string[];
  /** Unique constraints over several columns, by name. */
  readonly unique?: Readonly<Record<string, readonly string[]>>;
}

/**
 * An index in the words of SQL: `table (column, …) [where column is null]`, the `where` making it
 * a partial index over the rows where that column is null.
 *
 * @example
 * ```ts
 * const indexes = { fleetgate_outbox_unsent: 'fleetgate_outbox (seq) where sent_at is null' };
 * ```
 */
export type IndexSpec = string;

/**
 * One migration: what it creates, declared, and what it does besides, in code. The store runs
 * `tables`, then `addColumns`, then `up`, then `indexes`, then `dropIndexes` (indexes after the
 * data a migration moves). Without a `down`, undoing it drops what it declared, newest first.
 */
export interface StoreMigration {
  /** Tables to create, by name, in order. */
  readonly tables?: Readonly<Record<string, TableSpec>>;
  /** Columns to add to tables that exist, by table. */
  readonly addColumns?: Readonly<Record<string, ColumnSpecs>>;
  /** Indexes to create, by name, in order. */
  readonly indexes?: Readonly<Record<string, IndexSpec>>;
  /** Indexes to drop, by name (those already gone are passed over). */
  readonly dropIndexes?: readonly string[];
  up?(db: Kysely<unknown>, kind: StoreKind): Promise<void>;
  down?(db: Kysely<unknown>, kind: StoreKind): Promise<void>;
}

const COLUMN =
  /^(text|integer|bigint|serial|int64)( collate "C")?( primary key)?( not null)?( unique)?(?: default (-?\d+))?$/;

/** A column spec read, or a coded error naming the column and what its spec should be. */
function parseColumn(table: string, column: string, spec: ColumnSpec) {
  const match = COLUMN.exec(spec);
  const [, type, collate, primaryKey, notNull, unique, fallback] = match ?? [];
  const misfit =
    (type === 'serial' && primaryKey === undefined) || (collate !== undefined && type !== 'text');
  if (match === null || misfit) {
    throw new FleetgateError(
      'FLEETGATE_STORE_MIGRATION_FAILED',
      `Column ${table}.${column} is declared "${spec}"; expected ` +
        `'type [collate "C"] [primary key] [not null] [unique] [default N]' with a type of text, ` +
        `integer, bigint, int64 or serial (serial only as a primary key, collate only on text)`,
      { details: { table, column, spec } },
    );
  }
  return {
    type: type!,
    collate: collate !== undefined,
    primaryKey: primaryKey !== undefined,
    notNull: notNull !== undefined,
    unique: unique !== undefined,
    fallback: fallback === undefined ? undefined : Number(fallback),
  };
}

type DataType = Parameters<CreateTableBuilder<string, string>['addColumn']>[1];

/**
 * The column type of an auto-incrementing 64-bit primary key: `bigserial` on PostgreSQL,
 * `integer` on SQLite (an INTEGER PRIMARY KEY is the 64-bit rowid). A declared table says
 * `serial primary key` instead; this is for a migration's own code.
 */
export function serialKeyType(kind: StoreKind): 'bigserial' | 'integer' {
  return kind === 'postgres' ? 'bigserial' : 'integer';
}

/** A column's type and modifiers as `kind` spells them: the arguments of kysely's `addColumn`. */
function columnOf(
  kind: StoreKind,
  table: string,
  column: string,
  spec: ColumnSpec,
): [DataType, (col: ColumnDefinitionBuilder) => ColumnDefinitionBuilder] {
  const c = parseColumn(table, column, spec);
  const postgres = kind === 'postgres';
  const type =
    c.type === 'serial'
      ? sql.raw(serialKeyType(kind))
      : c.type === 'int64'
        ? postgres
          ? 'bigint'
          : 'integer'
        : c.collate && postgres
          ? sql`text collate "C"`
          : (c.type as 'text' | 'integer' | 'bigint');
  const modify = (col: ColumnDefinitionBuilder): ColumnDefinitionBuilder => {
    let out = col;
    if (c.primaryKey) out = out.primaryKey();
    if (c.type === 'serial' && !postgres) out = out.autoIncrement();
    if (c.notNull) out = out.notNull();
    if (c.unique) out = out.unique();
    if (c.fallback !== undefined) out = out.defaultTo(c.fallback);
    return out;
  };
  return [type, modify];
}

async function createTable(
  db: Kysely<unknown>,
  kind: StoreKind,
  name: string,
  spec: TableSpec,
): Promise<void> {
  let builder: CreateTableBuilder<string, string> = db.schema.createTable(name);
  for (const [column, columnSpec] of Object.entries(spec.columns)) {
    builder = builder.addColumn(column, ...columnOf(kind, name, column, columnSpec));
  }
  if (spec.primaryKey !== undefined) {
    builder = builder.addPrimaryKeyConstraint(`${name}_pk`, [...spec.primaryKey]);
  }
  for (const [constraint, columns] of Object.entries(spec.unique ?? {})) {
    builder = builder.addUniqueConstraint(constraint, [...columns]);
  }
  await builder.execute();
}

const INDEX = /^(\w+) \((\w+(?:, \w+)*)\)(?: where (\w+) is null)?$/;

async function createIndex(db: Kysely<unknown>, name: string, spec: IndexSpec): Promise<void> {
  const match = INDEX.exec(spec);
  if (match === null) {
    throw new FleetgateError(
      'FLEETGATE_STORE_MIGRATION_FAILED',
      `Index ${name} is declared "${spec}"; expected 'table (column, …) [where column is null]'`,
      { details: { index: name, spec } },
    );
  }
  const [, table, columns, whereNull] = match;
  let builder = db.schema.createIndex(name).on(table!);
  const list = columns!.split(', ');
  builder = list.length === 1 ? builder.column(list[0]!) : builder.columns(list);
  if (whereNull !== undefined) builder = builder.where(sql.ref(whereNull), 'is', null);
  await builder.execute();
}

/** Runs a migration forward: what it declares, and its `up`, in the order {@link StoreMigration} gives. */
export async function runUp(
  db: Kysely<unknown>,
  kind: StoreKind,
  migration: StoreMigration,
): Promise<void> {
  for (const [name, spec] of Object.entries(migration.tables ?? {})) {
    await createTable(db, kind, name, spec);
  }
  for (const [table, columns] of Object.entries(migration.addColumns ?? {})) {
    for (const [column, spec] of Object.entries(columns)) {
      await db.schema
        .alterTable(table)
        .addColumn(column, ...columnOf(kind, table, column, spec))
        .execute();
    }
  }
  await migration.up?.(db, kind);
  for (const [name, spec] of Object.entries(migration.indexes ?? {})) {
    await createIndex(db, name, spec);
  }
  for (const name of migration.dropIndexes ?? []) {
    await db.schema.dropIndex(name).ifExists().execute();
  }
}

/**
 * Runs a migration backward: its `down`, or else drops what it declared, newest first (an
 * index it dropped cannot be told back from its name: such a migration brings its own `down`).
 */
export async function runDown(
  db: Kysely<unknown>,
  kind: StoreKind,
  migration: StoreMigration,
): Promise<void> {
  if (migration.down !== undefined) {
    await migration.down(db, kind);
    return;
  }
  for (const name of Object.keys(migration.indexes ?? {}).reverse()) {
    await db.schema.dropIndex(name).ifExists().execute();
  }
  for (const [table, columns] of Object.entries(migration.addColumns ?? {}).reverse()) {
    for (const column of Object.keys(columns).reverse()) {
      await db.schema.alterTable(table).dropColumn(column).execute();
    }
  }
  for (const name of Object.keys(migration.tables ?? {}).reverse()) {
    await db.schema.dropTable(name).execute();
  }
}
