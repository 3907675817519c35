/**
 * The demo fleet as a process: starts the agents, prints one JSON line
 * `{ "agents": [{ "name", "url" }], "seeds": { … } }` on stdout, and serves until stdin closes or
 * it gets SIGTERM / SIGINT. `fleetgate start` (no configuration) runs it as a child process.
 */
import { DEMO_SEEDS, startDemoAgents } from './index.js';

const agents = await startDemoAgents();
process.stdout.write(
  `${JSON.stringify({ agents: agents.map((a) => ({ name: a.name, url: a.url })), seeds: DEMO_SEEDS })}\n`,
);

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await Promise.allSettled(agents.map((a) => a.close()));
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
// The parent holds stdin open: when it dies without a word, the fleet goes with it.
process.stdin.on('end', () => void stop());
process.stdin.resume();
