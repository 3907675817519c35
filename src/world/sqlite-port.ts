/**
 * A SQLite store's direct access as the world store uses it (the store's `sqlite` satisfies it):
 * prepared statements run synchronously, writes grouped into shared transactions. Declared here,
 * structurally, so the world depends on no other folder.
 */

/** Statements on the store's SQLite connection, run synchronously (`?` placeholders). */
export interface WorldSqlStatements {
  run(sql: string, params?: readonly unknown[]): { changes: number };
  all<R>(sql: string, params?: readonly unknown[]): R[];
  get<R>(sql: string, params?: readonly unknown[]): R | undefined;
}

/** The direct access: group-committed writes and reads (see the store's `SqliteAccess`). */
export interface WorldSqlite {
  /**
   * Runs `work` in a write transaction shared with the writes queued beside it, in a savepoint of
   * its own; resolves once it committed. `work` touches only its own statements and awaits nothing
   * else.
   */
  write<T>(
    work: (sql: WorldSqlStatements) => T | Promise<T>,
    options?: { group?: 'turn' | 'loop' },
  ): Promise<T>;
  /** Runs `work` outside any transaction, once nothing else holds the connection. */
  read<T>(work: (sql: WorldSqlStatements) => T): Promise<T>;
}
