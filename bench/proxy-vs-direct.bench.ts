/**
 * proxy-vs-direct: the unmodified `@a2a-js/sdk` client (`ClientFactory` from the card, JSON-RPC
 * v1.0, blocking `SendMessage`) calling an autonomous skill through the gateway's A2A proxy
 * (`fleetgate start` in its own process, `/a2a/ops`), against the same client calling the agent
 * (its own process) straight, in the same run: the same concurrency, alternating rounds after a
 * warm-up of each. Through the proxy each call also passes the policy gate, the stamps, the
 * durable proxy task, dispatch and task records, the terminal claim and the outbox.
 *
 * - `throughput_ratio`: proxied calls/s ÷ direct calls/s (≥ 0.85);
 * - `p50_ratio`: proxied p50 latency ÷ direct p50 latency (≤ 1.25);
 * - `forwarder_throughput_ratio`, `forwarder_p50_ratio`: the same client calling the agent through
 *   a bare forwarder process (`support/forwarder.ts`: bytes in, bytes out, nothing parsed or
 *   recorded) against the direct call — the ceiling of any process in the path on this machine,
 *   for reading the two ratios above;
 * - `proxy_calls_per_s`, `direct_calls_per_s`, `forwarder_calls_per_s`, `proxy_p50_ms`,
 *   `direct_p50_ms`, `forwarder_p50_ms`;
 * - `agent_cpu_ms_per_call` (the agent, in the direct rounds), `gateway_cpu_ms_per_call` and
 *   `forwarder_cpu_ms_per_call` (that process alone, in its rounds): where the cores go (Linux).
 * - `gateway_store_write_kib_per_call`: KiB the gateway process wrote to storage per proxied call (its SQLite
 *   store's log and checkpoints: the pages a call's commits write; Linux);
 * - `proxy_cpu_vs_agent`: the gateway's CPU per proxied call ÷ the agent's (≤ 1.5), and
 *   `p50_vs_forwarder`: proxied p50 ÷ the bare forwarder's p50 (≤ 1.5);
 * - `single_call_p50_ms_direct`, `_proxied`, `_forwarded` and `single_call_p50_vs_direct`: one call at a time, each
 *   after a pause (a client that calls now and then, as a conformance suite does: every call meets
 *   cold caches), proxied p50 ÷ direct p50.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';

import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { toSdkAgentCard } from '../src/dispatch/index.js';
import { bearerFetch, sdkClient, userMessage } from '../test/support/a2a-client.js';
import { percentile, report } from './report.js';
import { serveAgentProcess, startAgentProcess } from './support/agent-process.js';
import { startForwarderProcess } from './support/forwarder.js';
import { startGatewayProcess } from './support/gateway-process.js';
import { SideCpu } from './support/process-cpu.js';
import { alternate, mediansOf, type Round } from './support/rounds.js';

const BENCH = 'proxy-vs-direct';
const SKILL = 'sitrep';
const CONCURRENCY = 8;
const ROUND_MS = 3000;
const ROUNDS = 6;
/** Calls per side in the single-call rounds, and the pause before each. */
const SINGLE_CALLS = 40;
const SINGLE_PAUSE_MS = 25;

if (process.argv.includes('--agent')) {
  const agent = await startOpsAgent();
  serveAgentProcess(agent);
} else {
  await main();
}

/** `CONCURRENCY` callers, each sending one call after the other for `ms`. */
async function load(client: Client, ms: number): Promise<Round> {
  const latencies: number[] = [];
  const until = performance.now() + ms;
  const caller = async (): Promise<void> => {
    while (performance.now() < until) {
      const started = performance.now();
      await send(client);
      latencies.push(performance.now() - started);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, caller));
  const elapsed = performance.now() - t0;
  return {
    perSecond: (latencies.length * 1000) / elapsed,
    p50: percentile(latencies, 50),
    served: latencies.length,
    errors: 0,
  };
}

async function send(client: Client): Promise<void> {
  const reply = (await client.sendMessage({
    tenant: '',
    message: userMessage('status', { 'x-effect-domain-skill': SKILL }),
    configuration: undefined,
    metadata: undefined,
  })) as Task;
  if (reply.status?.state !== TaskState.TASK_STATE_COMPLETED) {
    throw new Error(`call ended ${reply.status?.state}`);
  }
}

/** Latencies of `SINGLE_CALLS` calls made one at a time, each after a pause. */
async function singles(client: Client): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < SINGLE_CALLS; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, SINGLE_PAUSE_MS));
    const started = performance.now();
    await send(client);
    latencies.push(performance.now() - started);
  }
  return latencies;
}

/**
 * The client `sdkClient` builds for the agent, its card's interfaces pointed at the forwarder (the
 * card the agent serves names the agent's own URL).
 */
async function forwardedClient(agentUrl: string, forwarderUrl: string): Promise<Client> {
  const response = await fetch(`${agentUrl}/.well-known/agent-card.json`, {
    headers: { 'A2A-Version': '1.0' },
  });
  const card = JSON.parse((await response.text()).replaceAll(agentUrl, forwarderUrl)) as unknown;
  const fetchImpl = bearerFetch(undefined);
  return new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    preferredTransports: ['JSONRPC'],
  }).createFromAgentCard(await toSdkAgentCard(card, 'ops'));
}

async function main(): Promise<void> {
  const agent = await startAgentProcess(fileURLToPath(import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-proxy-'));
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
    // The same client code, pointed at the agent or at the gateway's proxy of it.
    const direct = await sdkClient(agent.url, { transport: 'JSONRPC' });
    const proxied = await sdkClient(`${gateway.url}/a2a/ops`, { transport: 'JSONRPC' });
    const forwarded = await forwardedClient(agent.url, forwarder.url);
    const sides = { direct, proxied, forwarded };
    const names = Object.keys(sides) as (keyof typeof sides)[];
    const loaded = (client: Client) => () => load(client, ROUND_MS);
    // The process each side adds to the path (the agent's own, for the direct side), and its CPU.
    const cpu = new SideCpu({
      direct: agent.pid,
      proxied: gateway.child.pid!,
      forwarded: forwarder.pid,
    });
    const rounds = await alternate(
      { direct: loaded(direct), proxied: loaded(proxied), forwarded: loaded(forwarded) },
      cpu,
      ROUNDS,
    );
    // One call at a time, each side in turn, three times.
    const single: Record<keyof typeof sides, number[]> = { direct: [], proxied: [], forwarded: [] };
    for (let i = 0; i < 3; i += 1) {
      for (const side of names) single[side].push(...(await singles(sides[side])));
    }
    const medians = mediansOf(rounds);
    const { perSecond: proxyRate, p50: proxyP50 } = medians.proxied;
    const { perSecond: directRate, p50: directP50 } = medians.direct;
    const { perSecond: forwardedRate, p50: forwardedP50 } = medians.forwarded;
    report({
      bench: BENCH,
      metric: 'throughput_ratio',
      value: proxyRate / directRate,
      unit: 'ratio',
      target: '>=0.85',
    });
    report({
      bench: BENCH,
      metric: 'p50_ratio',
      value: proxyP50 / directP50,
      unit: 'ratio',
      target: '<=1.25',
    });
    report({
      bench: BENCH,
      metric: 'forwarder_throughput_ratio',
      value: forwardedRate / directRate,
      unit: 'ratio',
    });
    report({
      bench: BENCH,
      metric: 'forwarder_p50_ratio',
      value: forwardedP50 / directP50,
      unit: 'ratio',
    });
    report({ bench: BENCH, metric: 'proxy_calls_per_s', value: proxyRate, unit: '1/s' });
    report({ bench: BENCH, metric: 'direct_calls_per_s', value: directRate, unit: '1/s' });
    report({ bench: BENCH, metric: 'forwarder_calls_per_s', value: forwardedRate, unit: '1/s' });
    report({ bench: BENCH, metric: 'proxy_p50_ms', value: proxyP50, unit: 'ms' });
    report({ bench: BENCH, metric: 'direct_p50_ms', value: directP50, unit: 'ms' });
    report({ bench: BENCH, metric: 'forwarder_p50_ms', value: forwardedP50, unit: 'ms' });
    cpu.report(BENCH, {
      agent_cpu_ms_per_call: 'direct',
      gateway_cpu_ms_per_call: 'proxied',
      forwarder_cpu_ms_per_call: 'forwarded',
    });
    cpu.reportWrites(BENCH, 'gateway_store_write_kib_per_call', 'proxied');
    // The calls-room targets: the proxy's work per call against the agent's own, and its median
    // latency against a bare forwarder's (the network hop alone).
    const proxyCpu = cpu.perRequest('proxied');
    const agentCpu = cpu.perRequest('direct');
    if (proxyCpu !== undefined && agentCpu !== undefined) {
      report({
        bench: BENCH,
        metric: 'proxy_cpu_vs_agent',
        value: proxyCpu / agentCpu,
        unit: 'ratio',
        target: '<=1.5',
      });
    }
    report({
      bench: BENCH,
      metric: 'p50_vs_forwarder',
      value: proxyP50 / forwardedP50,
      unit: 'ratio',
      target: '<=1.5',
    });
    for (const side of names) {
      report({
        bench: BENCH,
        metric: `single_call_p50_ms_${side}`,
        value: percentile(single[side], 50),
        unit: 'ms',
      });
    }
    report({
      bench: BENCH,
      metric: 'single_call_p50_vs_direct',
      value: percentile(single.proxied, 50) / percentile(single.direct, 50),
      unit: 'ratio',
    });
  } finally {
    gateway.child.kill('SIGTERM');
    await new Promise((resolve) => gateway.child.once('exit', resolve));
    forwarder.stop();
    agent.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
