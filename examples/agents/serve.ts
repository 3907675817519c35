/**
 * The "ops" example agent as a long-running server, for deployments that want one real agent
 * behind the gateway (deploy/compose.yaml runs it as its demo agent):
 *
 * ```sh
 * OPS_AGENT_TOKEN=… npx tsx examples/agents/serve.ts
 * ```
 *
 * Read from the environment:
 * - `AGENT_HOST` (default `127.0.0.1`; `0.0.0.0` in a container) and `AGENT_PORT` (default 9101;
 *   0 picks a free one) — where it listens;
 * - `AGENT_PUBLIC_URL` — the base URL its card advertises (default the bound loopback address);
 * - `OPS_AGENT_TOKEN` — when set, every A2A request must carry `Authorization: Bearer <it>` (the
 *   card stays public, as A2A discovery expects); the gateway sends it from `auth.bearerEnv`.
 *
 * Prints `ops agent listening on <url>` once it serves; SIGTERM or SIGINT closes it and exits 0.
 */
import { declareOps, opsBehaviour, OPS_SKILLS } from './ops-agent.js';
import { startAgent } from './harness.js';

function port(value: string | undefined): number {
  if (value === undefined || value === '') return 9101;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    process.stderr.write(`AGENT_PORT must be a port number (got ${JSON.stringify(value)})\n`);
    process.exit(2);
  }
  return n;
}

const token = process.env.OPS_AGENT_TOKEN;
const publicUrl = process.env.AGENT_PUBLIC_URL;
const agent = await startAgent({
  name: 'ops',
  description: 'Reviews PRs, reports sitreps and migrates repos; reports its world-state changes.',
  host: process.env.AGENT_HOST ?? '127.0.0.1',
  port: port(process.env.AGENT_PORT),
  ...(publicUrl === undefined || publicUrl === '' ? {} : { publicUrl }),
  ...(token === undefined || token === '' ? {} : { bearerToken: token }),
  skills: Object.keys(OPS_SKILLS).map((id) => ({ id })),
  declare: declareOps,
  behaviour: opsBehaviour,
  // A long-running server keeps only a few recent requests for inspection.
  maxReceived: 100,
});
process.stdout.write(`ops agent listening on ${agent.url}\n`);

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await agent.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
