/**
 * The one lock on a SQLite store's single connection, and the kysely dialect that takes it: kysely
 * acquires it for each query or transaction, the direct access (`sqlite-access.ts`) takes it
 * synchronously when it is free.
 */
import type { DatabaseConnection, Driver } from 'kysely';
import { SqliteDialect, SqliteDriver } from 'kysely';
import type { SqliteDialectConfig } from 'kysely';

/** A FIFO lock on the single connection: taken synchronously when free, handed over in order. */
export class ConnectionLock {
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

/** kysely's SQLite dialect over a connection shared with a `SqliteAccess` (`sqlite-access.ts`). */
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
