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

import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { report } from './report.js';
import { serveAgentProcess, startAgentProcess } from './support/agent-process.js';
import { startGatewayProcess } from './support/gateway-process.js';
import { SideCpu } from './support/process-cpu.js';
import { alternate, mediansOf, post } from './support/rounds.js';

const BENCH = 'streamed-wait';
const CONNECTIONS = 8;
const ROUND_SECONDS = 3;
const ROUNDS = 6;

if (process.argv.includes('--agent')) {
  serveAgentProcess(await startOpsAgent({ streaming: process.argv.includes('--streaming') }));
} else {
  await main();
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
    const load = (agent: string) => () =>
      post(
        {
          url: `${gateway.url}/api/dispatch?wait=30s`,
          body: JSON.stringify({ agent, skill: 'sitrep', text: 'status' }),
        },
        { connections: CONNECTIONS, seconds: ROUND_SECONDS },
      );
    // Both sides are the gateway's work: its CPU, counted per side's rounds.
    const pid = gateway.child.pid!;
    const cpu = new SideCpu({ sent: pid, streamed: pid });
    const rounds = await alternate(
      { sent: load('plain'), streamed: load('streamer') },
      cpu,
      ROUNDS,
    );
    const medians = mediansOf(rounds);
    const p50 = (side: keyof typeof rounds) => medians[side].p50;
    const rps = (side: keyof typeof rounds) => medians[side].perSecond;
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
