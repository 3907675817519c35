/**
 * The demo fleet: starts the four example agents on 127.0.0.1 and calls each once through a fleet
 * client with the four standard extensions, printing what went over the wire and what was
 * published. Run with `npx tsx examples/demo-fleet.ts` (add `--serve` to keep the agents running).
 */
import { pathToFileURL } from 'node:url';

import { createInMemoryEventBus, type OpenTopics } from '../src/bus/index.js';
import { createFleetClient, type FleetAgent } from '../src/dispatch/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../src/extensions/index.js';
import {
  startLegacyAgent,
  startOpsAgent,
  startPlainAgent,
  startStreamingAgent,
  type RunningAgent,
} from './agents/index.js';

/** Starts the demo agents; close them with `Promise.all(agents.map((a) => a.close()))`. */
export async function startDemoFleet(): Promise<RunningAgent[]> {
  return Promise.all([
    startOpsAgent(),
    startPlainAgent(),
    startStreamingAgent(),
    startLegacyAgent(),
  ]);
}

async function main(): Promise<void> {
  const agents = await startDemoFleet();
  const bus = createInMemoryEventBus<OpenTopics>();
  await bus.subscribe(
    '>',
    (event) => {
      process.stdout.write(`  event ${event.topic} ${JSON.stringify(event.payload)}\n`);
    },
    { name: 'demo' },
  );
  const registry = registerStandardExtensions(new ExtensionRegistry(), { bus });
  const cards = new Map<string, FleetAgent>();
  for (const agent of agents)
    cards.set(agent.name, { url: agent.url, card: await agent.fetchCard() });
  const fleet = createFleetClient({ registry, bus, cards, timeoutMs: 10_000 });

  const calls: [string, string, 'blocking' | 'streaming'][] = [
    ['ops', 'pr_review', 'blocking'],
    ['plain', 'echo', 'blocking'],
    ['stream', 'build', 'streaming'],
    ['legacy', 'triage', 'blocking'],
  ];
  for (const [agent, skill, mode] of calls) {
    const result = await fleet.call(agent, skill, `demo ${skill}`, { mode });
    const received = agents.find((a) => a.name === agent)?.received.at(-1);
    process.stdout.write(
      `${agent}/${skill} (${mode}, A2A ${result.protocolVersion}): ${result.state} "${result.text}"\n` +
        `  activated ${JSON.stringify(result.activated)}\n` +
        `  agent saw metadata ${JSON.stringify(received?.metadata ?? {})}\n`,
    );
    await bus.idle();
  }
  for (const agent of agents) process.stdout.write(`${agent.name}: ${agent.url}\n`);
  if (process.argv.includes('--serve')) {
    process.stdout.write('Serving; Ctrl-C to stop.\n');
    await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  }
  await bus.close();
  await Promise.all(agents.map((a) => a.close()));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
