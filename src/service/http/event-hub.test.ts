import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createInMemoryEventBus } from '../../bus/index.js';
import type { EventHub } from './event-hub.js';
import { createEventHub } from './event-hub.js';

/** A server whose every request becomes a stream of the hub. */
async function serve(hub: EventHub, patterns: string[]): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const last = req.headers['last-event-id'];
    void hub.attach(res, patterns, typeof last === 'string' ? last : undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A raw client that sends a request and then never reads (its receive window fills up). */
function stalledClient(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('GET /events HTTP/1.1\r\nHost: x\r\n\r\n');
      socket.pause();
      resolve(socket);
    });
  });
}

describe('event hub', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it('cuts a client that stops reading, and keeps serving the others without slowing publishers', async () => {
    const bus = createInMemoryEventBus();
    const hub = createEventHub({
      bus,
      retain: 1000,
      clientBuffer: 50,
      heartbeatMs: 60_000,
      maxClients: 10,
      sequenced: false,
      onError: (e) => {
        throw e;
      },
    });
    await hub.start();
    const { server, port } = await serve(hub, ['load.>']);
    cleanup.push(
      () => void server.close(),
      () => hub.close(),
      () => bus.close(),
    );
    const slow = await stalledClient(port);
    cleanup.push(() => void slow.destroy());
    let fastBytes = 0;
    const fast = await new Promise<Socket>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.write('GET /events HTTP/1.1\r\nHost: x\r\n\r\n');
        resolve(s);
      });
      s.on('data', (d: Buffer) => (fastBytes += d.length));
    });
    cleanup.push(() => void fast.destroy());
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(hub.stats().clients).toBe(2);

    const payload = { blob: 'x'.repeat(4096) };
    for (let i = 0; i < 2000; i += 1) {
      // Never rejects: the bus is never held up by a client.
      await bus.publish('load.test' as never, payload as never);
      // A steady stream, not one tick: a client that reads keeps up between publishes.
      if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
    }
    await bus.idle();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hub.stats().cut).toBe(1);
    expect(hub.stats().clients).toBe(1);
    // The reader got (nearly) everything: 2000 frames of more than 4 KiB each.
    expect(fastBytes).toBeGreaterThan(2000 * 4096);
  });

  it('replays retained events after Last-Event-ID, and says so when the position is gone', async () => {
    const bus = createInMemoryEventBus();
    const hub = createEventHub({
      bus,
      retain: 100,
      clientBuffer: 1000,
      heartbeatMs: 60_000,
      maxClients: 10,
      sequenced: false,
      onError: (e) => {
        throw e;
      },
    });
    await hub.start();
    const { server, port } = await serve(hub, ['a.*']);
    cleanup.push(
      () => void server.close(),
      () => hub.close(),
      () => bus.close(),
    );
    for (let i = 0; i < 5; i += 1) await bus.publish(`a.${i}` as never, { i } as never);
    await bus.publish('b.x' as never, {} as never);
    await bus.idle();

    const read = async (lastEventId: string): Promise<string> => {
      const response = await fetch(`http://127.0.0.1:${port}/`, {
        headers: { 'last-event-id': lastEventId },
      });
      const reader = response.body!.getReader();
      let text = '';
      const deadline = Date.now() + 300;
      while (Date.now() < deadline) {
        const chunk = await Promise.race([
          reader.read(),
          new Promise<undefined>((resolve) => setTimeout(resolve, 50)),
        ]);
        if (chunk?.value !== undefined) text += new TextDecoder().decode(chunk.value);
      }
      await reader.cancel();
      return text;
    };
    const all = await read('nope');
    expect(all).toContain('event: fleetgate.gap');
    const ids = [...all.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]!);
    expect(ids).toHaveLength(5);
    const resumed = await read(ids[2]!);
    expect([...resumed.matchAll(/^id: (\S+)$/gm)].map((m) => m[1])).toEqual(ids.slice(3));
    expect(resumed).not.toContain('fleetgate.gap');
    expect(resumed).toContain('"topic":"a.4"');
    expect(resumed).not.toContain('"topic":"b.x"');
  });

  /** A hub and a server whose requests pick their filter with `?topics=a,b`. */
  async function hubServer(options: { heartbeatMs?: number; clientBuffer?: number } = {}) {
    const bus = createInMemoryEventBus();
    const hub = createEventHub({
      bus,
      retain: 1000,
      clientBuffer: options.clientBuffer ?? 100_000,
      heartbeatMs: options.heartbeatMs ?? 60_000,
      maxClients: 100,
      sequenced: false,
      onError: (e) => {
        throw e;
      },
    });
    await hub.start();
    const server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const topics = new URL(req.url ?? '/', 'http://x').searchParams.get('topics') ?? '>';
      void hub.attach(res, topics.split(','));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () => void server.close(),
      () => hub.close(),
      () => bus.close(),
    );
    return { bus, hub, port: (server.address() as AddressInfo).port };
  }

  /** The SSE blocks of a stream so far: comments and `{ id, n, topic }` of each event frame. */
  function blocks(text: string): { comments: string[]; events: { topic: string; n: number }[] } {
    const comments: string[] = [];
    const events: { topic: string; n: number }[] = [];
    for (const block of text.split('\n\n').slice(0, -1)) {
      if (block.startsWith(':')) {
        comments.push(block);
        continue;
      }
      const data = /^id: [0-9a-f]{8}-\d+\ndata: (.*)$/.exec(block);
      if (data === null) {
        expect(block).toMatch(/^retry: \d+$/);
        continue;
      }
      const event = JSON.parse(data[1]!) as { topic: string; payload: { n: number } };
      events.push({ topic: event.topic, n: event.payload.n });
    }
    return { comments, events };
  }

  /** An HTTP/1.1 client (chunked answer); its text so far. */
  function chunkedClient(port: number, topics: string): Promise<{ text: () => string }> {
    return new Promise((resolve, reject) => {
      let text = '';
      const req = get(`http://127.0.0.1:${port}/?topics=${topics}`, (res) => {
        expect(res.headers['transfer-encoding']).toBe('chunked');
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        resolve({ text: () => text });
      });
      req.on('error', reject);
      cleanup.push(() => void req.destroy());
    });
  }

  /** An HTTP/1.0 client (an answer delimited by the connection's close); its body so far. */
  function closeDelimitedClient(port: number, topics: string): Promise<{ text: () => string }> {
    return new Promise((resolve) => {
      let raw = '';
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(`GET /?topics=${topics} HTTP/1.0\r\nHost: x\r\n\r\n`);
        resolve({
          text: () => {
            const body = raw.indexOf('\r\n\r\n');
            expect(raw.slice(0, body)).not.toMatch(/transfer-encoding/i);
            return body < 0 ? '' : raw.slice(body + 4);
          },
        });
      });
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (raw += d));
      cleanup.push(() => void socket.destroy());
    });
  }

  async function until(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 25_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('delivers every event once and in publish order to every client, whatever its filter and framing', async () => {
    const { bus, hub, port } = await hubServer();
    const topics = ['a.x', 'a.y', 'b.z', 'c.w'] as const;
    const filters = { 'a.>': ['a.x', 'a.y'], 'a.x,b.*': ['a.x', 'b.z'], '>': [...topics] };
    const readers = [
      ...(await Promise.all(Array.from({ length: 6 }, () => chunkedClient(port, 'a.>')))),
      ...(await Promise.all(Array.from({ length: 4 }, () => chunkedClient(port, 'a.x,b.*')))),
      ...(await Promise.all(Array.from({ length: 4 }, () => closeDelimitedClient(port, '>')))),
    ].map((reader, i) => ({ reader, filter: i < 6 ? 'a.>' : i < 10 ? 'a.x,b.*' : '>' }));
    await until(() => hub.stats().clients === readers.length, 'the clients');

    const published: { topic: string; n: number }[] = [];
    for (let n = 0; n < 3000; n += 1) {
      const topic = topics[n % topics.length]!;
      published.push({ topic, n });
      await bus.publish(topic as never, { n } as never);
      // Bursts of different sizes, some spread over turns, some over timers: many flushes.
      if (n % 7 === 6) await new Promise((resolve) => setImmediate(resolve));
      if (n % 500 === 499) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await bus.idle();
    for (const { reader, filter } of readers) {
      const wanted = published.filter((e) =>
        (filters[filter as keyof typeof filters] as readonly string[]).includes(e.topic),
      );
      await until(() => blocks(reader.text()).events.length >= wanted.length, filter);
      expect(blocks(reader.text()).events).toEqual(wanted);
    }
    expect(hub.stats().cut).toBe(0);
  });

  it('keeps sending heartbeats between and beside batches of events, never inside a frame', async () => {
    const { bus, port } = await hubServer({ heartbeatMs: 20 });
    const chunked = await chunkedClient(port, '>');
    const plain = await closeDelimitedClient(port, '>');
    await new Promise((resolve) => setTimeout(resolve, 30));
    for (let n = 0; n < 400; n += 1) {
      await bus.publish('a.x' as never, { n } as never);
      if (n % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await bus.idle();
    for (const reader of [chunked, plain]) {
      await until(() => blocks(reader.text()).events.length >= 400, 'the events');
      const { comments, events } = blocks(reader.text());
      expect(events.map((e) => e.n)).toEqual(Array.from({ length: 400 }, (_, n) => n));
      expect(comments.length).toBeGreaterThanOrEqual(3);
      for (const comment of comments) expect(comment).toMatch(/^: heartbeat \d{4}-\d\d-\d\dT/);
    }
  });

  it('cuts a stalled client while the others keep every event in order', async () => {
    const { bus, hub, port } = await hubServer({ clientBuffer: 100 });
    const slow = await stalledClient(port);
    cleanup.push(() => void slow.destroy());
    const fast = await chunkedClient(port, '>');
    await until(() => hub.stats().clients === 2, 'the clients');
    const payload = 'x'.repeat(2048);
    // The stalled client falls behind once the kernel's socket buffers, which grow to several
    // MB on loopback, are full: publish until the hub cuts it (at least 4 MB, at most 40).
    let published = 0;
    while (published < 2000 || (hub.stats().cut === 0 && published < 20_000)) {
      await bus.publish('load.test' as never, { n: published, payload } as never);
      published += 1;
      if (published % 10 === 0) {
        await new Promise((resolve) => setImmediate(resolve));
        if (published % 200 === 0) await bus.idle();
      }
    }
    await bus.idle();
    await until(() => hub.stats().cut === 1, 'the cut');
    await until(() => blocks(fast.text()).events.length >= published, 'the events');
    expect(blocks(fast.text()).events.map((e) => e.n)).toEqual(
      Array.from({ length: published }, (_, n) => n),
    );
    expect(hub.stats().clients).toBe(1);
    // Megabytes through a stalled and a reading client: seconds on a loaded machine.
  }, 60_000);
});
