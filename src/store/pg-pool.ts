/**
 * What keeps a PostgreSQL pool alive and honest when the server is not: every pooled connection
 * has an `error` listener for its whole life (idle or in use), every statement and every read is
 * bounded by a timeout, and what fails because the database is away comes out as a coded error
 * (`FLEETGATE_STORE_UNAVAILABLE`, `FLEETGATE_STORE_TIMEOUT`) that callers can retry on.
 */
import type { Pool, PoolClient, PoolConfig } from 'pg';
import { FleetgateError } from '../protocol/index.js';

/** Timeouts of a PostgreSQL store, in milliseconds; 0 turns one off. */
export interface StoreTimeouts {
  /** Opening a connection, or waiting for a free one in a full pool (default 10 s). */
  connectMs?: number;
  /**
   * Server side: PostgreSQL cancels a statement that runs longer (`statement_timeout`, default
   * 30 s). Raise it for a migration that rewrites a large table.
   */
  statementMs?: number;
  /**
   * Client side: a query whose answer does not arrive in time fails and its connection is
   * dropped (default 40 s). Catches a server or network that accepts and then never answers,
   * which the server-side timeout cannot.
   */
  queryMs?: number;
}

/** The timeouts used where {@link StoreTimeouts} leaves one out. */
export const DEFAULT_STORE_TIMEOUTS: Readonly<Required<StoreTimeouts>> = {
  connectMs: 10_000,
  statementMs: 30_000,
  queryMs: 40_000,
};

/** pg pool settings for the timeouts (and TCP keep-alive, so a silent peer is noticed). */
export function timeoutConfig(timeouts: StoreTimeouts = {}): PoolConfig {
  const t = { ...DEFAULT_STORE_TIMEOUTS, ...timeouts };
  for (const [name, value] of Object.entries(t)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new FleetgateError(
        'FLEETGATE_CONFIG_INVALID',
        `Store timeout ${name} must be a whole number of milliseconds ≥ 0 (got ${String(value)})`,
        { details: { timeout: name, value } },
      );
    }
  }
  const config: PoolConfig = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 };
  if (t.connectMs > 0) config.connectionTimeoutMillis = t.connectMs;
  if (t.statementMs > 0) config.statement_timeout = t.statementMs;
  if (t.queryMs > 0) config.query_timeout = t.queryMs;
  return config;
}

/** Node socket errors that mean the server is unreachable or went away. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs that mean the server is going away or not taking work yet: admin/crash shutdown,
 * "the database system is starting up", too many connections.
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

const UNAVAILABLE_MESSAGES = ['Connection terminated', 'not queryable'];

type Phase = 'connect' | 'query';

/**
 * The coded error for a pg failure caused by the database being away or slow; `undefined` for
 * any other failure (a constraint violation, bad SQL…), which stays as pg raised it.
 */
export function classifyPgError(error: unknown, phase: Phase): FleetgateError | undefined {
  if (!(error instanceof Error) || error instanceof FleetgateError) return undefined;
  const code = (error as { code?: unknown }).code;
  const message = error.message;
  const details = { phase, ...(typeof code === 'string' ? { cause: code } : {}) };
  if (
    message === 'Query read timeout' ||
    message.includes('timeout exceeded when trying to connect') ||
    message.includes('due to connection timeout') ||
    (code === '57014' && message.includes('statement timeout'))
  ) {
    return new FleetgateError(
      'FLEETGATE_STORE_TIMEOUT',
      `PostgreSQL did not answer in time (${phase}): ${message}`,
      { cause: error, details },
    );
  }
  const unavailable =
    (typeof code === 'string' &&
      (NETWORK_CODES.has(code) || UNAVAILABLE_STATES.has(code) || code.startsWith('08'))) ||
    UNAVAILABLE_MESSAGES.some((m) => message.includes(m));
  if (!unavailable) return undefined;
  return new FleetgateError(
    'FLEETGATE_STORE_UNAVAILABLE',
    `PostgreSQL is unavailable (${phase}): ${message}`,
    { cause: error, details },
  );
}

function coded(error: unknown, phase: Phase): unknown {
  return classifyPgError(error, phase) ?? error;
}

/** The pool the SQL builder needs: `connect` and `end` (kysely's `PostgresPool`). */
export interface GuardedPool {
  connect(): Promise<PoolClient>;
  end(): Promise<void>;
}

const GUARDED = Symbol('fleetgate.guarded');

/** Connections whose query timed out on the client: never reused. */
const broken = new WeakSet<PoolClient>();

/**
 * Wraps a pg pool for the SQL builder:
 * - every connection gets an `error` listener when it is created, kept while it is in use (pg
 *   only listens while a connection is idle, so a connection that drops during a query or an
 *   open transaction would otherwise end the process with "Connection terminated unexpectedly");
 * - failures of `connect` and of queries caused by the database being away or slow become
 *   `FLEETGATE_STORE_UNAVAILABLE` / `FLEETGATE_STORE_TIMEOUT` (the pg error kept as `cause`);
 * - a query that timed out on the client drops its connection: pg leaves the connection waiting
 *   for the late answer, and the next query on it would wait behind it.
 */
export function guardPool(pool: Pool, onConnectionError: (error: Error) => void): GuardedPool {
  pool.on('connect', (client) => {
    let failed = false;
    client.on('error', (error) => {
      // A dropped connection reports twice (the server's goodbye, then the closed socket).
      if (failed) return;
      failed = true;
      onConnectionError(error);
    });
  });
  return {
    async connect() {
      let client: PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw coded(error, 'connect');
      }
      guardQueries(client);
      // pg gives each checkout its own `release`: a connection whose query timed out goes back
      // as broken, so the pool closes it instead of handing it out again.
      const release = client.release.bind(client);
      client.release = (error?: Error | boolean) =>
        release(broken.has(client) ? new Error('dropped after a query timeout') : error);
      return client;
    },
    end: () => pool.end(),
  };
}

function guardQueries(client: PoolClient): void {
  const marked = client as PoolClient & { [GUARDED]?: true };
  if (marked[GUARDED] === true) return;
  marked[GUARDED] = true;
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const guarded = (...args: unknown[]): unknown => {
    const result = query(...args);
    // Callback and cursor forms return no promise: only the promise form is used here.
    if (!(result instanceof Promise)) return result;
    return result.catch((error: unknown) => {
      if (error instanceof Error && error.message === 'Query read timeout') {
        // The answer may still come, into a connection nobody waits on: drop it, so the pool
        // opens a fresh one instead of queueing the next query behind the lost one.
        broken.add(client);
        (
          client as unknown as { connection?: { stream?: { destroy(): void } } }
        ).connection?.stream?.destroy();
      }
      throw coded(error, 'query');
    });
  };
  (client as unknown as { query: typeof guarded }).query = guarded;
}
