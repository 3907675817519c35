import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Generated } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from './index.js';
import type { SqliteAccess, Store, StoreMigrations } from './index.js';

interface NoteDatabase {
  note: { seq: Generated<number>; text: string };
}

const NOTE_MIGRATIONS: StoreMigrations = {
  '0001_note': {
    async up(db) {
      await db.schema
        .createTable('note')
        .addColumn('seq', 'integer', (c) => c.primaryKey())
        .addColumn('text', 'text', (c) => c.notNull().unique())
        .execute();
    },
  },
};

const INSERT = 'insert into note (text) values (?)';

describe('direct SQLite access', () => {
  let dir: string;
  let file: string;
  let store: Store<NoteDatabase>;
  let access: SqliteAccess;
  /** A second connection to the file: it sees only what was committed. */
  let other: Database.Database;

  const committed = (): string[] =>
    (other.prepare('select text from note order by seq').all() as { text: string }[]).map(
      (r) => r.text,
    );

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-direct-'));
    file = join(dir, 'notes.db');
    store = await openStore<NoteDatabase>(`sqlite:${file}`, { migrations: NOTE_MIGRATIONS });
    access = store.sqlite!;
    other = new Database(file, { readonly: true });
  });
  afterEach(async () => {
    other.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits the writes queued in one turn together, once, after which each resolves', async () => {
    const seenByOther: string[][] = [];
    const writes = ['a', 'b', 'c'].map((text) =>
      access.write((sql) => {
        sql.run(INSERT, [text]);
        // Nothing of the batch is visible elsewhere before its one commit.
        seenByOther.push(committed());
        return text;
      }),
    );
    expect(await Promise.all(writes)).toEqual(['a', 'b', 'c']);
    expect(seenByOther).toEqual([[], [], []]);
    expect(committed()).toEqual(['a', 'b', 'c']);
  });

  it('rolls back only the write that throws; the others of its batch commit', async () => {
    const first = access.write((sql) => sql.run(INSERT, ['a']).changes);
    const failing = access.write((sql) => {
      sql.run(INSERT, ['b']);
      sql.run(INSERT, ['a']); // unique violation
    });
    const third = access.write((sql) => sql.run(INSERT, ['c']).changes);
    await expect(first).resolves.toBe(1);
    await expect(failing).rejects.toThrow(/UNIQUE/u);
    await expect(third).resolves.toBe(1);
    expect(committed()).toEqual(['a', 'c']);
  });

  it('leaves nothing of a write alone in its transaction that throws', async () => {
    await expect(
      access.write((sql) => {
        sql.run(INSERT, ['a']);
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(committed()).toEqual([]);
    await access.write((sql) => sql.run(INSERT, ['b']));
    expect(committed()).toEqual(['b']);
  });

  it('fails every write of a batch whose transaction SQLite ended', async () => {
    const first = access.write((sql) => sql.run(INSERT, ['a']));
    // ROLLBACK inside a unit ends the shared transaction: nothing of the batch may be kept.
    const breaking = access.write((sql) => sql.run('rollback'));
    const third = access.write((sql) => sql.run(INSERT, ['c']));
    await expect(first).rejects.toThrow();
    await expect(breaking).rejects.toThrow();
    await expect(third).rejects.toThrow();
    expect(committed()).toEqual([]);
    await access.write((sql) => sql.run(INSERT, ['d']));
    expect(committed()).toEqual(['d']);
  });

  it('runs what a write asks after its commit, once it committed, never for a write that rolled back', async () => {
    const told: string[] = [];
    const tell = (sql: { afterCommit(fn: () => void): void }, what: string): void =>
      sql.afterCommit(() => told.push(`${what}: ${committed().join(',')}`));
    const first = access.write((sql) => {
      sql.run(INSERT, ['a']);
      tell(sql, 'a');
    });
    const failing = access.write((sql) => {
      sql.run(INSERT, ['b']);
      tell(sql, 'b');
      throw new Error('no');
    });
    const third = access.write(async (sql) => {
      await Promise.resolve();
      sql.run(INSERT, ['c']);
      tell(sql, 'c');
      tell(sql, 'c again');
    });
    await first;
    await expect(failing).rejects.toThrow('no');
    await third;
    // Each after the one commit of the batch (both rows visible elsewhere), in order, and
    // before the write resolved.
    expect(told).toEqual(['a: a,c', 'c: a,c', 'c again: a,c']);

    // A batch SQLite ended: nothing of it committed, nothing told.
    const before = told.length;
    const lost = access.write((sql) => {
      sql.run(INSERT, ['d']);
      tell(sql, 'd');
    });
    const breaking = access.write((sql) => sql.run('rollback'));
    await expect(lost).rejects.toThrow();
    await expect(breaking).rejects.toThrow();
    expect(told.length).toBe(before);

    await expect(access.read((sql) => sql.afterCommit(() => undefined))).rejects.toThrow(
      /afterCommit/u,
    );
  });

  it('holds the connection through an async write: a kysely query waits for its commit', async () => {
    const order: string[] = [];
    let query: Promise<string[]> | undefined;
    await access.write(async (sql) => {
      sql.run(INSERT, ['a']);
      query = store.db
        .selectFrom('note')
        .select('text')
        .execute()
        .then((rows) => {
          order.push('query');
          return rows.map((r) => r.text);
        });
      await new Promise((resolve) => setTimeout(resolve, 20));
      sql.run(INSERT, ['b']);
      order.push('write');
    });
    expect(await query).toEqual(['a', 'b']);
    expect(order).toEqual(['write', 'query']);
  });

  it('runs a read after a kysely transaction in progress, never inside it', async () => {
    let reading: Promise<number> | undefined;
    await expect(
      store.db.transaction().execute(async (trx) => {
        await trx.insertInto('note').values({ text: 'uncommitted' }).execute();
        reading = access.read((sql) => sql.get<{ n: number }>('select count(*) as n from note')!.n);
        await new Promise((resolve) => setTimeout(resolve, 20));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await reading).toBe(0);
  });

  it("groups 'loop' writes with the writes of the rest of the loop's turn", async () => {
    const seenByOther: string[][] = [];
    const early = access.write((sql) => sql.run(INSERT, ['loop']), { group: 'loop' });
    // Queued later in the same turn, as a 'turn' unit: it runs first and takes the first along.
    const late = access.write(
      (sql) => {
        sql.run(INSERT, ['turn']);
        seenByOther.push(committed());
      },
      { group: 'turn' },
    );
    await Promise.all([early, late]);
    expect(seenByOther).toEqual([[]]);
    expect(committed()).toEqual(['loop', 'turn']);
  });

  it('by default, groups the writes that several callbacks of one loop turn queue', async () => {
    const seenByUnits: string[][] = [];
    const writes: Promise<unknown>[] = [];
    // Two callbacks queued together run in one turn of the loop (one check phase: unlike two
    // timers, which a millisecond boundary can split), each queuing a unit: one commit takes both
    // (a unit sees nothing of the other committed).
    await new Promise<void>((resolve) => {
      for (const text of ['a', 'b']) {
        setImmediate(() => {
          writes.push(
            access.write((sql) => {
              seenByUnits.push(committed());
              sql.run(INSERT, [text]);
            }),
          );
          if (writes.length === 2) resolve();
        });
      }
    });
    await Promise.all(writes);
    expect(seenByUnits).toEqual([[], []]);
    expect(committed()).toEqual(['a', 'b']);
  });

  it('commits the writes still queued when the store closes', async () => {
    const write = access.write((sql) => sql.run(INSERT, ['last']), { group: 'loop' });
    await store.close();
    await write;
    expect(committed()).toEqual(['last']);
  });
});

describe('checkpoints of a busy SQLite store', () => {
  it('moves to a worker thread, which copies the log into the database file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-checkpoint-'));
    const file = join(dir, 'notes.db');
    const store = await openStore<NoteDatabase>(`sqlite:${file}`, { migrations: NOTE_MIGRATIONS });
    try {
      const before = statSync(file).size;
      // A few hundred pages of log: below SQLite's own threshold (1,000 pages), so only the
      // worker copies them into the database file while the store is open.
      for (let i = 0; i < 100; i += 1) {
        await store.sqlite!.write((sql) => sql.run(INSERT, [`${i}:${'x'.repeat(1000)}`]));
      }
      const deadline = Date.now() + 10_000;
      while (statSync(file).size <= before + 100 * 1000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(statSync(file).size).toBeGreaterThan(before + 100 * 1000);
    } finally {
      await store.close();
    }
    // The worker's connection closed first: the last one to close removed the log.
    expect(existsSync(`${file}-wal`)).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});
