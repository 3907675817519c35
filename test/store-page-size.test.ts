/**
 * The page size of a SQLite store: a new file gets 2 KiB pages (a call's commits write each page
 * they change whole, so smaller pages write fewer bytes per call); a file that exists keeps the
 * page size it was written with and opens, migrates and works as before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGatewayStore } from '../src/service/index.js';

function pragmaOf(file: string, name: string): unknown {
  const db = new Database(file, { readonly: true });
  try {
    return db.pragma(name, { simple: true });
  } finally {
    db.close();
  }
}

describe('SQLite page size', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-page-size-'));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives a new store 2 KiB pages, in WAL mode', async () => {
    const file = join(dir, 'new.db');
    const store = await openGatewayStore(`sqlite:${file}`);
    await store.close();
    expect(pragmaOf(file, 'page_size')).toBe(2048);
    expect(pragmaOf(file, 'journal_mode')).toBe('wal');
  });

  it('keeps the page size of a store that exists, and migrates and uses it', async () => {
    const file = join(dir, 'existing.db');
    const earlier = new Database(file);
    earlier.pragma('page_size = 4096');
    earlier.exec('create table earlier (id integer primary key, note text)');
    earlier.prepare('insert into earlier (note) values (?)').run('kept');
    earlier.close();
    const store = await openGatewayStore(`sqlite:${file}`);
    const tables = await store.db.introspection.getTables();
    await store.close();
    expect(tables.map((t) => t.name)).toContain('fleetgate_dispatch');
    expect(pragmaOf(file, 'page_size')).toBe(4096);
    const db = new Database(file, { readonly: true });
    expect(db.prepare('select note from earlier').get()).toEqual({ note: 'kept' });
    db.close();
  });
});
