/**
 * dispatch-vs-sdk: `createFleetClient().call` with the four standard extensions active against the
 * raw SDK `client.sendMessage`, same loopback agent (its own process), same run, interleaved.
 *
 * - `throughput_ratio`: fleet calls/s ÷ SDK calls/s with `CONCURRENCY` calls in flight (≥ 0.95);
 * - `p50_ratio`: fleet p50 ÷ SDK p50 of one-at-a-time calls (≤ 1.05);
 * - `fleet_calls_per_s`, `sdk_calls_per_s`, `fleet_p50_us`, `sdk_p50_us`: the absolute figures.
 *
 * Rounds alternate which side goes first, after a warm-up of both. The agent is the example ops
 * agent with a fixed answer (a text part, a two-entry worldstate-delta part, a cost part), so both
 * sides receive exactly the same response.
 */
import { fileURLToPath } from 'node:url';

import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

import { createInMemoryEventBus } from '../src/bus/index.js';
import { type OpenTopics } from '../src/protocol/index.js';
import { createFleetClient, toSdkAgentCard } from '../src/dispatch/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../src/extensions/index.js';
import { OPS_DELTAS, opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import { note, percentile, report } from './report.js';
import { startAgentProcess } from './support/agent-process.js';
import { rawTextRequest } from './support/sdk-request.js';

const BENCH = 'dispatch-vs-sdk';
const SKILL = 'pr_review';
const CONCURRENCY = 8;
const ROUNDS = 40;
const CALLS_PER_ROUND = 150;
const LATENCY_PAIRS = 3_000;

if (process.argv.includes('--agent')) {
  // Child mode: serve the ops agent with a fixed answer, print its URL, live until stdin closes.
  const agent = await startOpsAgent({
    behaviour: () => opsBehaviour({ ...fixedCall(), skill: SKILL }),
  });
  process.stdout.write(`${JSON.stringify({ url: agent.url })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    void agent.close().then(() => process.exit(0));
  });
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

async function main(): Promise<void> {
  const agent = await startAgentProcess(fileURLToPath(import.meta.url));
  try {
    const cardResponse = await fetch(`${agent.url}/.well-known/agent-card.json`, {
      headers: { 'A2A-Version': '1.0' },
    });
    const card: unknown = await cardResponse.json();

    const bus = createInMemoryEventBus<OpenTopics>();
    const registry = registerStandardExtensions(new ExtensionRegistry(), { bus });
    const fleet = createFleetClient({
      registry,
      bus,
      cards: new Map([['ops', { url: agent.url, card }]]),
    });
    const sdk = await new ClientFactory({
      transports: [new JsonRpcTransportFactory()],
    }).createFromAgentCard(toSdkAgentCard(card, 'ops'));

    const fleetCall = async () => {
      const result = await fleet.call('ops', SKILL, 'go');
      if (!result.ok || result.activated.length !== 4) throw new Error('unexpected fleet result');
    };
    const sdkCall = async () => {
      const reply = await sdk.sendMessage(rawTextRequest('go'));
      if ('messageId' in reply) throw new Error('unexpected message reply');
    };

    note('warm-up');
    await timeCalls(fleetCall, 600, CONCURRENCY);
    await timeCalls(sdkCall, 600, CONCURRENCY);

    // Throughput: short batches, alternating which side goes first, so both see the same noise.
    let fleetMs = 0;
    let sdkMs = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      const sides: [() => Promise<void>, (ms: number) => void][] = [
        [fleetCall, (ms) => (fleetMs += ms)],
        [sdkCall, (ms) => (sdkMs += ms)],
      ];
      if (round % 2 === 1) sides.reverse();
      for (const [fn, add] of sides) add(await timeCalls(fn, CALLS_PER_ROUND, CONCURRENCY));
    }
    // Latency: one call at a time, fleet and SDK interleaved call by call.
    const fleetLatency: number[] = [];
    const sdkLatency: number[] = [];
    for (let pair = 0; pair < LATENCY_PAIRS; pair += 1) {
      const sides: [() => Promise<void>, number[]][] = [
        [fleetCall, fleetLatency],
        [sdkCall, sdkLatency],
      ];
      if (pair % 2 === 1) sides.reverse();
      for (const [fn, latencies] of sides) {
        const t0 = performance.now();
        await fn();
        latencies.push(performance.now() - t0);
      }
    }
    await bus.idle();
    const totalCalls = ROUNDS * CALLS_PER_ROUND;
    const fleetRate = totalCalls / (fleetMs / 1000);
    const sdkRate = totalCalls / (sdkMs / 1000);
    const fleetP50 = percentile(fleetLatency, 50);
    const sdkP50 = percentile(sdkLatency, 50);
    // Every fleet call publishes one world.state.delta and one cost.sample (warm-up included).
    const expectedEvents = 2 * (600 + totalCalls + LATENCY_PAIRS);
    const published = bus.stats().published;
    note(
      `fleet ${Math.round(fleetRate)}/s p50 ${(fleetP50 * 1000).toFixed(0)}µs; ` +
        `sdk ${Math.round(sdkRate)}/s p50 ${(sdkP50 * 1000).toFixed(0)}µs; ` +
        `events published ${published}/${expectedEvents} (deltas of ${OPS_DELTAS[SKILL]?.length} entries)`,
    );
    if (published !== expectedEvents) throw new Error('fleet calls did not publish every event');
    report({
      bench: BENCH,
      metric: 'throughput_ratio',
      value: fleetRate / sdkRate,
      unit: 'ratio',
      target: '>=0.95',
    });
    report({
      bench: BENCH,
      metric: 'p50_ratio',
      value: fleetP50 / sdkP50,
      unit: 'ratio',
      target: '<=1.05',
    });
    report({
      bench: BENCH,
      metric: 'fleet_calls_per_s',
      value: Math.round(fleetRate),
      unit: '1/s',
    });
    report({ bench: BENCH, metric: 'sdk_calls_per_s', value: Math.round(sdkRate), unit: '1/s' });
    report({
      bench: BENCH,
      metric: 'fleet_p50_us',
      value: Math.round(fleetP50 * 1000),
      unit: 'us',
    });
    report({ bench: BENCH, metric: 'sdk_p50_us', value: Math.round(sdkP50 * 1000), unit: 'us' });
    await bus.close();
  } finally {
    agent.stop();
  }
}
