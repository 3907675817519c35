/**
 * The stores a store-backed suite runs on, each fresh: SQLite through its direct statements and
 * through kysely, and PostgreSQL (skipped when it cannot be reached).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import {
  GATEWAY_MIGRATIONS,
  openGatewayStore,
  type GatewayStore,
} from '../../src/service/index.js';
import type { StoreKind, StoreMigrations } from '../../src/store/index.js';
import { createStoreDispatchRecords, type DispatchRecordStore } from '../../src/dispatch/index.js';
import { PG_URL, uniqueName } from './services.js';

/** One store a suite runs on. */
export interface StoreVariant {
  kind: 'sqlite' | 'postgres';
  /** The SQLite store's direct access is passed to what is tested. */
  direct: boolean;
  skip: boolean;
}

/** SQLite direct, SQLite through kysely, PostgreSQL (skipped unless `pgUp`). */
export function storeVariants(pgUp: boolean): StoreVariant[] {
  return [
    { kind: 'sqlite', direct: true, skip: false },
    { kind: 'sqlite', direct: false, skip: false },
    { kind: 'postgres', direct: false, skip: !pgUp },
  ];
}

/** A fresh store and the way to remove it. */
export interface TestStore {
  store: GatewayStore;
  /** Closes the store, dropping its PostgreSQL schema or deleting its SQLite directory. */
  remove(): Promise<void>;
}

/**
 * Opens a fresh store of `variant`: a SQLite file in a directory of its own, or a PostgreSQL schema
 * of its own named after `name`.
 */
export async function openTestStore(
  variant: StoreVariant,
  name: string,
  poolSize: number,
): Promise<TestStore> {
  if (variant.kind === 'postgres') {
    const schema = uniqueName(name);
    const store = await openGatewayStore(PG_URL, { schema, poolSize });
    return {
      store,
      async remove() {
        await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
        await store.close();
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const store = await openGatewayStore(`sqlite:${join(dir, 'fleetgate.db')}`);
  if (variant.direct && store.sqlite === undefined) {
    throw new Error('expected direct SQLite access');
  }
  return {
    store,
    async remove() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A store of one kind in a place of its own, opened as often as a test likes with the migrations
 * of a release (an upgrade: opened with an earlier release's, then with this one's).
 */
export interface StorePlace {
  open(migrations?: StoreMigrations): Promise<GatewayStore>;
  remove(): Promise<void>;
}

/** A {@link StorePlace}: a PostgreSQL schema or a SQLite file named after `name`. */
export function storePlace(kind: StoreKind, name: string): StorePlace {
  const opened: GatewayStore[] = [];
  if (kind === 'postgres') {
    const schema = uniqueName(name);
    return {
      async open(migrations = GATEWAY_MIGRATIONS) {
        const store = await openGatewayStore(PG_URL, { schema, migrations, poolSize: 2 });
        opened.push(store);
        return store;
      },
      async remove() {
        const store = await openGatewayStore(PG_URL, { schema, migrate: false, poolSize: 1 });
        await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
        await store.close();
        for (const s of opened) await s.close().catch(() => undefined);
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  return {
    async open(migrations = GATEWAY_MIGRATIONS) {
      const store = await openGatewayStore(`sqlite:${join(dir, 'fleetgate.db')}`, { migrations });
      opened.push(store);
      return store;
    },
    async remove() {
      for (const s of opened) await s.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The store kinds a migration test runs on: SQLite, and PostgreSQL when it is up. */
export function storeKinds(pgUp: boolean): { kind: StoreKind; skip: boolean }[] {
  return [
    { kind: 'sqlite', skip: false },
    { kind: 'postgres', skip: !pgUp },
  ];
}

/** The dispatch records of `store`, through each implementation its kind has, by name. */
export function dispatchRecordsOf(
  store: GatewayStore,
  kind: StoreKind,
): [string, DispatchRecordStore][] {
  const kysely = createStoreDispatchRecords(store.db);
  if (kind === 'postgres') return [['kysely', kysely]];
  return [
    ['direct', createStoreDispatchRecords(store.db, { sqlite: store.sqlite })],
    ['kysely', kysely],
  ];
}

/** The migrations of the release before the one that added `migration`: every one named before it. */
export function migrationsBefore(migration: string): StoreMigrations {
  return Object.fromEntries(
    Object.entries(GATEWAY_MIGRATIONS).filter(([name]) => name < migration),
  );
}
