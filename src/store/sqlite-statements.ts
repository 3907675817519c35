/**
 * The statements a SQLite store's direct access runs on its one connection (`sqlite-access.ts`),
 * apart from the access and its group commit, which both hand them to the work they run.
 */

/** What a direct statement reports. */
export interface SqliteRunResult {
  /** Rows inserted, updated or deleted. */
  changes: number;
  /** The rowid of the last row inserted on the connection. */
  lastInsertRowid: number | bigint;
}

/**
 * Statements on the connection, run synchronously. Parameters are positional (`?`); values are
 * numbers, strings, bigints, buffers or null. Each SQL text is prepared once and kept.
 */
export interface SqliteStatements {
  run(sql: string, params?: readonly unknown[]): SqliteRunResult;
  all<R>(sql: string, params?: readonly unknown[]): R[];
  get<R>(sql: string, params?: readonly unknown[]): R | undefined;
  /**
   * Inside a write: runs `fn` once what the unit wrote committed (after the batch's `COMMIT`,
   * before the unit's promise resolves); never when the unit rolled back or its batch failed.
   * A unit's callbacks run in the order it added them, units in the order of the batch.
   *
   * @throws Error outside a write (in a read there is nothing to commit).
   */
  afterCommit(fn: () => void): void;
}
