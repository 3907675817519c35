/**
 * Live (non-durable) subscriptions across a NATS outage: a private nats-server restarted under the
 * bus, and a connection to the shared server cut by a proxy. Delivery resumes within a couple of
 * seconds of the server being back, from where it stopped: nothing lost, nothing twice.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenTopics } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { Collector } from './support/event-bus-contract.js';
import type { PrivateServer } from './support/private-servers.js';
import { NATS_SERVER, startPrivateNats } from './support/private-servers.js';
import { NATS_URL, deleteNatsStream, requireNats, uniqueName } from './support/services.js';
import type { TcpProxy } from './support/tcp-proxy.js';
import { startTcpProxy } from './support/tcp-proxy.js';

const natsUp = await requireNats();

/** Longest an event published once the server is back may take to reach a live subscriber. */
const RESUME_MS = 3_000;

/** Retries `attempt` until it resolves (a publisher reconnecting). */
async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const buses: JetStreamEventBus<OpenTopics>[] = [];
afterEach(async () => {
  await Promise.all(buses.splice(0).map((b) => b.close().catch(() => undefined)));
});

async function bus(
  options: Parameters<typeof createJetStreamEventBus>[0],
): Promise<JetStreamEventBus<OpenTopics>> {
  const created = await createJetStreamEventBus<OpenTopics>({
    publishTimeoutMs: 1_000,
    ...options,
  });
  buses.push(created);
  return created;
}

/**
 * Publishes `after-1…count` one at a time once `publisher` reaches the server again, each awaited
 * at the subscriber within {@link RESUME_MS}.
 */
async function publishAfter(
  publisher: JetStreamEventBus<OpenTopics>,
  got: Collector,
  count: number,
): Promise<void> {
  const before = got.events.length;
  await eventually(() => publisher.publish('l.after', { i: 1 }, { id: 'after-1' }));
  await got.until(before + 1, RESUME_MS);
  for (let i = 2; i <= count; i += 1) {
    await publisher.publish('l.after', { i }, { id: `after-${i}` });
    await got.until(before + i, RESUME_MS);
  }
}

describe.skipIf(NATS_SERVER === undefined)('live subscription across a server restart', () => {
  let server: PrivateServer | undefined;
  afterEach(async () => {
    await server?.remove();
    server = undefined;
  });

  it('delivers every event published after the restart within seconds, each once', async () => {
    server = await startPrivateNats();
    const options = { servers: server.url, stream: 'LIVE', subjectPrefix: 'live' };
    const publisher = await bus(options);
    const subscriber = await bus(options);
    const got = new Collector();
    await subscriber.subscribe('l.>', got.push, { name: 'live-view' });
    await publisher.publish('l.before', {}, { id: 'before-1' });
    await got.until(1);

    await server.kill();
    await server.start();
    await publishAfter(publisher, got, 5);

    expect(got.events.map((e) => e.id)).toEqual([
      'before-1',
      'after-1',
      'after-2',
      'after-3',
      'after-4',
      'after-5',
    ]);
  }, 60_000);

  it('resumes a subscription that had no event yet without replaying older ones', async () => {
    server = await startPrivateNats();
    const options = { servers: server.url, stream: 'LIVE', subjectPrefix: 'live' };
    const publisher = await bus(options);
    const subscriber = await bus(options);
    await publisher.publish('l.before', {}, { id: 'history' });
    const got = new Collector();
    await subscriber.subscribe('l.>', got.push, { name: 'live-view' });

    await server.kill();
    await server.start();
    await publishAfter(publisher, got, 3);

    expect(got.events.map((e) => e.id)).toEqual(['after-1', 'after-2', 'after-3']);
  }, 60_000);
});

describe.skipIf(!natsUp)('live subscription across a cut connection', () => {
  let proxy: TcpProxy | undefined;
  let stream = '';
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
    if (stream !== '') await deleteNatsStream(stream);
    stream = '';
  });

  it('delivers what was published while cut, then live, each once, on one consumer', async () => {
    stream = uniqueName('FGLIVECUT').toUpperCase();
    const prefix = uniqueName('fglc');
    const url = new URL(NATS_URL);
    proxy = await startTcpProxy(url.hostname, Number(url.port || 4222));
    const publisher = await bus({ servers: NATS_URL, stream, subjectPrefix: prefix });
    const subscriber = await bus({
      servers: `nats://127.0.0.1:${proxy.port}`,
      stream,
      subjectPrefix: prefix,
    });
    const got = new Collector();
    await subscriber.subscribe('l.>', got.push, { name: 'live-view' });
    await publisher.publish('l.before', {}, { id: 'before-1' });
    await got.until(1);

    proxy.cut();
    for (let i = 1; i <= 3; i += 1) await publisher.publish('l.cut', { i }, { id: `cut-${i}` });
    await new Promise((r) => setTimeout(r, 1_000));
    proxy.pass();
    await got.until(4, RESUME_MS + 2_000);
    await publishAfter(publisher, got, 2);

    expect(got.events.map((e) => e.id)).toEqual([
      'before-1',
      'cut-1',
      'cut-2',
      'cut-3',
      'after-1',
      'after-2',
    ]);
    // The consumer read before the cut was replaced, not left beside the new one.
    const jsm = await jetstreamManager(publisher.connection);
    await eventually(async () => {
      const consumers = await jsm.consumers.list(stream).next();
      expect(consumers).toHaveLength(1);
    }, 5_000);
  }, 60_000);
});
