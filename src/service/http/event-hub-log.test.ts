/**
 * The hub on a bus that keeps no log, with the store's outbox as its durable log: a client past
 * the window gets the log's events merged, in order, with the window's events that did not come
 * through the outbox; it is told of a gap only when one of those it would have matched is gone;
 * a backlog larger than its queue's budget is paced, not cut.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenTopics } from '../../protocol/index.js';
import {
  createInMemoryEventBus,
  createOutboxLog,
  createOutboxRelay,
  createOutboxWriter,
} from '../../bus/index.js';
import { openGatewayStore } from '../migrations.js';
import type { EventHubOptions } from './event-hub.js';
import { createEventHub } from './event-hub.js';

const outbox = createOutboxWriter<OpenTopics>();

describe('event hub resuming from the durable log', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function setup(options: Partial<EventHubOptions> = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-hub-log-'));
    const store = await openGatewayStore(`sqlite:${join(dir, 'store.db')}`);
    const bus = createInMemoryEventBus<OpenTopics>();
    const relay = createOutboxRelay({ db: store.db, bus });
    const hub = createEventHub({
      bus,
      retain: 5,
      clientBuffer: 100_000,
      heartbeatMs: 60_000,
      maxClients: 10,
      sequenced: false,
      log: createOutboxLog(store.db),
      onError: (e) => {
        throw e;
      },
      ...options,
    });
    await hub.start();
    const server: Server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const last = req.headers['last-event-id'];
      const topics = new URL(req.url!, 'http://x').searchParams.get('topics') ?? '>';
      void hub.attach(res, topics.split(','), typeof last === 'string' ? last : undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => store.close(),
      () => bus.close(),
      () => hub.close(),
      () => void server.close(),
      () => void server.closeAllConnections(),
    );
    return {
      /** An event through the outbox, relayed and delivered. */
      async committed(topic: string, payload: Record<string, unknown> = {}): Promise<void> {
        await outbox.write(store.db, topic as never, payload as never);
        await relay.drain();
        await bus.idle();
      },
      /** An event published straight to the bus (no durable copy). */
      async direct(topic: string, payload: Record<string, unknown> = {}): Promise<void> {
        await bus.publish(topic as never, payload as never);
        await bus.idle();
      },
      /** The frames a client reads in `ms` from `lastEventId` with filter `topics`. */
      async read(topics: string, lastEventId?: string, ms = 300): Promise<Frame[]> {
        const response = await fetch(`http://127.0.0.1:${port}/?topics=${topics}`, {
          headers: lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
        });
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        let open = true;
        const reading = (async () => {
          while (open) {
            const chunk = await reader.read();
            if (chunk.done) return;
            text += decoder.decode(chunk.value, { stream: true });
          }
        })().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, ms));
        open = false;
        await reader.cancel();
        await reading;
        return frames(text);
      },
      port,
    };
  }

  it('merges the log with the window’s direct events, in order, and resumes again from either', async () => {
    const t = await setup();
    await t.committed('a.1', { n: 1 });
    // A live reader of everything, from the start.
    const live = t.read('a.>', undefined, 1500);
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (let i = 2; i <= 12; i += 1) {
      await t.committed('a.c', { n: i });
      if (i % 4 === 2) await t.direct('a.d', { n: i });
    }
    const seen = (await live).filter((f) => f.event === undefined);
    expect(seen.map((f) => f.data.payload.n)).toEqual([
      2, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10, 10, 11, 12,
    ]);
    // The window (5 events) holds 9..12 and the direct event after 10; a client at 2 is behind.
    const resumed = await t.read('a.>', seen[0]!.id);
    expect(resumed.filter((f) => f.event !== undefined).map((f) => f.event)).toEqual([
      'fleetgate.gap',
    ]);
    // The direct events after 2 and 6 are gone (evicted); the rest arrive as the live reader saw
    // them, the window's direct event after 10 in its place among the log's.
    expect(resumed.filter((f) => f.event === undefined).map((f) => f.data.payload.n)).toEqual([
      3, 4, 5, 6, 7, 8, 9, 10, 10, 11, 12,
    ]);
    // A client whose filter matches no lost event is not told of a gap.
    const committedOnly = await t.read('a.c', seen[0]!.id);
    expect(committedOnly.map((f) => f.event ?? f.data.payload.n)).toEqual([
      3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
    ]);
    // Resuming from an id the log gave, and from one the window gave.
    const fromLog = resumed.find((f) => f.event === undefined && f.data.payload.n === 6)!;
    expect(fromLog.id).toMatch(/^[0-9a-f]{8}-0-\d+$/);
    expect((await t.read('a.c', fromLog.id)).map((f) => f.event ?? f.data.payload.n)).toEqual([
      7, 8, 9, 10, 11, 12,
    ]);
    // A position past the log's head is another store's: the window is replayed after a notice.
    const elsewhere = await t.read('a.c', `${'0'.repeat(8)}-3-99999`);
    expect(elsewhere[0]).toMatchObject({ event: 'fleetgate.gap' });
    expect(elsewhere.slice(1).map((f) => f.data.payload.n)).toEqual([9, 10, 11, 12]);
    const fromWindow = seen.find((f) => f.data.payload.n === 11)!;
    expect((await t.read('a.>', fromWindow.id)).map((f) => f.event ?? f.data.payload.n)).toEqual([
      12,
    ]);
  });

  it('paces a backlog larger than a client’s queue budget instead of cutting it', async () => {
    const t = await setup({ retain: 10, clientBufferBytes: 64 * 1024, retainBytes: 64 * 1024 });
    await t.committed('big.x', { n: 0 });
    const seen = await t.read('big.>', 'nope');
    const start = seen.find((f) => f.event === undefined)!;
    const pad = 'x'.repeat(5000);
    for (let i = 1; i <= 2000; i += 1) await t.committed('big.x', { n: i, pad });
    // A raw client that reads slowly: ~10 MB of backlog (more than the sockets buffer) against a
    // 64 KiB queue.
    const text = await slowRead(t.port, 'big.>', start.id!);
    expect(text).not.toContain('FLEETGATE_EVENTS_CLIENT_TOO_SLOW');
    const got = frames(text)
      .filter((f) => f.event === undefined)
      .map((f) => f.data.payload.n);
    expect(got).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
  });
});

interface Frame {
  id?: string;
  event?: string;
  data: { payload: { n?: number } } & Record<string, unknown>;
}

function frames(text: string): Frame[] {
  const out: Frame[] = [];
  for (const raw of text.split('\n\n')) {
    const frame: Partial<Frame> = {};
    for (const line of raw.split('\n')) {
      if (line.startsWith('id: ')) frame.id = line.slice(4);
      else if (line.startsWith('event: ')) frame.event = line.slice(7);
      else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6)) as Frame['data'];
    }
    if (frame.data !== undefined) out.push(frame as Frame);
  }
  return out;
}

/** Reads a stream slowly (paused between reads) until 2000 events came or 20 s passed. */
function slowRead(port: number, topics: string, lastEventId: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `GET /?topics=${topics} HTTP/1.1\r\nHost: x\r\nLast-Event-ID: ${lastEventId}\r\n\r\n`,
      );
    });
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(text);
    };
    const timer = setTimeout(done, 20_000);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (text.includes('"n":2000,') || text.includes('FLEETGATE_EVENTS_CLIENT_TOO_SLOW')) {
        setTimeout(done, 100);
        return;
      }
      socket.pause();
      setTimeout(() => socket.resume(), 5);
    });
    socket.on('close', done);
  });
}
