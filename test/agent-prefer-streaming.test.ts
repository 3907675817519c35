/**
 * An agent whose card declares streaming but whose streams fail: a call the gateway waits for goes
 * as `SendStreamingMessage` by default (so its task id would come first) and fails with the
 * stream; configured with `preferStreaming: false`, the same agent gets `SendMessage` and the call
 * completes. `fleetgate start` as a child process, the calls through its HTTP API.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { api, startServiceProcess, type ServiceProcess } from './support/gateway-service.js';

interface Dispatch {
  status: string;
  result: { error?: { code: string; message: string } } | null;
}

describe('an agent whose streams misbehave', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  const asked = { streamed: 0, sent: 0 };

  beforeAll(async () => {
    agent = await startOpsAgent({
      streaming: true,
      decorateHandler: (handler) => {
        const broken = Object.create(handler) as A2ARequestHandler;
        // The stream fails before its first event.
        broken.sendMessageStream = () => {
          asked.streamed += 1;
          return (async function* () {
            await Promise.resolve();
            yield* [];
            throw new Error('streams are broken here');
          })();
        };
        broken.sendMessage = (...args) => {
          asked.sent += 1;
          return handler.sendMessage(...args);
        };
        return broken;
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-prefer-streaming-'));
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: streamer, url: ${agent.url} }`,
        `  - { name: sender, url: ${agent.url}, preferStreaming: false }`,
      ].join('\n'),
    );
    gw = await startServiceProcess({ args: ['--config', config] });
  }, 90_000);

  afterAll(async () => {
    await gw?.stop('SIGTERM');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const waited = async (name: string): Promise<Dispatch> => {
    const answer = await api<Dispatch>(gw.url, '/api/dispatch?wait=30s', {
      body: { agent: name, skill: 'sitrep', text: 'status please' },
    });
    return answer.body;
  };

  it('fails a waited call with the stream by default', async () => {
    const call = await waited('streamer');
    expect(call.status, JSON.stringify(call)).toBe('failed');
    expect(asked).toEqual({ streamed: 1, sent: 0 });
  });

  it('sends it as SendMessage with preferStreaming: false, and it completes', async () => {
    const call = await waited('sender');
    expect(call).toMatchObject({ status: 'completed', result: { state: 'completed' } });
    expect(asked).toEqual({ streamed: 1, sent: 1 });
  });
});
