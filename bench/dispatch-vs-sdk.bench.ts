/**
 * dispatch-vs-sdk: the fleet call (the four standard extensions active) against the raw SDK
 * `client.sendMessage`, same loopback agent (its own process), same run, interleaved.
 *
 * The baseline is what the protocol asks of any caller of this agent: the raw SDK call carrying
 * the same `A2A-Extensions` header and the same request-metadata stamps the fleet call sends (on
 * the wire the two requests are the same). A raw call with neither is measured too, for context.
 * The raw calls use the SDK's default transport (the global `fetch`); the fleet call uses what the
 * gateway ships with (the SDK's transport over `node:http`, `src/net/exchange.ts`).
 *
 * - `throughput_ratio`: fleet calls/s ÷ stamped SDK calls/s, `CONCURRENCY` calls in flight (≥ 0.95);
 * - `p50_ratio`: fleet p50 ÷ stamped SDK p50 of one-at-a-time calls (≤ 1.05);
 * - `unadorned_throughput_ratio`, `unadorned_p50_ratio`: the same against the raw call without
 *   header and stamps (informational: the protocol's own cost is in it);
 * - `fleet_settle_p50_us`: p50 of the one-at-a-time fleet calls' settle (`timing.afterMs`: the
 *   `after` hooks and the durable claim, committed with the task's events before the call returns);
 *   `p50_ratio_besides_settle`: p50 of each call's latency less its settle ÷ stamped SDK p50 — what
 *   the fleet call costs beside the exactly-once commit (informational);
 * - `fleet_calls_per_s`, `sdk_calls_per_s`, `unadorned_sdk_calls_per_s`, `fleet_p50_us`,
 *   `sdk_p50_us`, `unadorned_sdk_p50_us`: the absolute figures.
 * - `fleet_cpu_us_per_call`, `sdk_cpu_us_per_call`: CPU time of this process per call in the
 *   throughput rounds (user + system, every thread: the fleet side's includes what its calls set
 *   going — the relay, the world materialiser, the SQLite checkpointer — each fleet round waits for
 *   that to finish before the CPU is read, outside the timed window); `agent_cpu_us_per_call`:
 *   the agent process's, in the stamped rounds (Linux only); `cpu_bound_throughput_ratio`: the
 *   throughput ratio these predict when the agent and this process keep the machine's cores busy,
 *   (SDK + agent) ÷ (fleet + agent) — read `throughput_ratio` against it (informational).
 * - `cpu_ratio`: `fleet_cpu_us_per_call` ÷ `sdk_cpu_us_per_call` (≤ 1.15).
 *
 * Rounds rotate which side goes first, after a warm-up of every side. The agent is the example ops
 * agent with a fixed answer (a text part, a two-entry worldstate-delta part, a cost part), so every
 * side receives exactly the same response. The fleet side is one function ({@link fleetSide}).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Extensions, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

import { toSdkAgentCard } from '../src/dispatch/index.js';
import { createGateway } from '../src/service/index.js';
import { OPS_DELTAS, opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import { note, percentile, report } from './report.js';
import { serveAgentProcess, startAgentProcess } from './support/agent-process.js';
import { SideCpu } from './support/process-cpu.js';
import { rawTextRequest } from './support/sdk-request.js';

const BENCH = 'dispatch-vs-sdk';
const SKILL = 'pr_review';
const CONCURRENCY = 8;
/**
 * Throughput rounds per side, and calls per round. A round is long enough for its steady state to
 * outweigh its edges: each round starts cold (the other sides just ran) with eight calls at once
 * and ends draining them, and over 150 calls these edges took 5–7 % of a round's time, so the
 * figures measured the edges as much as the sides.
 */
const ROUNDS = 12;
const CALLS_PER_ROUND = 1_000;
/** Rounds of one-at-a-time calls, one call of each side per round. */
const LATENCY_ROUNDS = 3_000;

if (process.argv.includes('--agent')) {
  // Child mode: serve the ops agent with a fixed answer, print its URL, live until stdin closes.
  const agent = await startOpsAgent({
    behaviour: () => opsBehaviour({ ...fixedCall(), skill: SKILL }),
  });
  serveAgentProcess(agent);
} else {
  await main();
}

function fixedCall() {
  return {
    headers: {},
    requestedExtensions: [],
    metadata: {},
    text: '',
    skill: SKILL,
    requestedVersion: '1.0',
    taskId: '',
  };
}

async function timeCalls(
  fn: () => Promise<void>,
  calls: number,
  concurrency: number,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < calls) {
      next += 1;
      await fn();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return performance.now() - started;
}

/** One side of the comparison: a call to make, and whether it was checked. */
type Call = () => Promise<void>;

/**
 * The fleet side: a gateway built by `createGateway` (SQLite file, in-process bus) with the agent
 * configured; a call of `SKILL` through `gateway.call`, out — with what it sent (extensions and
 * stamps), so the baseline can send the same.
 */
async function fleetSide(agentUrl: string): Promise<FleetSide> {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-'));
  const gateway = await createGateway({
    store: `sqlite:${join(dir, 'bench.db')}`,
    agents: [{ name: 'ops', url: agentUrl }],
  });
  let deltas = 0;
  await gateway.events.subscribe('world.state.delta', () => void (deltas += 1), {
    name: 'bench-deltas',
  });
  const first = await gateway.call('ops', SKILL, 'go');
  const settleMs: number[] = [];
  const call = async () => {
    const result = await gateway.call('ops', SKILL, 'go');
    if (!result.ok || result.activated.length !== 4) throw new Error('unexpected fleet result');
    settleMs.push(result.timing.afterMs);
  };
  return {
    call,
    settleMs,
    activated: first.activated,
    stamps: first.stamps,
    deltas: async () => {
      await gateway.settle();
      return deltas;
    },
    settle: () => gateway.settle(),
    close: async () => {
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface FleetSide {
  call: Call;
  /** The settle (`timing.afterMs`) of each fleet call, in order. */
  settleMs: number[];
  activated: string[];
  stamps: Record<string, string>;
  /** World-state delta events published so far, once the outbox is flushed. */
  deltas(): Promise<number>;
  /** Waits until what the calls so far set going (outbox, subscribers) is done. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

async function main(): Promise<void> {
  const agent = await startAgentProcess(fileURLToPath(import.meta.url));
  try {
    const cardResponse = await fetch(`${agent.url}/.well-known/agent-card.json`, {
      headers: { 'A2A-Version': '1.0' },
    });
    const card: unknown = await cardResponse.json();

    const fleet = await fleetSide(agent.url);
    const sdk = await new ClientFactory({
      transports: [new JsonRpcTransportFactory()],
    }).createFromAgentCard(await toSdkAgentCard(card, 'ops'));

    // What the protocol requires of any caller: the extensions header and the stamps.
    const serviceParameters = {
      [HTTP_EXTENSION_HEADER]: Extensions.toServiceParameter(fleet.activated),
    };
    const stamps = fleet.stamps;
    if (Object.keys(stamps).length !== 5) throw new Error('expected five stamps');
    const stampedCall: Call = async () => {
      const request = rawTextRequest('go');
      request.metadata = { ...stamps };
      const reply = await sdk.sendMessage(request, { serviceParameters });
      if ('messageId' in reply) throw new Error('unexpected message reply');
    };
    const plainCall: Call = async () => {
      const reply = await sdk.sendMessage(rawTextRequest('go'));
      if ('messageId' in reply) throw new Error('unexpected message reply');
    };
    const sides: Side[] = [
      { name: 'fleet', call: fleet.call, ms: 0, latency: [], cpuUs: 0 },
      { name: 'stamped', call: stampedCall, ms: 0, latency: [], cpuUs: 0 },
      { name: 'plain', call: plainCall, ms: 0, latency: [], cpuUs: 0 },
    ];
    // The agent's CPU in each side's rounds (one process serves every side).
    const agentCpu = new SideCpu({ fleet: agent.pid, stamped: agent.pid, plain: agent.pid });

    note('warm-up');
    for (const side of sides) await timeCalls(side.call, 600, CONCURRENCY);

    // Throughput: short batches, rotating which side goes first, so all see the same noise.
    for (let round = 0; round < ROUNDS; round += 1) {
      for (let k = 0; k < sides.length; k += 1) {
        const side = sides[(round + k) % sides.length]!;
        const cpu = process.cpuUsage();
        side.ms += await agentCpu.round(
          side.name,
          async () => {
            const ms = await timeCalls(side.call, CALLS_PER_ROUND, CONCURRENCY);
            // The fleet round's work still running (relay, materialiser) is its own, not the next
            // side's: waited for outside the timed window, inside the CPU readings.
            if (side.name === 'fleet') await fleet.settle();
            return ms;
          },
          () => CALLS_PER_ROUND,
        );
        const used = process.cpuUsage(cpu);
        side.cpuUs += used.user + used.system;
      }
    }
    // Latency: one call at a time, the sides interleaved call by call.
    fleet.settleMs.length = 0;
    for (let i = 0; i < LATENCY_ROUNDS; i += 1) {
      for (let k = 0; k < sides.length; k += 1) {
        const side = sides[(i + k) % sides.length]!;
        const t0 = performance.now();
        await side.call();
        side.latency.push(performance.now() - t0);
      }
    }
    const totalCalls = ROUNDS * CALLS_PER_ROUND;
    const [fleetFig, stampedFig, plainFig] = sides.map((side) => ({
      rate: totalCalls / (side.ms / 1000),
      p50: percentile(side.latency, 50),
    })) as [Figures, Figures, Figures];
    // Every fleet call publishes one world.state.delta (warm-up included).
    const expectedEvents = 1 + 600 + totalCalls + LATENCY_ROUNDS;
    const published = await fleet.deltas();
    note(
      `fleet ${Math.round(fleetFig.rate)}/s p50 ${(fleetFig.p50 * 1000).toFixed(0)}µs; ` +
        `stamped sdk ${Math.round(stampedFig.rate)}/s p50 ${(stampedFig.p50 * 1000).toFixed(0)}µs; ` +
        `plain sdk ${Math.round(plainFig.rate)}/s p50 ${(plainFig.p50 * 1000).toFixed(0)}µs; ` +
        `events published ${published}/${expectedEvents} (deltas of ${OPS_DELTAS[SKILL]?.length} entries)`,
    );
    if (published !== expectedEvents) throw new Error('fleet calls did not publish every event');
    const ratio = (metric: string, value: number, target?: string) =>
      report({
        bench: BENCH,
        metric,
        value,
        unit: 'ratio',
        ...(target === undefined ? {} : { target }),
      });
    ratio('throughput_ratio', fleetFig.rate / stampedFig.rate, '>=0.95');
    ratio('p50_ratio', fleetFig.p50 / stampedFig.p50, '<=1.05');
    ratio('unadorned_throughput_ratio', fleetFig.rate / plainFig.rate);
    ratio('unadorned_p50_ratio', fleetFig.p50 / plainFig.p50);
    const perSecond = (metric: string, f: Figures) =>
      report({ bench: BENCH, metric, value: Math.round(f.rate), unit: '1/s' });
    perSecond('fleet_calls_per_s', fleetFig);
    perSecond('sdk_calls_per_s', stampedFig);
    perSecond('unadorned_sdk_calls_per_s', plainFig);
    const micros = (metric: string, f: Figures) =>
      report({ bench: BENCH, metric, value: Math.round(f.p50 * 1000), unit: 'us' });
    micros('fleet_p50_us', fleetFig);
    micros('sdk_p50_us', stampedFig);
    micros('unadorned_sdk_p50_us', plainFig);
    // The fleet side's latencies and settles, call by call (the first side of the list).
    const fleetLatency = sides[0]!.latency;
    const settles = fleet.settleMs;
    if (settles.length !== fleetLatency.length) throw new Error('a fleet call was not timed');
    report({
      bench: BENCH,
      metric: 'fleet_settle_p50_us',
      value: Math.round(percentile(settles, 50) * 1000),
      unit: 'us',
    });
    ratio(
      'p50_ratio_besides_settle',
      percentile(
        fleetLatency.map((ms, i) => ms - settles[i]!),
        50,
      ) / stampedFig.p50,
    );
    const perCall = (total: number) => total / totalCalls;
    const fleetCpu = perCall(sides[0]!.cpuUs);
    const sdkCpu = perCall(sides[1]!.cpuUs);
    const agentMs = agentCpu.perRequest('stamped');
    const cpuFigure = (metric: string, value: number) =>
      report({ bench: BENCH, metric, value: Math.round(value), unit: 'us' });
    cpuFigure('fleet_cpu_us_per_call', fleetCpu);
    cpuFigure('sdk_cpu_us_per_call', sdkCpu);
    report({
      bench: BENCH,
      metric: 'cpu_ratio',
      value: fleetCpu / sdkCpu,
      unit: 'ratio',
      target: '<=1.15',
    });
    if (agentMs === undefined) note('no /proc here: the agent process CPU figures are left out');
    else {
      const agentUs = agentMs * 1000;
      cpuFigure('agent_cpu_us_per_call', agentUs);
      ratio('cpu_bound_throughput_ratio', (sdkCpu + agentUs) / (fleetCpu + agentUs));
    }
    await fleet.close();
  } finally {
    agent.stop();
  }
}

/** One side of the comparison and what its rounds measured. */
interface Side {
  name: 'fleet' | 'stamped' | 'plain';
  call: Call;
  /** Wall time of its throughput rounds, in ms. */
  ms: number;
  latency: number[];
  /** CPU of this process in its throughput rounds, in µs. */
  cpuUs: number;
}

interface Figures {
  rate: number;
  p50: number;
}
