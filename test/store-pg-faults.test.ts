/**
 * The PostgreSQL store when the server misbehaves: a connection dropped while in use does not end
 * the process, and a server that stalls or a statement that runs too long fails with a coded
 * timeout instead of hanging the caller (and the outbox relay) forever.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { isFleetgateError } from '../src/protocol/index.js';
import { openGatewayStore, type GatewayStore } from '../src/service/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pgUp = await requirePostgres();
const target = new URL(PG_URL);

/** Runs `code` as an ES module in a fresh Node process; resolves its exit code and output. */
function runFresh(
  code: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', code],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PG_URL } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** The URL of `PG_URL` with its host and port replaced. */
function via(port: number): string {
  const url = new URL(PG_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}

describe.skipIf(!pgUp)('PostgreSQL store when the server drops or stalls', () => {
  const stores: GatewayStore[] = [];
  const proxies: TcpProxy[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close().catch(() => undefined);
    for (const proxy of proxies.splice(0)) await proxy.close();
    for (const server of servers.splice(0)) server.close();
  });

  it('keeps the process alive when a connection in use is terminated, and fails the transaction with FLEETGATE_STORE_UNAVAILABLE', async () => {
    // In a process of its own: before the fix the unhandled 'error' event ended that process.
    const run = await runFresh(`
      import pg from 'pg';
      import { openGatewayStore } from './src/service/index.ts';
      const applicationName = 'fginuse_' + process.pid;
      const errors = [];
      const store = await openGatewayStore(process.env.PG_URL, {
        migrate: false, poolSize: 1, applicationName, onError: (e) => errors.push(e.message),
      });
      const admin = new pg.Client({ connectionString: process.env.PG_URL });
      await admin.connect();
      let failure;
      try {
        await store.db.transaction().execute(async (trx) => {
          await trx.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
          // The connection is checked out (an open transaction); the server ends it.
          await admin.query(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
            [applicationName],
          );
          await new Promise((r) => setTimeout(r, 300));
          await trx.selectNoFrom((eb) => eb.lit(2).as('two')).execute();
        });
      } catch (error) {
        failure = error;
      }
      const after = await store.db.selectNoFrom((eb) => eb.lit(3).as('three')).executeTakeFirst();
      await admin.end();
      await store.close();
      console.log(JSON.stringify({
        code: failure?.code, errors: errors.length, connectionErrors: store.connectionErrors, after,
      }));
    `);
    expect(run.stderr).not.toContain('Connection terminated unexpectedly\n    at');
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(out).toEqual({
      code: 'FLEETGATE_STORE_UNAVAILABLE',
      errors: 1,
      connectionErrors: 1,
      after: { three: 3 },
    });
  });

  it('cancels a statement past statementMs with FLEETGATE_STORE_TIMEOUT', async () => {
    const store = await openGatewayStore(PG_URL, {
      migrate: false,
      timeouts: { statementMs: 200 },
    });
    stores.push(store);
    const error = await sql`select pg_sleep(5)`.execute(store.db).catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_STORE_TIMEOUT')).toBe(true);
    expect((error as Error).message).toContain('statement timeout');
    // The connection is still good: the server cancelled the statement, not the session.
    expect(await sql<{ n: number }>`select 1 as n`.execute(store.db)).toMatchObject({
      rows: [{ n: 1 }],
    });
  });

  it('fails a query on a server that stops answering with FLEETGATE_STORE_TIMEOUT, then works again once it answers', async () => {
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    proxies.push(proxy);
    const store = await openGatewayStore(via(proxy.port), {
      migrate: false,
      poolSize: 1,
      timeouts: { queryMs: 300, connectMs: 300 },
    });
    stores.push(store);
    await sql`select 1`.execute(store.db);
    proxy.stall();
    const error = await sql`select 2`.execute(store.db).catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_STORE_TIMEOUT')).toBe(true);
    expect((error as { details?: { phase?: string } }).details?.phase).toBe('query');
    // New connections hang as well while it stalls: the connect timeout ends the wait.
    const again = await sql`select 3`.execute(store.db).catch((e: unknown) => e);
    expect(isFleetgateError(again, 'FLEETGATE_STORE_TIMEOUT')).toBe(true);
    proxy.pass();
    // The connection of the lost query was dropped, so the next query gets a fresh one.
    expect(await sql<{ n: number }>`select 4 as n`.execute(store.db)).toMatchObject({
      rows: [{ n: 4 }],
    });
  });

  it('fails to connect to a server that accepts and never answers with FLEETGATE_STORE_TIMEOUT', async () => {
    const silent = createServer(() => undefined);
    servers.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const error = await openGatewayStore(via(port), {
      schema: uniqueName('fgsilent'),
      timeouts: { connectMs: 300 },
    }).catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_STORE_TIMEOUT')).toBe(true);
    expect((error as { details?: { phase?: string } }).details?.phase).toBe('connect');
  });

  it('fails with FLEETGATE_STORE_UNAVAILABLE while the server is cut off, and recovers when it is back', async () => {
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    proxies.push(proxy);
    const store = await openGatewayStore(via(proxy.port), { migrate: false, poolSize: 2 });
    stores.push(store);
    await sql`select 1`.execute(store.db);
    proxy.cut();
    const error = await sql`select 2`.execute(store.db).catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_STORE_UNAVAILABLE')).toBe(true);
    proxy.pass();
    expect(await sql<{ n: number }>`select 3 as n`.execute(store.db)).toMatchObject({
      rows: [{ n: 3 }],
    });
  });
});
