/**
 * streamed-wait: what it costs the gateway to learn a call's task id before the answer.
 * `POST /api/dispatch?wait=…` on a running `fleetgate start` (its own process) goes as
 * `SendMessage` to an agent that does not stream and as `SendStreamingMessage` to one that does
 * (the task named by the stream's first event; see `task-named`): the same skill of the same agent
 * code, each agent in its own process, loaded by autocannon with the same connections in
 * alternating rounds after a warm-up of each.
 *
 * - `streamed_cpu_vs_sent`: the gateway's CPU per streamed call ÷ per sent call (Linux);
 * - `streamed_p50_vs_sent`, `streamed_throughput_vs_sent`: latency and throughput, the same way;
 * - `sent_cpu_ms_per_request`, `streamed_cpu_ms_per_request`, `sent_p50_ms`, `streamed_p50_ms`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { note, report } from './report.js';
import { serveAgentProcess, startAgentProcess } from './support/agent-process.js';
import { startGatewayProcess } from './support/gateway-process.js';
import { SideCpu } from './support/process-cpu.js';

const BENCH = 'streamed-wait';
const CONNECTIONS = 8;
const ROUND_SECONDS = 3;
const ROUNDS = 6;

if (process.argv.includes('--agent')) {
  serveAgentProcess(await startOpsAgent({ streaming: process.argv.includes('--streaming') }));
} else {
  await main();
}

interface Round {
  requestsPerSecond: number;
  p50: number;
  errors: number;
}

async function load(url: string, agent: string): Promise<Round> {
  const result = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: ROUND_SECONDS,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent, skill: 'sitrep', text: 'status' }),
  });
  return {
    requestsPerSecond: result.requests.total / ROUND_SECONDS,
    p50: result.latency.p50,
    errors: result.errors + result.non2xx,
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const script = fileURLToPath(import.meta.url);
  const plain = await startAgentProcess(script);
  const streaming = await startAgentProcess(script, ['--streaming']);
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-streamed-'));
  const config = join(dir, 'fleetgate.yaml');
  writeFileSync(
    config,
    [
      'listen: { host: 127.0.0.1, port: 0 }',
      `store: sqlite:${join(dir, 'fleetgate.db')}`,
      `agents: [{ name: plain, url: ${plain.url} }, { name: streamer, url: ${streaming.url} }]`,
    ].join('\n'),
  );
  const gateway = await startGatewayProcess(config);
  try {
    const url = `${gateway.url}/api/dispatch?wait=30s`;
    const sides = { sent: 'plain', streamed: 'streamer' } as const;
    const names = Object.keys(sides) as (keyof typeof sides)[];
    note('warm-up');
    for (const side of names) await load(url, sides[side]);
    const rounds: Record<keyof typeof sides, Round[]> = { sent: [], streamed: [] };
    // Both sides are the gateway's work: its CPU, counted per side's rounds.
    const pid = gateway.child.pid!;
    const cpu = new SideCpu({ sent: pid, streamed: pid });
    for (let i = 0; i < ROUNDS; i += 1) {
      for (let k = 0; k < names.length; k += 1) {
        const side = names[(i + k) % names.length]!;
        const r = await cpu.round(
          side,
          () => load(url, sides[side]),
          (done) => done.requestsPerSecond * ROUND_SECONDS,
        );
        rounds[side].push(r);
        note(
          `round ${i + 1} ${side}: ${r.requestsPerSecond.toFixed(0)} req/s, p50 ${r.p50} ms, errors ${r.errors}`,
        );
      }
    }
    const errors = Object.values(rounds)
      .flat()
      .reduce((n, r) => n + r.errors, 0);
    if (errors > 0) throw new Error(`${errors} requests failed`);
    const p50 = (side: keyof typeof sides) => median(rounds[side].map((r) => r.p50));
    const rps = (side: keyof typeof sides) => median(rounds[side].map((r) => r.requestsPerSecond));
    const sentCpu = cpu.perRequest('sent');
    const streamedCpu = cpu.perRequest('streamed');
    if (sentCpu !== undefined && streamedCpu !== undefined) {
      report({
        bench: BENCH,
        metric: 'streamed_cpu_vs_sent',
        value: streamedCpu / sentCpu,
        unit: 'ratio',
      });
    }
    report({
      bench: BENCH,
      metric: 'streamed_p50_vs_sent',
      value: p50('streamed') / Math.max(p50('sent'), 0.001),
      unit: 'ratio',
    });
    report({
      bench: BENCH,
      metric: 'streamed_throughput_vs_sent',
      value: rps('streamed') / rps('sent'),
      unit: 'ratio',
    });
    cpu.report(BENCH, {
      sent_cpu_ms_per_request: 'sent',
      streamed_cpu_ms_per_request: 'streamed',
    });
    report({ bench: BENCH, metric: 'sent_p50_ms', value: p50('sent'), unit: 'ms' });
    report({ bench: BENCH, metric: 'streamed_p50_ms', value: p50('streamed'), unit: 'ms' });
  } finally {
    gateway.child.kill('SIGTERM');
    await new Promise((resolve) => gateway.child.once('exit', resolve));
    plain.stop();
    streaming.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
