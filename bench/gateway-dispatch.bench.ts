/**
 * gateway-dispatch: `POST /api/dispatch?wait=…` on a running `fleetgate start` (its own process)
 * for an autonomous skill, against the raw A2A call to the same agent (its own process), both
 * loaded by autocannon from this process with the same connections, in alternating rounds after a
 * warm-up of each.
 *
 * The raw call is the JSON-RPC `SendMessage` a caller of the agent sends (v1.0 wire, one text
 * part, the skill in the request metadata); the gateway call is the same skill dispatched through
 * the policy gate, the extension chain, the durable dispatch and task records and the outbox.
 *
 * - `throughput_ratio`: gateway requests/s ÷ raw requests/s (≥ 0.8);
 * - `p50_ratio`: gateway p50 latency ÷ raw p50 latency (≤ 1.3);
 * - `forwarder_throughput_ratio`, `forwarder_p50_ratio`: the same raw call through a bare
 *   forwarder process (`support/forwarder.ts`: bytes in, bytes out, nothing parsed or recorded)
 *   against the raw call — the ceiling of any process in the path on this machine, for reading the
 *   two ratios above (the load generator, the agent and whatever is in between share its cores);
 * - `gateway_requests_per_s`, `raw_requests_per_s`, `forwarder_requests_per_s`, `gateway_p50_ms`,
 *   `raw_p50_ms`, `forwarder_p50_ms`;
 * - `agent_cpu_ms_per_request` (the agent, in the raw rounds), `gateway_cpu_ms_per_request` and
 *   `forwarder_cpu_ms_per_request` (that process alone, in its rounds): where the cores go (Linux).
 * - `gateway_store_write_kib_per_request`: KiB the gateway process wrote to storage per request (its SQLite
 *   store's log and checkpoints: the pages a call's commits write; Linux);
 * - `gateway_cpu_vs_agent`: the gateway's CPU per request ÷ the agent's (≤ 1.0), and
 *   `throughput_vs_forwarder`: gateway requests/s ÷ the bare forwarder's (≥ 0.8).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { report } from './report.js';
import { serveAgentProcess, startAgentProcess } from './support/agent-process.js';
import { startForwarderProcess } from './support/forwarder.js';
import { startGatewayProcess } from './support/gateway-process.js';
import { SideCpu } from './support/process-cpu.js';
import { alternate, mediansOf, post, type PostTarget } from './support/rounds.js';

const BENCH = 'gateway-dispatch';
const SKILL = 'sitrep';
const CONNECTIONS = 8;
const ROUND_SECONDS = 3;
const ROUNDS = 6;

if (process.argv.includes('--agent')) {
  const agent = await startOpsAgent();
  serveAgentProcess(agent);
} else {
  await main();
}

async function main(): Promise<void> {
  const agent = await startAgentProcess(fileURLToPath(import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-gw-'));
  const config = join(dir, 'fleetgate.yaml');
  writeFileSync(
    config,
    [
      'listen: { host: 127.0.0.1, port: 0 }',
      `store: sqlite:${join(dir, 'fleetgate.db')}`,
      `agents: [{ name: ops, url: ${agent.url} }]`,
    ].join('\n'),
  );
  const gateway = await startGatewayProcess(config);
  const forwarder = await startForwarderProcess(agent.url);
  try {
    const raw = {
      url: `${agent.url}/a2a/jsonrpc`,
      headers: { 'a2a-version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: 'bench', role: 'ROLE_USER', parts: [{ text: 'status' }] },
          metadata: { 'x-effect-domain-skill': SKILL },
        },
      }),
    };
    const forwarded = { ...raw, url: `${forwarder.url}/a2a/jsonrpc` };
    const gw = {
      url: `${gateway.url}/api/dispatch?wait=30s`,
      body: JSON.stringify({ agent: 'ops', skill: SKILL, text: 'status' }),
    };
    const load = (target: PostTarget) => () =>
      post(target, { connections: CONNECTIONS, seconds: ROUND_SECONDS });
    // The process each side adds to the path (the agent's own, for the raw side), and its CPU.
    const cpu = new SideCpu({ raw: agent.pid, gw: gateway.child.pid!, forwarded: forwarder.pid });
    const rounds = await alternate(
      { raw: load(raw), gw: load(gw), forwarded: load(forwarded) },
      cpu,
      ROUNDS,
    );
    const medians = mediansOf(rounds);
    const { perSecond: gwRps, p50: gwP50 } = medians.gw;
    const { perSecond: rawRps, p50: rawP50 } = medians.raw;
    const { perSecond: fwRps, p50: fwP50 } = medians.forwarded;
    const p50Ratio = (p50: number) => p50 / Math.max(rawP50, 0.001);
    report({
      bench: BENCH,
      metric: 'throughput_ratio',
      value: gwRps / rawRps,
      unit: 'ratio',
      target: '>=0.8',
    });
    report({
      bench: BENCH,
      metric: 'p50_ratio',
      value: p50Ratio(gwP50),
      unit: 'ratio',
      target: '<=1.3',
    });
    report({
      bench: BENCH,
      metric: 'forwarder_throughput_ratio',
      value: fwRps / rawRps,
      unit: 'ratio',
    });
    report({ bench: BENCH, metric: 'forwarder_p50_ratio', value: p50Ratio(fwP50), unit: 'ratio' });
    report({ bench: BENCH, metric: 'gateway_requests_per_s', value: gwRps, unit: '1/s' });
    report({ bench: BENCH, metric: 'raw_requests_per_s', value: rawRps, unit: '1/s' });
    report({ bench: BENCH, metric: 'forwarder_requests_per_s', value: fwRps, unit: '1/s' });
    report({ bench: BENCH, metric: 'gateway_p50_ms', value: gwP50, unit: 'ms' });
    report({ bench: BENCH, metric: 'raw_p50_ms', value: rawP50, unit: 'ms' });
    report({ bench: BENCH, metric: 'forwarder_p50_ms', value: fwP50, unit: 'ms' });
    cpu.report(BENCH, {
      agent_cpu_ms_per_request: 'raw',
      gateway_cpu_ms_per_request: 'gw',
      forwarder_cpu_ms_per_request: 'forwarded',
    });
    cpu.reportWrites(BENCH, 'gateway_store_write_kib_per_request', 'gw');
    // The calls-room targets: the gateway's work per call against the agent's own, and its
    // throughput against a bare forwarder's (the network hop alone).
    const gwCpu = cpu.perRequest('gw');
    const agentCpu = cpu.perRequest('raw');
    if (gwCpu !== undefined && agentCpu !== undefined) {
      report({
        bench: BENCH,
        metric: 'gateway_cpu_vs_agent',
        value: gwCpu / agentCpu,
        unit: 'ratio',
        target: '<=1.0',
      });
    }
    report({
      bench: BENCH,
      metric: 'throughput_vs_forwarder',
      value: gwRps / fwRps,
      unit: 'ratio',
      target: '>=0.8',
    });
  } finally {
    gateway.child.kill('SIGTERM');
    await new Promise((resolve) => gateway.child.once('exit', resolve));
    forwarder.stop();
    agent.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
