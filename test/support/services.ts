/**
 * Probes for the real servers integration suites use (NATS with JetStream, PostgreSQL).
 *
 * Each probe resolves `true` when the server answers. When it does not:
 * - with `FLEETGATE_REQUIRE_SERVICES` set (as `.ci/run` does) it throws, so CI fails instead of
 *   quietly skipping the suite;
 * - otherwise it prints a loud warning banner and resolves `false`, so the suite can skip.
 *
 * @example
 * ```ts
 * const natsUp = await requireNats();
 * describe.skipIf(!natsUp)('JetStream bus', () => { ... });
 * ```
 */
import { connect } from '@nats-io/transport-node';
import pg from 'pg';

/** NATS URL for tests: `FLEETGATE_NATS_URL` or the local server. */
export const NATS_URL = process.env.FLEETGATE_NATS_URL ?? 'nats://127.0.0.1:4222';
/** PostgreSQL URL for tests: `FLEETGATE_PG_URL` or the local `test` database. */
export const PG_URL = process.env.FLEETGATE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const PROBE_TIMEOUT_MS = 3_000;

function unavailable(service: string, url: string, error: unknown): false {
  const reason = error instanceof Error ? error.message : String(error);
  if (process.env.FLEETGATE_REQUIRE_SERVICES) {
    throw new Error(
      `${service} at ${url} is required (FLEETGATE_REQUIRE_SERVICES is set) but unreachable: ${reason}`,
    );
  }
  const line = '!'.repeat(78);
  console.warn(
    `\n${line}\n!! ${service} at ${url} is unreachable: ${reason}\n` +
      `!! Its integration tests are SKIPPED. Start it, or set FLEETGATE_REQUIRE_SERVICES=1 to fail.\n${line}\n`,
  );
  return false;
}

/** Resolves true when a NATS server with JetStream answers at `url`. */
export async function requireNats(url: string = NATS_URL): Promise<boolean> {
  try {
    const nc = await connect({ servers: url, timeout: PROBE_TIMEOUT_MS, maxReconnectAttempts: 0 });
    try {
      // A plain NATS server without JetStream would fail every bus test in confusing ways.
      await nc.request('$JS.API.INFO', undefined, { timeout: PROBE_TIMEOUT_MS });
    } finally {
      await nc.close();
    }
    return true;
  } catch (error) {
    return unavailable('NATS (with JetStream)', url, error);
  }
}

/** Resolves true when a PostgreSQL server accepts a connection and a query at `url`. */
export async function requirePostgres(url: string = PG_URL): Promise<boolean> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
  });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch (error) {
    return unavailable('PostgreSQL', url, error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A name unique to this test run and process, safe in stream, subject and schema names. */
export function uniqueName(prefix: string): string {
  const random = Math.random().toString(36).slice(2, 8);
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${random}`.toLowerCase();
}

/** Deletes a JetStream stream on a connection of its own (no error when it is already gone). */
export async function deleteNatsStream(stream: string, url: string = NATS_URL): Promise<void> {
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const admin = await connect({ servers: url });
  try {
    await (await jetstreamManager(admin)).streams.delete(stream).catch(() => false);
  } finally {
    await admin.close();
  }
}

/** True when a JetStream stream of this name exists. */
export async function natsStreamExists(stream: string, url: string = NATS_URL): Promise<boolean> {
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const admin = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(admin);
    return await jsm.streams.info(stream).then(
      () => true,
      () => false,
    );
  } finally {
    await admin.close();
  }
}
