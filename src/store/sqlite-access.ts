/**
 * Direct statements on a SQLite store's one connection, beside kysely: the hot paths (a task's
 * terminal claim with its outbox rows, the relay's rounds, the world's units of work) bind their
 * parameters to prepared statements kept per SQL text, instead of building, compiling and running
 * every query through the SQL builder's asynchronous layers, which cost more than SQLite itself.
 *
 * One lock guards the connection for both: kysely acquires it for each query or transaction
 * (through {@link LockedSqliteDialect}), direct work takes it synchronously when it is free. So a
 * direct statement never lands inside a kysely transaction that is waiting between two queries.
 *
 * Writes are **group-committed**: {@link SqliteAccess.write} queues a unit of work, and every unit
 * queued before the queue runs shares one `BEGIN IMMEDIATE … COMMIT`, each in its own savepoint, so
 * one that fails rolls back alone. A unit's promise resolves only after the commit: what it wrote
 * is durable (as the store's `synchronous` setting makes any commit) when its caller goes on.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { ConnectionLock, LockedSqliteDialect } from './sqlite-connection-lock.js';
import { GroupCommit } from './sqlite-group-commit.js';
import type { SqliteStatements } from './sqlite-statements.js';

export { LockedSqliteDialect } from './sqlite-connection-lock.js';
export type { SqliteRunResult, SqliteStatements } from './sqlite-statements.js';

/** How a write joins the others; see {@link SqliteAccess.write}. */
export interface SqliteWriteOptions {
  /**
   * `'loop'` (the default): the unit waits for the rest of this turn of the event loop (the I/O
   * callbacks now ready), so units queued by several callbacks share one commit — a busy gateway
   * queues a unit or two per request and callback, and a commit each cost more than the units;
   * an idle one has nothing else ready, so the wait is nothing. `'turn'`: the unit runs once the
   * current chain of promise reactions has run, with every unit queued meanwhile (and takes any
   * `'loop'` unit queued before it along).
   */
  group?: 'turn' | 'loop';
}

/** Direct access to a SQLite store's connection; see the file comment. */
export interface SqliteAccess {
  /**
   * Runs `work` in a write transaction, grouped with the other writes queued with it (one commit),
   * in a savepoint of its own: when it throws, only its own statements roll back and its promise
   * rejects. Resolves with its result once the transaction committed. `work` may be async, but
   * must await nothing but its own statements (the connection is held meanwhile): never a kysely
   * query, a read or another write.
   */
  write<T>(
    work: (sql: SqliteStatements) => T | Promise<T>,
    options?: SqliteWriteOptions,
  ): Promise<T>;
  /** Runs `work` outside any transaction, once no other work or kysely query holds the connection. */
  read<T>(work: (sql: SqliteStatements) => T): Promise<T>;
  /** Resolves once every write queued so far has committed or failed. */
  idle(): Promise<void>;
}

/**
 * Builds the direct access to `database` and the kysely dialect that shares its lock.
 *
 * `onCommit` is told after each commit of a batch (the checkpointer counts them).
 *
 * @example
 * ```ts
 * const { dialect, access } = createSqliteAccess(new Database(file));
 * const db = new Kysely<DB>({ dialect });
 * const won = await access.write((sql) => sql.run('update t set done = 1 where id = ?', [id]).changes === 1);
 * ```
 */
export function createSqliteAccess(
  database: BetterSqlite3.Database,
  options: { onCommit?: () => void } = {},
): {
  dialect: LockedSqliteDialect;
  access: SqliteAccess;
} {
  const lock = new ConnectionLock();
  const dialect = new LockedSqliteDialect({ database }, lock);
  const statements: SqliteStatements = {
    run(sql, params = []) {
      return database.prepare(sql).run(params);
    },
    all<R>(sql: string, params: readonly unknown[] = []) {
      return database.prepare(sql).all(params) as R[];
    },
    get<R>(sql: string, params: readonly unknown[] = []) {
      return database.prepare(sql).get(params) as R | undefined;
    },
    afterCommit(fn) {
      writes.afterCommit(fn);
    },
  };
  const writes: GroupCommit = new GroupCommit(database, lock, statements, options.onCommit);

  return {
    dialect,
    access: {
      write<T>(
        work: (sql: SqliteStatements) => T | Promise<T>,
        options: SqliteWriteOptions = {},
      ): Promise<T> {
        return writes.write(work, options.group ?? 'loop');
      },
      read<T>(work: (sql: SqliteStatements) => T): Promise<T> {
        const run = (): T => {
          try {
            return work(statements);
          } finally {
            lock.unlock();
          }
        };
        // Free: run now, synchronously (a throw in the executor rejects the promise).
        if (lock.tryLock()) return new Promise<T>((resolve) => resolve(run()));
        return lock.lock().then(run);
      },
      idle(): Promise<void> {
        return writes.idle();
      },
    },
  };
}
