/**
 * A real `fleetgate start` with one real `@a2a-js/sdk` agent (the example ops agent, streaming)
 * behind its A2A proxy at `/a2a/ops`, an operator's token and a viewer's: the fixture of the suites
 * that check the proxy's wire or cancel calls, plus the SSE reader they share.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startOpsAgent,
  type AgentBehaviour,
  type RunningAgent,
} from '../../examples/agents/index.js';
import type { ServiceProcess } from './gateway-service.js';
import { startServiceProcess } from './gateway-service.js';

/** The running fixture. */
export interface OpsProxy {
  agent: RunningAgent;
  gw: ServiceProcess;
  /** The operator's token (named `bob`). */
  token: string;
  /** A viewer's token (named `vic`). */
  viewerToken: string;
  close(): Promise<void>;
}

/** What a suite changes of the fixture. */
export interface OpsProxyOptions {
  /** Whether the agent streams (default true: the gateway learns each task id first). */
  streaming?: boolean;
  /** The agent's behaviour (default the ops agent's own). */
  behaviour?: AgentBehaviour;
  /** Configuration lines added to the gateway's (default `proxy: { holdFor: 5s }`). */
  config?: readonly string[];
}

/** Starts the agent and the gateway (`name` tells their temporary directories apart). */
export async function startOpsProxy(
  name: string,
  options: OpsProxyOptions = {},
): Promise<OpsProxy> {
  const dir = mkdtempSync(join(tmpdir(), `fleetgate-${name}-`));
  const token = `${name}-operator-0123456789abcdef`;
  const viewerToken = `${name}-viewer-0123456789abcdef`;
  const agent = await startOpsAgent({
    streaming: options.streaming ?? true,
    ...(options.behaviour === undefined ? {} : { behaviour: options.behaviour }),
  });
  const config = join(dir, 'fleetgate.yaml');
  writeFileSync(
    config,
    [
      'listen: { host: 127.0.0.1, port: 0 }',
      `store: sqlite:${join(dir, 'fleetgate.db')}`,
      `agents: [{ name: ops, url: ${agent.url} }]`,
      ...(options.config ?? ['proxy: { holdFor: 5s }']),
      'auth:',
      '  tokens:',
      '    - { name: bob, tokenEnv: OPS_PROXY_OPERATOR, roles: [operator] }',
      '    - { name: vic, tokenEnv: OPS_PROXY_VIEWER, roles: [viewer] }',
    ].join('\n'),
  );
  const gw = await startServiceProcess({
    args: ['--config', config],
    env: { OPS_PROXY_OPERATOR: token, OPS_PROXY_VIEWER: viewerToken },
  });
  return {
    agent,
    gw,
    token,
    viewerToken,
    async close() {
      await gw.stop('SIGKILL');
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The `data:` frames (and their `event:` names) of an SSE body. */
export function framesOf(text: string): { event?: string; data: Record<string, unknown> }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice('event: '.length);
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice('data: '.length))
        .join('\n');
      return { ...(event === undefined ? {} : { event }), data: JSON.parse(data) as never };
    });
}
