/**
 * The statements a SQLite store's direct access runs on its one connection (`sqlite-access.ts`),
 * apart from the access and its group commit, which both hand them to the work they run.
 */

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
