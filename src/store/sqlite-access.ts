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
import type { DatabaseConnection, Driver } from 'kysely';
import { SqliteDialect, SqliteDriver } from 'kysely';
import type { SqliteDialectConfig } from 'kysely';

/** What a direct statement reports. */
export interface SqliteRunResult {
  /** Rows inserted, updated or deleted. */
  changes: number;
}

/**
 * Statements on the connection, run synchronously. Parameters are positional (`?`); values are
 * numbers, strings, bigints, buffers or null. Each SQL text is prepared once and kept.
 */
export interface SqliteStatements {
  run(sql: string, params?: readonly unknown[]): SqliteRunResult;
  all<R>(sql: string, params?: readonly unknown[]): R[];
  get<R>(sql: string, params?: readonly unknown[]): R | undefined;
}

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

/** A FIFO lock on the single connection: taken synchronously when free, handed over in order. */
class ConnectionLock {
  #held = false;
  readonly #waiters: (() => void)[] = [];

  tryLock(): boolean {
    if (this.#held) return false;
    this.#held = true;
    return true;
  }

  lock(): Promise<void> {
    if (this.tryLock()) return Promise.resolve();
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  /** Hands the lock to the next waiter (it stays held) or frees it. */
  unlock(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#held = false;
    else next();
  }
}

/** kysely's SQLite driver, taking the shared lock around each use of the connection. */
class LockedSqliteDriver extends SqliteDriver {
  readonly #lock: ConnectionLock;

  constructor(config: SqliteDialectConfig, lock: ConnectionLock) {
    super(config);
    this.#lock = lock;
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    await this.#lock.lock();
    // The driver's own mutex is never contended: every acquisition holds the shared lock first.
    return super.acquireConnection();
  }

  override async releaseConnection(): Promise<void> {
    await super.releaseConnection();
    this.#lock.unlock();
  }
}

/** kysely's SQLite dialect over a connection shared with a {@link SqliteAccess}. */
export class LockedSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #lock: ConnectionLock;

  constructor(config: SqliteDialectConfig, lock: ConnectionLock) {
    super(config);
    this.#config = config;
    this.#lock = lock;
  }

  override createDriver(): Driver {
    return new LockedSqliteDriver(this.#config, this.#lock);
  }
}

interface QueuedWrite {
  work: (sql: SqliteStatements) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** Set when the unit threw: its error. */
  error?: { reason: unknown };
  value?: unknown;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
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
  const onCommit = options.onCommit;
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
  };
  const begin = (): void => void database.prepare('begin immediate').run();
  const commit = (): void => void database.prepare('commit').run();
  const rollback = (): void => {
    // A failed COMMIT may have rolled back already (SQLite ends the transaction on some errors).
    if (database.inTransaction) database.prepare('rollback').run();
  };

  let pending: QueuedWrite[] = [];
  /** How the next flush is scheduled: not yet, at the end of the turn, or of the loop's turn. */
  let scheduled: 'none' | 'turn' | 'loop' = 'none';
  /** Units queued and not settled yet, and who waits for none to be left. */
  let outstanding = 0;
  let idleWaiters: (() => void)[] = [];

  function flushSoon(group: 'turn' | 'loop'): void {
    if (scheduled === 'turn' || (scheduled === 'loop' && group === 'loop')) return;
    scheduled = group;
    const flush = (): void => {
      if (scheduled !== group) return; // a 'turn' flush took this queue along
      scheduled = 'none';
      if (lock.tryLock()) runBatch();
      else void lock.lock().then(runBatch);
    };
    if (group === 'turn') process.nextTick(flush);
    else setImmediate(flush);
  }

  /**
   * Runs the queued units in one transaction, the lock held; each in a savepoint when there are
   * several. Synchronous units run without a single promise; the first async one continues the
   * batch asynchronously (the lock stays held until the end).
   */
  function runBatch(): void {
    const batch = pending;
    pending = [];
    if (batch.length === 0) {
      lock.unlock();
      return;
    }
    try {
      begin();
    } catch (error) {
      settle(batch, { reason: error });
      return;
    }
    const grouped = batch.length > 1;
    for (let i = 0; i < batch.length; i += 1) {
      const item = batch[i]!;
      let result: unknown;
      try {
        if (grouped) database.prepare('savepoint fleetgate_write').run();
        result = item.work(statements);
      } catch (error) {
        const broken = undo(item, error, grouped);
        if (broken !== undefined) return settle(batch, broken);
        continue;
      }
      if (isThenable(result)) {
        void finishAsync(batch, i, result, grouped);
        return;
      }
      const broken = keep(item, result, grouped);
      if (broken !== undefined) return settle(batch, broken);
    }
    settle(batch, commitBatch());
  }

  async function finishAsync(
    batch: QueuedWrite[],
    at: number,
    first: PromiseLike<unknown>,
    grouped: boolean,
  ): Promise<void> {
    for (let i = at; i < batch.length; i += 1) {
      const item = batch[i]!;
      let result: unknown;
      try {
        if (i === at) result = await first;
        else {
          if (grouped) database.prepare('savepoint fleetgate_write').run();
          result = item.work(statements);
          if (isThenable(result)) result = await result;
        }
      } catch (error) {
        const broken = undo(item, error, grouped);
        if (broken !== undefined) return settle(batch, broken);
        continue;
      }
      const broken = keep(item, result, grouped);
      if (broken !== undefined) return settle(batch, broken);
    }
    settle(batch, commitBatch());
  }

  /** A unit succeeded: its savepoint is released. Returns the error that broke the batch, if any. */
  function keep(
    item: QueuedWrite,
    value: unknown,
    grouped: boolean,
  ): { reason: unknown } | undefined {
    item.value = value;
    if (!grouped) return undefined;
    try {
      database.prepare('release fleetgate_write').run();
      return undefined;
    } catch (error) {
      return { reason: error };
    }
  }

  /**
   * A unit threw: its own statements are rolled back. Returns the error that broke the whole
   * batch when the transaction could not be kept (alone in it, or SQLite ended it on the error).
   */
  function undo(
    item: QueuedWrite,
    error: unknown,
    grouped: boolean,
  ): { reason: unknown } | undefined {
    item.error = { reason: error };
    if (grouped && database.inTransaction) {
      try {
        database.prepare('rollback to fleetgate_write').run();
        database.prepare('release fleetgate_write').run();
        return undefined;
      } catch (undoError) {
        return { reason: undoError };
      }
    }
    // Alone in the transaction, or the error ended it (SQLite rolls back on some, e.g. a full
    // disk): nothing of the batch is kept.
    return { reason: error };
  }

  /** Commits the batch; returns the error when it could not. */
  function commitBatch(): { reason: unknown } | undefined {
    try {
      commit();
      return undefined;
    } catch (error) {
      return { reason: error };
    }
  }

  /**
   * Ends the batch: on `broken` the transaction is rolled back and every unit fails (with its own
   * error when it threw, else with the one that broke the batch); otherwise each unit settles with
   * its own outcome. The lock is released first, so what the callers do next can use it.
   */
  function settle(batch: QueuedWrite[], broken: { reason: unknown } | undefined): void {
    if (broken !== undefined) {
      try {
        rollback();
      } catch {
        // Nothing more to undo: the transaction is gone either way.
      }
    }
    lock.unlock();
    if (broken === undefined) onCommit?.();
    for (const item of batch) {
      if (item.error !== undefined) item.reject(item.error.reason);
      else if (broken !== undefined) item.reject(broken.reason);
      else item.resolve(item.value);
    }
    outstanding -= batch.length;
    if (outstanding === 0 && idleWaiters.length > 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  return {
    dialect,
    access: {
      write<T>(
        work: (sql: SqliteStatements) => T | Promise<T>,
        options: SqliteWriteOptions = {},
      ): Promise<T> {
        return new Promise<T>((resolve, reject) => {
          pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
          outstanding += 1;
          flushSoon(options.group ?? 'loop');
        });
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
        if (outstanding === 0) return Promise.resolve();
        return new Promise<void>((resolve) => idleWaiters.push(resolve));
      },
    },
  };
}
