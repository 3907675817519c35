import { createServer, type Server } from 'node:http';
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
});
