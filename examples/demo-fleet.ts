/**
 * The demo fleet: starts the four example agents on 127.0.0.1 and calls each once through a
 * gateway (`createGateway`, SQLite in a temporary folder), printing what went over the wire and what was
 * published. Run with `npx tsx examples/demo-fleet.ts` (add `--serve` to keep the agents running).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { createGateway } from '../src/service/index.js';
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
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-demo-'));
  const gateway = await createGateway({
    store: `sqlite:${join(dir, 'demo.db')}`,
    agents: agents.map((a) => ({ name: a.name, url: a.url })),
  });
  await gateway.events.subscribe(
    '>',
    (event) => {
      process.stdout.write(`  event ${event.topic} ${JSON.stringify(event.payload)}\n`);
    },
    { name: 'demo' },
  );

  const calls: [string, string, 'blocking' | 'streaming'][] = [
    ['ops', 'pr_review', 'blocking'],
    ['plain', 'echo', 'blocking'],
    ['stream', 'build', 'streaming'],
    ['legacy', 'triage', 'blocking'],
  ];
  for (const [agent, skill, mode] of calls) {
    const result = await gateway.call(agent, skill, `demo ${skill}`, { mode, timeoutMs: 10_000 });
    const received = agents.find((a) => a.name === agent)?.received.at(-1);
    process.stdout.write(
      `${agent}/${skill} (${mode}, A2A ${result.protocolVersion}): ${result.state} "${result.text}"\n` +
        `  activated ${JSON.stringify(result.activated)}\n` +
        `  agent saw metadata ${JSON.stringify(received?.metadata ?? {})}\n`,
    );
    await gateway.settle();
  }
  for (const agent of agents) process.stdout.write(`${agent.name}: ${agent.url}\n`);
  if (process.argv.includes('--serve')) {
    process.stdout.write('Serving; Ctrl-C to stop.\n');
    await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  }
  await gateway.close();
  await Promise.all(agents.map((a) => a.close()));
  rmSync(dir, { recursive: true, force: true });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
