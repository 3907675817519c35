import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import { FLEETGATE_MIGRATIONS, openStore, parseStoreUrl } from './index.js';
import type { Store } from './index.js';

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
});

describe('openStore on a SQLite file', () => {
  const dirs: string[] = [];
  const stores: Store[] = [];
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
    const first = await openStore(`sqlite:${file}`);
    stores.push(first);
    expect(first.kind).toBe('sqlite');
    expect(first.migrated).toEqual(Object.keys(FLEETGATE_MIGRATIONS));
    expect(existsSync(file)).toBe(true);
    const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(first.db);
    expect(mode.rows[0]?.journal_mode).toBe('wal');
    await first.close();
    await first.close();

    const second = await openStore(`sqlite:${file}`);
    stores.push(second);
    expect(second.migrated).toEqual([]);
    await second.db
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
    const row = await second.db
      .selectFrom('fleetgate_outbox')
      .selectAll()
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ seq: 1, attempts: 0, created_at: 1_800_000_000_000 });
  });

  it('reports a failing migration with FLEETGATE_STORE_MIGRATION_FAILED and its name', async () => {
    const error = await openStore(`sqlite:${tempFile()}`, {
      migrations: {
        ...FLEETGATE_MIGRATIONS,
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
    await expect(openStore('sqlite::memory:', { schema: 'x' })).rejects.toSatisfy((e) =>
      isFleetgateError(e, 'FLEETGATE_STORE_URL_INVALID'),
    );
  });
});
