/**
 * Private servers a fault test (or the soak benchmark) may kill and restart: a PostgreSQL 15
 * cluster of its own (initdb + pg_ctl, as the `postgres` user when running as root) and a
 * nats-server with JetStream, each on a free port in a temporary directory. The shared servers
 * the other suites use are never touched.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';

const run = promisify(execFile);

/** Where the PostgreSQL binaries are (`FLEETGATE_PG_BIN` or the Debian path of version 15). */
export const PG_BIN = process.env.FLEETGATE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** The nats-server binary, when one is installed. */
export const NATS_SERVER = [
  process.env.FLEETGATE_NATS_SERVER,
  '/usr/sbin/nats-server',
  '/usr/bin/nats-server',
  '/usr/local/bin/nats-server',
].find((p): p is string => p !== undefined && existsSync(p));

/** True when a private PostgreSQL cluster can be started here. */
export function canRunPrivatePostgres(): boolean {
  return (
    existsSync(join(PG_BIN, 'initdb')) &&
    existsSync(join(PG_BIN, 'pg_ctl')) &&
    (process.getuid?.() !== 0 || existsSync('/usr/sbin/runuser') || existsSync('/sbin/runuser'))
  );
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Retries `attempt` until it resolves or `timeoutMs` passes. */
async function eventually<T>(attempt: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A server a test can kill and start again on the same port with the same data. */
export interface PrivateServer {
  /** The URL to connect to. */
  readonly url: string;
  readonly port: number;
  /** Ends the server the hard way (PostgreSQL: immediate shutdown, crash recovery on start). */
  kill(): Promise<void>;
  /** Starts it again and resolves once it answers. */
  start(): Promise<void>;
  /** Kills it and removes its data. */
  remove(): Promise<void>;
}

/**
 * Initialises and starts a PostgreSQL cluster of its own; the database `postgres` is trusted for
 * user `postgres` on 127.0.0.1.
 */
export async function startPrivatePostgres(): Promise<PrivateServer> {
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-pg-'));
  const data = join(dir, 'data');
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  // initdb and pg_ctl refuse to run as root: as `postgres` then.
  const as = (bin: string, args: string[]) =>
    root
      ? run('runuser', ['-u', 'postgres', '--', join(PG_BIN, bin), ...args])
      : run(join(PG_BIN, bin), args);
  await as('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c max_connections=60',
  ].join(' ');
  const answers = async (): Promise<void> => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  let running = false;
  const server: PrivateServer = {
    url,
    port,
    async kill() {
      if (!running) return;
      running = false;
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    },
    async start() {
      await as('pg_ctl', [
        '-D',
        data,
        '-l',
        join(dir, 'log'),
        '-o',
        options,
        '-w',
        '-t',
        '60',
        'start',
      ]);
      running = true;
      await eventually(answers, 30_000);
    },
    async remove() {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** Starts a nats-server with JetStream of its own. */
export async function startPrivateNats(): Promise<PrivateServer> {
  if (NATS_SERVER === undefined) throw new Error('no nats-server binary found');
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-nats-'));
  const port = await freePort();
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const server: PrivateServer = {
    url,
    port,
    async kill() {
      const c = child;
      child = undefined;
      if (c === undefined || c.exitCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    },
    async start() {
      child = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], {
        stdio: 'ignore',
      });
      await eventually(async () => {
        const nc = await connect({ servers: url, maxReconnectAttempts: 0, timeout: 1000 });
        try {
          await nc.request('$JS.API.INFO', undefined, { timeout: 1000 });
        } finally {
          await nc.close();
        }
      }, 30_000);
    },
    async remove() {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
