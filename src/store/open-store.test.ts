import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Generated } from 'kysely';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import { composeMigrations, openStore, parseStoreUrl, redactStoreUrl } from './index.js';
import type { Store, StoreMigrations } from './index.js';

interface NoteDatabase {
  note: { seq: Generated<number>; text: string; created_at: number };
}

/** A store test's own table: the store knows no domain's tables. */
const NOTE_MIGRATIONS: StoreMigrations = {
  '0001_note': {
    async up(db, kind) {
      await db.schema
        .createTable('note')
        .addColumn('seq', kind === 'postgres' ? 'bigserial' : 'integer', (c) => c.primaryKey())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
};

describe('parseStoreUrl', () => {
  it('selects SQLite for sqlite: URLs and PostgreSQL for postgres:// URLs', () => {
    expect(parseStoreUrl('sqlite:./data/fleetgate.db')).toEqual({
      kind: 'sqlite',
      file: resolve('data/fleetgate.db'),
    });
    expect(parseStoreUrl('sqlite:/var/lib/fg.db')).toEqual({
      kind: 'sqlite',
      file: '/var/lib/fg.db',
    });
    expect(parseStoreUrl('sqlite::memory:')).toEqual({ kind: 'sqlite', file: ':memory:' });
    expect(parseStoreUrl('postgres://u@h:5432/db')).toMatchObject({ kind: 'postgres' });
    expect(parseStoreUrl('postgresql://u@h/db')).toMatchObject({ kind: 'postgres' });
  });

  it.each(['mysql://x', 'sqlite:', 'file.db', '', 'postgres://h:notaport/db'])(
    'rejects %j with FLEETGATE_STORE_URL_INVALID',
    (url) => {
      let error: unknown;
      try {
        parseStoreUrl(url);
      } catch (e) {
        error = e;
      }
      expect(isFleetgateError(error, 'FLEETGATE_STORE_URL_INVALID')).toBe(true);
    },
  );

  it('never echoes a password', () => {
    expect(() => parseStoreUrl('mysql://me:secret@h/db')).toThrow(/me:\*\*\*@/);
  });

  it.each([
    ['postgres://u:pa/ss@host/db', 'postgres://u:***@host/db'],
    ['postgres://u:p@ss@host:5432/db', 'postgres://u:***@host:5432/db'],
    ['postgres://u:p:a?ss#w@host/db', 'postgres://u:***@host/db'],
    ['postgresql://u:secret@host/db', 'postgresql://u:***@host/db'],
    [
      'postgres://u@host/db?password=secret&sslmode=require',
      'postgres://u@host/db?password=***&sslmode=require',
    ],
    ['postgres://host/db?sslpassword=secret', 'postgres://host/db?sslpassword=***'],
    ['postgres://u@host/db', 'postgres://u@host/db'],
    ['sqlite:./data/fleetgate.db', 'sqlite:./data/fleetgate.db'],
  ])('redacts %j as %j', (url, redacted) => {
    expect(redactStoreUrl(url)).toBe(redacted);
  });

  it('names an unparseable URL without its password', () => {
    let message = '';
    try {
      parseStoreUrl('postgres://u:pa/ss@host/db');
    } catch (error) {
      message = (error as Error).message;
      expect(JSON.stringify((error as { details?: unknown }).details)).not.toContain('ss@');
    }
    expect(message).toContain('postgres://u:***@host/db');
    expect(message).not.toContain('pa/ss');
    expect(message).toContain('percent-encode');
  });
});

describe('openStore on a SQLite file', () => {
  const dirs: string[] = [];
  const stores: Store<NoteDatabase>[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function tempFile(): string {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-store-'));
    dirs.push(dir);
    return join(dir, 'nested', 'fleetgate.db');
  }

  it('creates the file in WAL mode and runs each migration once', async () => {
    const file = tempFile();
    const first = await openStore<NoteDatabase>(`sqlite:${file}`, { migrations: NOTE_MIGRATIONS });
    stores.push(first);
    expect(first.kind).toBe('sqlite');
    expect(first.migrated).toEqual(['0001_note']);
    expect(existsSync(file)).toBe(true);
    const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(first.db);
    expect(mode.rows[0]?.journal_mode).toBe('wal');
    await first.close();
    await first.close();

    const second = await openStore<NoteDatabase>(`sqlite:${file}`, {
      migrations: NOTE_MIGRATIONS,
    });
    stores.push(second);
    expect(second.migrated).toEqual([]);
    await second.db
      .insertInto('note')
      .values({ text: 'a', created_at: 1_800_000_000_000 })
      .execute();
    const row = await second.db.selectFrom('note').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ seq: 1, text: 'a', created_at: 1_800_000_000_000 });
  });

  it('runs the parts two lists give one migration name in order, as one migration', async () => {
    const ran: string[] = [];
    const part = (label: string): StoreMigrations => ({
      '0002_shared': {
        up() {
          ran.push(label);
          return Promise.resolve();
        },
      },
    });
    const migrations = composeMigrations(part('first'), NOTE_MIGRATIONS, part('second'));
    expect(Object.keys(migrations)).toEqual(['0001_note', '0002_shared']);
    const store = await openStore(`sqlite:${tempFile()}`, { migrations });
    stores.push(store as Store<NoteDatabase>);
    expect(store.migrated).toEqual(['0001_note', '0002_shared']);
    expect(ran).toEqual(['first', 'second']);
  });

  it('reports a failing migration with FLEETGATE_STORE_MIGRATION_FAILED and its name', async () => {
    const error = await openStore(`sqlite:${tempFile()}`, {
      migrations: {
        ...NOTE_MIGRATIONS,
        '0002_broken': {
          async up(db) {
            await sql`create table nope (`.execute(db);
          },
        },
      },
    }).catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_STORE_MIGRATION_FAILED')).toBe(true);
    expect(String((error as Error).message)).toContain('0002_broken');
  });

  it('refuses a schema for SQLite', async () => {
    await expect(
      openStore('sqlite::memory:', { migrations: NOTE_MIGRATIONS, schema: 'x' }),
    ).rejects.toSatisfy((e) => isFleetgateError(e, 'FLEETGATE_STORE_URL_INVALID'));
  });
});
