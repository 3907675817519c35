/**
 * sse-fanout: one gateway (this process: `startService`, in-process bus) with `CLIENTS` live-event
 * clients on `GET /api/events` (another process, one connection each). Events are published on the
 * gateway's bus as fast as it takes them; every client must receive every event.
 *
 * - `events_per_s`: events published and delivered to all clients, per second (≥ 5,000);
 * - `p99_ms`: publish-to-client latency, 99th percentile over a sample of clients (≤ 100);
 * - `p50_ms`, `frames_per_s` (events × clients per second), `clients_cut` (must be 0).
 *
 * Baseline in the same run: the same publisher and the same clients against a bare Node HTTP
 * server writing the same frames, batched the same way (`raw_events_per_s`, `events_ratio`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, get, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';

import { parseConfig, startService } from '../src/service/index.js';
import { note, percentile, report } from './report.js';

const BENCH = 'sse-fanout';
const CLIENTS = 1000;
const EVENTS = 1000;
/** Clients whose latencies are recorded (all of them count events). */
const SAMPLED = 50;

const now = (): number => performance.timeOrigin + performance.now();

if (process.argv.includes('--clients')) {
  await clients(process.argv[process.argv.indexOf('--clients') + 1]!);
} else {
  await main();
}

/** Child mode: CLIENTS connections to `url`; reports when every client has every event. */
async function clients(url: string): Promise<void> {
  const counts = new Array<number>(CLIENTS).fill(0);
  const latencies: number[] = [];
  let complete = 0;
  let lastAt = 0;
  await Promise.all(
    Array.from(
      { length: CLIENTS },
      (_, i) =>
        new Promise<void>((resolve, reject) => {
          const req = get(url, { agent: false }, (res) => {
            res.setEncoding('utf8');
            let buffer = '';
            res.on('data', (chunk: string) => {
              buffer += chunk;
              let at: number;
              while ((at = buffer.indexOf('\n\n')) >= 0) {
                const frame = buffer.slice(0, at);
                buffer = buffer.slice(at + 2);
                const data = frame.indexOf('data: ');
                if (data < 0) continue;
                counts[i]! += 1;
                if (i < SAMPLED) {
                  const sent = /"sentAt":([0-9.]+)/.exec(frame);
                  if (sent !== null) latencies.push(now() - Number(sent[1]));
                }
                if (counts[i] === EVENTS) {
                  complete += 1;
                  lastAt = now();
                  if (complete === CLIENTS) {
                    process.stdout.write(
                      `${JSON.stringify({ done: true, lastAt, p50: percentile(latencies, 50), p99: percentile(latencies, 99) })}\n`,
                    );
                    process.exit(0);
                  }
                }
              }
            });
            resolve();
          });
          req.on('error', reject);
        }),
    ),
  );
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  setTimeout(() => {
    process.stdout.write(
      `${JSON.stringify({ done: false, complete, counts: counts.slice(0, 5) })}\n`,
    );
    process.exit(1);
  }, 300_000).unref();
}

/** Runs the client process against `url` while `publish` is called EVENTS times. */
async function run(
  url: string,
  publish: (i: number) => Promise<void> | void,
): Promise<{ eventsPerS: number; p50: number; p99: number }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), '--clients', url],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout });
  const next = (): Promise<Record<string, unknown>> =>
    new Promise((resolve) =>
      lines.once('line', (l) => resolve(JSON.parse(l) as Record<string, unknown>)),
    );
  await next(); // ready
  await new Promise((resolve) => setTimeout(resolve, 500));
  const finished = next();
  const started = now();
  for (let i = 0; i < EVENTS; i += 1) {
    await publish(i);
    // Let the sockets drain between small batches, as a steady publisher would.
    if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve));
  }
  const result = await finished;
  if (result.done !== true)
    throw new Error(`not every client got every event: ${JSON.stringify(result)}`);
  return {
    eventsPerS: EVENTS / (((result.lastAt as number) - started) / 1000),
    p50: result.p50 as number,
    p99: result.p99 as number,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-sse-'));
  // Baseline: a bare server writing each frame to every open response.
  const open = new Set<ServerResponse>();
  const raw = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('retry: 2000\n\n'); // sends the headers, as the gateway does
    open.add(res);
    res.on('close', () => open.delete(res));
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`;

  const service = await startService({
    config: parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      store: `sqlite:${join(dir, 'fleetgate.db')}`,
      events: { clientBuffer: 100_000, maxClients: 2 * CLIENTS, retain: 1000 },
    }),
    env: {},
    logger: pino({ level: 'warn' }, pino.destination(2)),
    version: 'bench',
  });
  try {
    const publishGateway = async (i: number): Promise<void> => {
      await service.gateway.events.publish(
        'ops.alert.bench' as never,
        { i, sentAt: now() } as never,
      );
    };
    // The baseline batches like the hub does: the frames of one turn in one write per client.
    let seq = 0;
    let pending: string[] = [];
    const flushRaw = (): void => {
      const chunk = pending.join('');
      pending = [];
      for (const res of open) res.write(chunk);
    };
    const publishRaw = (i: number): void => {
      seq += 1;
      const envelope = {
        id: String(seq),
        topic: 'ops.alert.bench',
        time: new Date().toISOString(),
        correlationId: String(seq),
        payload: { i, sentAt: now() },
      };
      if (pending.length === 0) setImmediate(flushRaw);
      pending.push(`id: ${seq}\ndata: ${JSON.stringify(envelope)}\n\n`);
    };
    note(`warm-up: ${CLIENTS} clients`);
    await run(`${service.url}/api/events?topics=ops.alert.>`, publishGateway);
    const gw: { eventsPerS: number; p50: number; p99: number }[] = [];
    const base: { eventsPerS: number; p50: number; p99: number }[] = [];
    for (let round = 0; round < 2; round += 1) {
      const g = await run(`${service.url}/api/events?topics=ops.alert.>`, publishGateway);
      note(
        `gateway: ${g.eventsPerS.toFixed(0)} events/s, p50 ${g.p50.toFixed(1)} ms, p99 ${g.p99.toFixed(1)} ms`,
      );
      gw.push(g);
      const r = await run(rawUrl, publishRaw);
      note(
        `raw: ${r.eventsPerS.toFixed(0)} events/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`,
      );
      base.push(r);
    }
    const best = (xs: { eventsPerS: number }[]): number => Math.max(...xs.map((x) => x.eventsPerS));
    const g = gw.reduce((a, b) => (a.eventsPerS >= b.eventsPerS ? a : b));
    report({
      bench: BENCH,
      metric: 'events_per_s',
      value: g.eventsPerS,
      unit: '1/s',
      target: '>=5000',
    });
    report({ bench: BENCH, metric: 'p99_ms', value: g.p99, unit: 'ms', target: '<=100' });
    report({ bench: BENCH, metric: 'p50_ms', value: g.p50, unit: 'ms' });
    report({ bench: BENCH, metric: 'frames_per_s', value: g.eventsPerS * CLIENTS, unit: '1/s' });
    report({ bench: BENCH, metric: 'raw_events_per_s', value: best(base), unit: '1/s' });
    report({ bench: BENCH, metric: 'events_ratio', value: best(gw) / best(base), unit: 'ratio' });
    report({
      bench: BENCH,
      metric: 'clients_cut',
      value: service.http.hub.stats().cut,
      unit: 'count',
      target: '0',
    });
  } finally {
    await service.close();
    raw.closeAllConnections();
    raw.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
