/**
 * Migrations only add: replicas of the previous release keep running against a store the next
 * release migrated during a rolling upgrade (docs/deployment.md, "Upgrades"), so no migration
 * takes away a table or a column an earlier one made. Checked on SQLite files, migration by
 * migration from an empty store, and from a store an earlier release wrote.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_MIGRATIONS, openGatewayStore } from '../src/service/index.js';
import { ROOT } from './support/gateway-service.js';

/** Every `table.column` of a SQLite file. */
function columnsOf(file: string): Set<string> {
  const db = new Database(file, { readonly: true });
  try {
    const tables = db
      .prepare(
        `select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`,
      )
      .all() as { name: string }[];
    const out = new Set<string>();
    for (const { name } of tables) {
      const columns = db.prepare(`select name from pragma_table_info(?)`).all(name) as {
        name: string;
      }[];
      for (const column of columns) out.add(`${name}.${column.name}`);
    }
    return out;
  } finally {
    db.close();
  }
}

function missing(before: Set<string>, after: Set<string>): string[] {
  return [...before].filter((c) => !after.has(c));
}

describe('migrations only add', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-migrations-'));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every table and column of the migrations before each one', async () => {
    const file = join(dir, 'step.db');
    const names = Object.keys(GATEWAY_MIGRATIONS).sort();
    expect(names.length).toBeGreaterThan(10);
    let before = new Set<string>();
    const taken: string[] = [];
    for (let i = 1; i <= names.length; i += 1) {
      const migrations = Object.fromEntries(
        names.slice(0, i).map((n) => [n, GATEWAY_MIGRATIONS[n]!]),
      );
      const store = await openGatewayStore(`sqlite:${file}`, { migrations });
      await store.close();
      const after = columnsOf(file);
      for (const gone of missing(before, after)) taken.push(`${names[i - 1]} takes ${gone}`);
      before = after;
    }
    expect(taken).toEqual([]);
  });

  it('keeps every table and column of a store an earlier release wrote', async () => {
    const file = join(dir, 'earlier.db');
    copyFileSync(join(ROOT, 'test/fixtures/store-before-holders.db'), file);
    const earlier = columnsOf(file);
    const store = await openGatewayStore(`sqlite:${file}`);
    await store.close();
    expect(missing(earlier, columnsOf(file))).toEqual([]);
  });
});
