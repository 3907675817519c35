/**
 * The group commit of a SQLite store's direct writes (`sqlite-access.ts`): every unit queued before
 * the queue runs shares one `BEGIN IMMEDIATE … COMMIT`, each in its own savepoint, so one that fails
 * rolls back alone. A unit's promise resolves only after the commit.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { ConnectionLock } from './sqlite-connection-lock.js';
import type { SqliteStatements } from './sqlite-statements.js';

interface QueuedWrite {
  work: (sql: SqliteStatements) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** Set when the unit threw: its error. */
  error?: { reason: unknown };
  value?: unknown;
  /** What runs once the unit committed (`SqliteStatements.afterCommit`). */
  after?: (() => void)[];
}

/** Runs what `item` asked to run once it committed; one that throws does not stop the others. */
function runAfter(item: QueuedWrite): void {
  for (const fn of item.after ?? []) {
    try {
      fn();
    } catch (error) {
      // A callback's own failure is not the write's: the unit committed and resolves.
      process.emitWarning(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * The queue of direct writes on one connection and the batches that commit them, the connection's
 * lock held from `BEGIN` to the end of the batch.
 */
export class GroupCommit {
  readonly #database: BetterSqlite3.Database;
  readonly #lock: ConnectionLock;
  readonly #statements: SqliteStatements;
  readonly #onCommit: (() => void) | undefined;
  #pending: QueuedWrite[] = [];
  /** How the next flush is scheduled: not yet, at the end of the turn, or of the loop's turn. */
  #scheduled: 'none' | 'turn' | 'loop' = 'none';
  /** Units queued and not settled yet, and who waits for none to be left. */
  #outstanding = 0;
  #idleWaiters: (() => void)[] = [];
  /** The unit running now (its statements are the connection's until it settles). */
  #current: QueuedWrite | undefined;

  /** `onCommit` is told after each commit of a batch (the checkpointer counts them). */
  constructor(
    database: BetterSqlite3.Database,
    lock: ConnectionLock,
    statements: SqliteStatements,
    onCommit: (() => void) | undefined,
  ) {
    this.#database = database;
    this.#lock = lock;
    this.#statements = statements;
    this.#onCommit = onCommit;
  }

  /** Queues `work` for the next batch of `group`; see `SqliteAccess.write`. */
  write<T>(work: (sql: SqliteStatements) => T | Promise<T>, group: 'turn' | 'loop'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      this.#outstanding += 1;
      this.#flushSoon(group);
    });
  }

  /** See `SqliteStatements.afterCommit`. */
  afterCommit(fn: () => void): void {
    const unit = this.#current;
    if (unit === undefined) throw new Error('afterCommit is for the work of a write');
    (unit.after ??= []).push(fn);
  }

  /** Resolves once every write queued so far has committed or failed. */
  idle(): Promise<void> {
    if (this.#outstanding === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  #begin(): void {
    this.#database.prepare('begin immediate').run();
  }

  #commit(): void {
    this.#database.prepare('commit').run();
  }

  #rollback(): void {
    // A failed COMMIT may have rolled back already (SQLite ends the transaction on some errors).
    if (this.#database.inTransaction) this.#database.prepare('rollback').run();
  }

  #flushSoon(group: 'turn' | 'loop'): void {
    if (this.#scheduled === 'turn' || (this.#scheduled === 'loop' && group === 'loop')) return;
    this.#scheduled = group;
    const flush = (): void => {
      if (this.#scheduled !== group) return; // a 'turn' flush took this queue along
      this.#scheduled = 'none';
      if (this.#lock.tryLock()) this.#runBatch();
      else void this.#lock.lock().then(() => this.#runBatch());
    };
    if (group === 'turn') process.nextTick(flush);
    else setImmediate(flush);
  }

  /**
   * Runs the queued units in one transaction, the lock held; each in a savepoint when there are
   * several. Synchronous units run without a single promise; the first async one continues the
   * batch asynchronously (the lock stays held until the end).
   */
  #runBatch(): void {
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) {
      this.#lock.unlock();
      return;
    }
    try {
      this.#begin();
    } catch (error) {
      this.#settle(batch, { reason: error });
      return;
    }
    const grouped = batch.length > 1;
    for (let i = 0; i < batch.length; i += 1) {
      const item = batch[i]!;
      let result: unknown;
      try {
        if (grouped) this.#database.prepare('savepoint fleetgate_write').run();
        this.#current = item;
        result = item.work(this.#statements);
      } catch (error) {
        const broken = this.#undo(item, error, grouped);
        if (broken !== undefined) return this.#settle(batch, broken);
        continue;
      }
      if (isThenable(result)) {
        void this.#finishAsync(batch, i, result, grouped);
        return;
      }
      const broken = this.#keep(item, result, grouped);
      if (broken !== undefined) return this.#settle(batch, broken);
    }
    this.#settle(batch, this.#commitBatch());
  }

  async #finishAsync(
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
          if (grouped) this.#database.prepare('savepoint fleetgate_write').run();
          this.#current = item;
          result = item.work(this.#statements);
          if (isThenable(result)) result = await result;
        }
      } catch (error) {
        const broken = this.#undo(item, error, grouped);
        if (broken !== undefined) return this.#settle(batch, broken);
        continue;
      }
      const broken = this.#keep(item, result, grouped);
      if (broken !== undefined) return this.#settle(batch, broken);
    }
    this.#settle(batch, this.#commitBatch());
  }

  /** A unit succeeded: its savepoint is released. Returns the error that broke the batch, if any. */
  #keep(item: QueuedWrite, value: unknown, grouped: boolean): { reason: unknown } | undefined {
    this.#current = undefined;
    item.value = value;
    if (!grouped) return undefined;
    try {
      this.#database.prepare('release fleetgate_write').run();
      return undefined;
    } catch (error) {
      return { reason: error };
    }
  }

  /**
   * A unit threw: its own statements are rolled back. Returns the error that broke the whole
   * batch when the transaction could not be kept (alone in it, or SQLite ended it on the error).
   */
  #undo(item: QueuedWrite, error: unknown, grouped: boolean): { reason: unknown } | undefined {
    this.#current = undefined;
    delete item.after;
    item.error = { reason: error };
    if (grouped && this.#database.inTransaction) {
      try {
        this.#database.prepare('rollback to fleetgate_write').run();
        this.#database.prepare('release fleetgate_write').run();
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
  #commitBatch(): { reason: unknown } | undefined {
    try {
      this.#commit();
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
  #settle(batch: QueuedWrite[], broken: { reason: unknown } | undefined): void {
    if (broken !== undefined) {
      try {
        this.#rollback();
      } catch {
        // Nothing more to undo: the transaction is gone either way.
      }
    }
    this.#current = undefined;
    this.#lock.unlock();
    if (broken === undefined) {
      this.#onCommit?.();
      for (const item of batch) if (item.error === undefined) runAfter(item);
    }
    for (const item of batch) {
      if (item.error !== undefined) item.reject(item.error.reason);
      else if (broken !== undefined) item.reject(broken.reason);
      else item.resolve(item.value);
    }
    this.#outstanding -= batch.length;
    if (this.#outstanding === 0 && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}
