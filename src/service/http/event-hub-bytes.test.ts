import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createInMemoryEventBus } from '../../bus/index.js';
import type { EventHub, EventHubOptions } from './event-hub.js';
import { createEventHub } from './event-hub.js';

const KIB = 1024;

/** A raw client that sends its request, then reads nothing until `resume` (its window fills). */
interface Stalled {
  socket: Socket;
  /** Reads everything left until the server closes the stream; the text received. */
  drain(): Promise<string>;
}

function stalledClient(port: number, lastEventId?: string): Promise<Stalled> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `GET /events HTTP/1.1\r\nHost: x\r\n${lastEventId === undefined ? '' : `Last-Event-ID: ${lastEventId}\r\n`}\r\n`,
      );
      socket.pause();
      resolve({
        socket,
        drain: () =>
          new Promise((done) => {
            const text = (): string => Buffer.concat(chunks).toString('latin1');
            socket.on('data', (d: Buffer) => {
              chunks.push(d);
              // The chunked stream's last chunk: the response ended (the socket may stay open).
              if (text().endsWith('\r\n0\r\n\r\n')) done(text());
            });
            socket.on('close', () => done(text()));
            socket.resume();
          }),
      });
    });
  });
}

describe('event hub byte budgets', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function setup(options: Partial<EventHubOptions>): Promise<{
    hub: EventHub;
    port: number;
    publish: (n: number, bytes: number, settleMs?: number) => Promise<void>;
  }> {
    const bus = createInMemoryEventBus();
    const hub = createEventHub({
      bus,
      retain: 10_000,
      clientBuffer: 100_000,
      heartbeatMs: 60_000,
      maxClients: 10,
      sequenced: false,
      onError: (e) => {
        throw e;
      },
      ...options,
    });
    await hub.start();
    const server: Server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const last = req.headers['last-event-id'];
      void hub.attach(res, ['big.>'], typeof last === 'string' ? last : undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () => void server.closeAllConnections(),
      () => void server.close(),
      () => hub.close(),
      () => bus.close(),
    );
    const publish = async (n: number, bytes: number, settleMs = 100): Promise<void> => {
      for (let i = 0; i < n; i += 1) {
        await bus.publish('big.delta' as never, { i, blob: 'x'.repeat(bytes) } as never);
        if (i % 4 === 3) await new Promise((resolve) => setImmediate(resolve));
      }
      await bus.idle();
      await new Promise((resolve) => setTimeout(resolve, settleMs));
    };
    return { hub, port: (server.address() as AddressInfo).port, publish };
  }

  it('keeps the resume window within its bytes, oldest dropped first, whatever the events weigh', async () => {
    const { hub, port, publish } = await setup({ retainBytes: 1024 * KIB });
    await publish(5, 1 * KIB);
    const small = hub.stats();
    expect(small.retained).toBe(5);
    expect(small.retainedBytes).toBeGreaterThan(5 * KIB);

    await publish(100, 100 * KIB);
    const stats = hub.stats();
    expect(stats.retainedBytes).toBeLessThanOrEqual(1024 * KIB);
    // Ten 100 KiB events fill 1 MiB: the window holds the newest nine or ten, not 10,000.
    expect(stats.retained).toBeGreaterThanOrEqual(9);
    expect(stats.retained).toBeLessThanOrEqual(10);

    // A client resuming from a position the window dropped is told so, then gets the window.
    const client = await stalledClient(port, `${'0'.repeat(8)}-1`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    void hub.close();
    const text = await client.drain();
    expect(text).toContain('event: fleetgate.gap');
    expect(text.match(/^id: /gm)?.length).toBe(stats.retained);
    expect(text).toContain('"i":99');
    expect(text).not.toContain('"i":0,');
  });

  it('cuts a client past its byte budget with a final event: error naming why', async () => {
    const { hub, port, publish } = await setup({
      clientBufferBytes: 256 * KIB,
      bufferBytes: 1024 * KIB,
    });
    const slow = await stalledClient(port);
    cleanup.push(() => void slow.socket.destroy());
    await new Promise((resolve) => setTimeout(resolve, 50));

    // 100 events of 64 KiB: far fewer than clientBuffer (100,000) events, far more bytes.
    await publish(100, 64 * KIB);
    expect(hub.stats().cut).toBe(1);
    expect(hub.stats().clients).toBe(0);
    expect(hub.stats().queuedBytes).toBe(0);
    const text = await slow.drain();
    // The error frame is the stream's last: no event after it.
    const at = text.lastIndexOf('event: error\ndata: ');
    expect(at).toBeGreaterThan(0);
    expect(text.slice(at)).not.toMatch(/^id: /m);
    const line = /^event: error\ndata: (.*)$/m.exec(text.slice(at))![1]!;
    const data = JSON.parse(line) as Record<string, string>;
    expect(data).toMatchObject({
      code: 'FLEETGATE_EVENTS_CLIENT_TOO_SLOW',
      reason: 'client-buffer-bytes',
    });
    expect(data['message']).toContain('events.clientBufferBytes');
  });

  it('bounds what waits for all clients together: the client furthest behind is cut first', async () => {
    const { hub, port, publish } = await setup({
      clientBufferBytes: 1024 * KIB,
      bufferBytes: 1280 * KIB,
    });
    const clients: Stalled[] = [];
    for (let i = 0; i < 3; i += 1) {
      const client = await stalledClient(port);
      cleanup.push(() => void client.socket.destroy());
      clients.push(client);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    let peak = 0;
    for (let round = 0; round < 50; round += 1) {
      await publish(4, 64 * KIB, 5);
      peak = Math.max(peak, hub.stats().queuedBytes);
    }
    // Three clients could each hold 1 MiB; together they never hold more than 1.25 MiB.
    expect(peak).toBeLessThanOrEqual(1280 * KIB);
    expect(hub.stats().cut).toBeGreaterThanOrEqual(1);
    const texts = await Promise.all(
      clients.slice(0, hub.stats().cut).map(async (c) => {
        const timer = setTimeout(() => c.socket.destroy(), 2000);
        const text = await c.drain();
        clearTimeout(timer);
        return text;
      }),
    );
    expect(texts.some((t) => t.includes('"reason":"buffer-bytes"'))).toBe(true);
  });
});
