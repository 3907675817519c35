/**
 * Reconnects: a private nats-server (not the shared one) is killed and restarted under a running
 * bus; acknowledged events survive and the durable subscriber resumes, each event once.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { PublishResult } from '../src/bus/index.js';
import type { OpenTopics } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { Collector } from './support/event-bus-contract.js';

const NATS_SERVER = [
  '/usr/sbin/nats-server',
  '/usr/bin/nats-server',
  '/usr/local/bin/nats-server',
].find((p) => existsSync(p));

function freePort(): Promise<number> {
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

/** Retries `attempt` until it resolves or `timeoutMs` passes (for a server coming up). */
async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
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

describe.skipIf(NATS_SERVER === undefined)('JetStreamEventBus across a server restart', () => {
  let server: ChildProcess | undefined;
  let storeDir = '';
  const buses: JetStreamEventBus<OpenTopics>[] = [];

  async function startServer(port: number): Promise<void> {
    server = spawn(NATS_SERVER!, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], {
      stdio: 'ignore',
    });
    await eventually(async () => {
      const nc = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: 0 });
      try {
        await nc.request('$JS.API.INFO', undefined, { timeout: 1000 });
      } finally {
        await nc.close();
      }
    });
  }

  async function killServer(): Promise<void> {
    const s = server;
    if (s === undefined || s.exitCode !== null) return;
    const exited = new Promise((r) => s.once('exit', r));
    s.kill('SIGKILL');
    await exited;
  }

  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close().catch(() => undefined)));
    await killServer();
    if (storeDir !== '') rmSync(storeDir, { recursive: true, force: true });
  });

  it('keeps acknowledged events and resumes the durable subscriber after the server is killed', async () => {
    storeDir = mkdtempSync(join(tmpdir(), 'fleetgate-nats-'));
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    await startServer(port);
    const options = {
      servers: url,
      stream: 'RECONNECT',
      subjectPrefix: 'rc',
      publishTimeoutMs: 2_000,
    };
    const publisher = await createJetStreamEventBus<OpenTopics>(options);
    const subscriber = await createJetStreamEventBus<OpenTopics>(options);
    buses.push(publisher, subscriber);
    const got = new Collector();
    await subscriber.subscribe('r.>', got.push, { name: 'resilient', durable: true });

    const acked: PublishResult[] = [];
    for (let i = 0; i < 5; i += 1) acked.push(await publisher.publish('r.before', { i }));
    await got.until(5);

    await killServer();
    await startServer(port);

    // The clients reconnect on their own; publishing succeeds once they have.
    for (let i = 0; i < 5; i += 1) {
      acked.push(await eventually(() => publisher.publish('r.after', { i }, { id: `after-${i}` })));
    }
    await got.until(10, 15_000);

    const ids = got.events.map((e) => e.id);
    expect(ids).toEqual(acked.map((a) => a.id));
    // Every acknowledged event is still in the stream after the kill.
    const replay = new Collector();
    await subscriber.subscribe('r.>', replay.push, { name: 'replay', from: 'all' });
    expect((await replay.until(10)).map((e) => e.id)).toEqual(ids);
  }, 60_000);
});
