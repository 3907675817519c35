/**
 * sse-fanout: one gateway (this process: `startService`, in-process bus) with `CLIENTS` live-event
 * clients on `GET /api/events?topics=ops.alert.>`. Events are published on the gateway's bus at a
 * steady offered rate (a few every millisecond), `EVENTS` per run, at each rate of `RATES`; a run
 * ends when every client has received every event.
 *
 * - `events_per_s`: events published and delivered to all clients, per second, from the first
 *   publish to the moment the last client had the last event — the best of the offered rates
 *   (≥ 5,000);
 * - `p99_ms`: publish-to-client latency at the offered rate of 5,000 events/s, 99th percentile over
 *   the sampled clients' every event (≤ 100); `p50_ms` likewise;
 * - `frames_per_s` (events × clients per second), `clients_cut` (must be 0);
 * - baseline in the same run: the same publisher and the same clients against a bare Node HTTP
 *   server writing the same frames, batched and written the same way (`raw_events_per_s`,
 *   `events_ratio`).
 *
 * The clients run in `CLIENT_PROCESSES` other processes (one connection each), so that reading
 * a million frames a second is not this process's work and the clients can use the other core.
 * Each client is a plain HTTP/1.1 request on its own TCP connection; it checks the `200` status
 * line and counts every `data:` frame it receives (an event is one frame). The `SAMPLED` clients
 * also parse every frame: each must carry the next event in publish order (none lost, repeated or
 * reordered), and its latency is recorded. A run only counts once every one of the `CLIENTS`
 * clients has counted all `EVENTS` frames.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';

import { parseConfig, startService } from '../src/service/index.js';
import { note, percentile, report } from './report.js';

const BENCH = 'sse-fanout';
const CLIENTS = 1000;
const CLIENT_PROCESSES = 2;
/** Events per run. */
const EVENTS = 3000;
/** Offered rates, events per second; the first is the one latency is reported at. */
const RATES = [5000, 10_000, 20_000] as const;
/** Clients whose every frame is parsed and checked, and whose latencies are recorded. */
const SAMPLED = 50;
/** A run that has not delivered everything by then fails. */
const RUN_TIMEOUT_MS = 120_000;

const now = (): number => performance.timeOrigin + performance.now();

const DATA = 'data: ';

/** How many of the last characters of `text` could begin a `data: ` that the next read ends. */
function openPrefix(text: string): number {
  for (let k = DATA.length - 1; k > 0; k -= 1) if (text.endsWith(DATA.slice(0, k))) return k;
  return 0;
}

if (process.argv.includes('--clients')) {
  const arg = (name: string): string => process.argv[process.argv.indexOf(name) + 1]!;
  await clients(arg('--clients'), Number(arg('--count')), Number(arg('--sampled')));
} else {
  await main();
}

interface ClientsResult {
  done: boolean;
  lastAt: number;
  latencies: number[];
  cpuMs: number;
  problem?: string;
}

/**
 * Child mode: `count` connections to `url`, the first `sampled` of them checked frame by frame;
 * prints `{ ready }` once every one is streaming, then `{ done, lastAt, latencies, cpuMs }` once
 * every one of them has EVENTS event frames (or `done: false` and the problem).
 */
async function clients(url: string, count: number, sampled: number): Promise<void> {
  const target = new URL(url);
  const request = `GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nAccept: text/event-stream\r\n\r\n`;
  const latencies: number[] = [];
  let complete = 0;
  let finished = false;
  /** CPU used before the run (startup, connecting) is not the run's. */
  let cpuAtReady = process.cpuUsage();
  const finish = (result: Omit<ClientsResult, 'cpuMs'>): void => {
    if (finished) return;
    finished = true;
    const cpu = process.cpuUsage(cpuAtReady);
    process.stdout.write(
      `${JSON.stringify({ ...result, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`,
      () => process.exit(result.done ? 0 : 1),
    );
  };
  const fail = (problem: string): void => finish({ done: false, lastAt: 0, latencies, problem });
  const open = (index: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const checked = index < sampled;
      let frames = 0;
      let streaming = false;
      // The end of the previous read that may begin a `data: ` (counted once the read ends it).
      let carry = '';
      // Sampled clients: text not yet cut into whole frames, and the event expected next.
      let rest = '';
      let expected = 0;
      const socket = connect(Number(target.port), target.hostname, () => socket.write(request));
      socket.on('error', reject);
      socket.on('close', () => {
        if (frames < EVENTS) fail(`client ${index} was disconnected after ${frames} events`);
      });
      socket.on('data', (chunk: Buffer) => {
        const read = chunk.toString('latin1');
        if (!streaming) {
          if (!read.startsWith('HTTP/1.1 200 '))
            return fail(`client ${index}: ${read.slice(0, 40)}`);
          streaming = true;
          resolve();
        }
        const text = carry + read;
        const before = frames;
        for (let at = text.indexOf(DATA); at >= 0; at = text.indexOf(DATA, at + DATA.length)) {
          frames += 1;
        }
        carry = text.slice(text.length - openPrefix(text));
        if (checked) {
          rest += read;
          for (let end = rest.indexOf('\n\n'); end >= 0; end = rest.indexOf('\n\n')) {
            const event = /"i":(\d+),"sentAt":([0-9.]+)/.exec(rest.slice(0, end));
            rest = rest.slice(end + 2);
            if (event === null) continue;
            if (Number(event[1]) !== expected) {
              return fail(`client ${index} got event ${event[1]} where ${expected} was next`);
            }
            expected += 1;
            latencies.push(now() - Number(event[2]));
          }
        }
        if (before < EVENTS && frames >= EVENTS) {
          complete += 1;
          if (complete === count) finish({ done: true, lastAt: now(), latencies });
        }
      });
    });
  await Promise.all(Array.from({ length: count }, (_, i) => open(i)));
  cpuAtReady = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  setTimeout(() => fail(`${complete} of ${count} clients complete`), RUN_TIMEOUT_MS).unref();
}

/** One run's outcome. */
interface Run {
  eventsPerS: number;
  p50: number;
  p99: number;
  /** CPU the client processes used, as a share of one core over the run. */
  clientsCpu: number;
  /** CPU this process (the server and the publisher) used, as a share of one core. */
  serverCpu: number;
}

/**
 * Starts the client processes against `url`, then publishes EVENTS events at `rate` per second
 * through `publish` (a few per timer tick), and waits until every client has every event.
 */
async function run(
  url: string,
  rate: number,
  publish: (i: number) => Promise<void> | undefined,
): Promise<Run> {
  const children = Array.from({ length: CLIENT_PROCESSES }, (_, p) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(import.meta.url),
        '--clients',
        url,
        '--count',
        String(CLIENTS / CLIENT_PROCESSES),
        '--sampled',
        String(p === 0 ? SAMPLED : 0),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: child.stdout });
    const next = (): Promise<Record<string, unknown>> =>
      new Promise((resolve, reject) => {
        lines.once('line', (l) => resolve(JSON.parse(l) as Record<string, unknown>));
        child.once('exit', (code) => reject(new Error(`client process exited with ${code}`)));
      });
    return { child, next };
  });
  await Promise.all(children.map((c) => c.next())); // ready
  await new Promise((resolve) => setTimeout(resolve, 300));
  const results = Promise.all(children.map((c) => c.next()));
  const cpuAtStart = process.cpuUsage();
  const started = now();
  for (let i = 0; i < EVENTS;) {
    const due = Math.min(EVENTS, Math.floor(((now() - started) * rate) / 1000) + 1);
    const batch: Promise<void>[] = [];
    for (; i < due; i += 1) {
      const published = publish(i);
      if (published !== undefined) batch.push(published);
    }
    if (batch.length > 0) await Promise.all(batch);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const outcome = (await results) as unknown as ClientsResult[];
  const serverCpu = process.cpuUsage(cpuAtStart);
  const failed = outcome.find((r) => !r.done);
  if (failed !== undefined) throw new Error(`not every client got every event: ${failed.problem}`);
  const lastAt = Math.max(...outcome.map((r) => r.lastAt));
  const latencies = outcome.flatMap((r) => r.latencies);
  if (latencies.length !== SAMPLED * EVENTS) {
    throw new Error(`${latencies.length} latencies sampled, ${SAMPLED * EVENTS} expected`);
  }
  const seconds = (lastAt - started) / 1000;
  return {
    eventsPerS: EVENTS / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    clientsCpu: outcome.reduce((sum, r) => sum + r.cpuMs, 0) / 1000 / seconds,
    serverCpu: (serverCpu.user + serverCpu.system) / 1e6 / seconds,
  };
}

/**
 * The baseline: a bare server that frames each event as the hub does and writes the frames of a
 * flush to every open stream as one shared HTTP/1.1 chunk, one socket write each, flushing on the
 * hub's schedule (the next turn of the loop, or as long after the last flush as it took).
 */
async function startRawServer(): Promise<{
  url: string;
  publish: (i: number) => undefined;
  close: () => void;
}> {
  const open = new Set<Socket>();
  const server = createServer((_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    res.write('retry: 2000\n\n'); // sends the headers, as the gateway does
    const socket = res.socket!;
    open.add(socket);
    res.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Frames of the gateway's size: a position of `<boot>-<n>`, and event and correlation ids as the
  // bus makes them.
  const boot = randomBytes(4).toString('hex');
  const prefix = randomUUID();
  let seq = 0;
  let pending: Buffer[] = [];
  let scheduled = false;
  let lastEnd = 0;
  let lastCost = 0;
  const flush = (): void => {
    scheduled = false;
    const start = performance.now();
    const data = Buffer.concat(pending);
    pending = [];
    const chunk = Buffer.concat([
      Buffer.from(`${data.length.toString(16)}\r\n`),
      data,
      Buffer.from('\r\n'),
    ]);
    for (const socket of open) socket.write(chunk);
    lastEnd = performance.now();
    lastCost = lastEnd - start;
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    publish(i) {
      seq += 1;
      const envelope = {
        id: `${prefix}-${seq}`,
        topic: 'ops.alert.bench',
        time: new Date().toISOString(),
        correlationId: `${prefix}-${seq}`,
        payload: { i, sentAt: now() },
      };
      pending.push(Buffer.from(`id: ${boot}-${seq}\ndata: ${JSON.stringify(envelope)}\n\n`));
      if (scheduled) return;
      scheduled = true;
      const wait = Math.min(20, lastEnd + lastCost - performance.now());
      if (wait <= 0) setImmediate(flush);
      else setTimeout(flush, wait);
    },
    close() {
      for (const socket of open) socket.destroy();
      server.close();
    },
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-sse-'));
  const raw = await startRawServer();
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
  const gatewayUrl = `${service.url}/api/events?topics=ops.alert.>`;
  try {
    const publishGateway = (i: number): Promise<void> =>
      service.gateway.events
        .publish('ops.alert.bench' as never, { i, sentAt: now() } as never)
        .then(() => undefined);
    note(`warm-up: ${CLIENTS} clients in ${CLIENT_PROCESSES} processes, ${EVENTS} events`);
    await run(gatewayUrl, RATES[0], publishGateway);
    const gw = new Map<number, Run>();
    const base = new Map<number, Run>();
    for (const [k, rate] of RATES.entries()) {
      // Alternate which side goes first.
      for (const side of k % 2 === 0 ? (['gw', 'raw'] as const) : (['raw', 'gw'] as const)) {
        const r =
          side === 'gw'
            ? await run(gatewayUrl, rate, publishGateway)
            : await run(raw.url, rate, raw.publish);
        (side === 'gw' ? gw : base).set(rate, r);
        note(
          `${side === 'gw' ? 'gateway' : 'raw'} at ${rate}/s offered: ${r.eventsPerS.toFixed(0)} events/s delivered to all, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, CPU: server ${(r.serverCpu * 100).toFixed(0)}%, clients ${(r.clientsCpu * 100).toFixed(0)}% of a core`,
        );
      }
    }
    const best = (runs: Map<number, Run>): number =>
      Math.max(...[...runs.values()].map((r) => r.eventsPerS));
    const atTarget = gw.get(RATES[0])!;
    report({
      bench: BENCH,
      metric: 'events_per_s',
      value: best(gw),
      unit: '1/s',
      target: '>=5000',
    });
    report({ bench: BENCH, metric: 'p99_ms', value: atTarget.p99, unit: 'ms', target: '<=100' });
    report({ bench: BENCH, metric: 'p50_ms', value: atTarget.p50, unit: 'ms' });
    report({ bench: BENCH, metric: 'frames_per_s', value: best(gw) * CLIENTS, unit: '1/s' });
    report({ bench: BENCH, metric: 'raw_events_per_s', value: best(base), unit: '1/s' });
    report({ bench: BENCH, metric: 'raw_p99_ms', value: base.get(RATES[0])!.p99, unit: 'ms' });
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
    raw.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
