/**
 * What the gateway takes from an agent is bounded, and what it sends an agent stays with that
 * agent: calls through `createGateway` to raw node:http agents that redirect elsewhere, answer
 * with huge bodies or drip their answer, each failing with its own coded error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';
import type { RawAgent } from './support/raw-agent.js';
import { startRawAgent, taskJson } from './support/raw-agent.js';

/** A server on another origin that records whatever reaches it. */
async function startCapture(): Promise<{
  url: string;
  seen: { headers: IncomingMessage['headers']; body: string }[];
  close: () => Promise<void>;
}> {
  const seen: { headers: IncomingMessage['headers']; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('limits on what agents send and where calls go', () => {
  let dir: string;
  let agent: RawAgent;
  let capture: Awaited<ReturnType<typeof startCapture>>;
  let gw: Gateway;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-limits-'));
    agent = await startRawAgent('raw');
    capture = await startCapture();
    gw = await createGateway(
      {
        store: `sqlite:${join(dir, 'gw.db')}`,
        agents: [{ name: 'raw', url: agent.url, auth: { headersEnv: { 'X-Api-Key': 'RAW_KEY' } } }],
        policy: { unknownRadius: 'proceed' },
        limits: { agentResponseBytes: '1MiB', agentResponseTimeout: '1500ms' },
      },
      { secrets: (name) => (name === 'RAW_KEY' ? 'secret-key-123' : undefined) },
    );
  });
  afterAll(async () => {
    await gw.close();
    await agent.close();
    await capture.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a redirect to another origin: the body and the api key never reach it', async () => {
    agent.setHandler((call, res) => {
      if (call.path !== '/rpc') return false;
      res.writeHead(307, { location: `${capture.url}/rpc` }).end();
      return true;
    });
    await expect(gw.call('raw', 's', 'the secret plan')).rejects.toMatchObject({
      code: 'FLEETGATE_CALL_REDIRECT_REFUSED',
      message: expect.stringContaining(`another origin (${capture.url})`),
    });
    expect(capture.seen).toEqual([]);
  });

  it('follows a redirect within the agent’s origin', async () => {
    agent.setHandler((call, res) => {
      if (call.path !== '/rpc') return false;
      res.writeHead(307, { location: '/rpc-moved' }).end();
      return true;
    });
    const result = await gw.call('raw', 's', 'hi');
    expect(result).toMatchObject({ ok: true, state: 'completed', text: 'done' });
    expect(agent.calls.at(-1)).toMatchObject({ path: '/rpc-moved', method: 'SendMessage' });
    expect(agent.calls.at(-1)!.headers['x-api-key']).toBe('secret-key-123');
  });

  it('stops reading a huge answer at the limit, streamed or declared', async () => {
    // A valid answer, 64 MiB of text: without a limit the call would read all of it and succeed.
    const task = JSON.stringify(taskJson('huge', 'TASK_STATE_COMPLETED', [{ text: 'x' }]));
    // Built once, as bytes: the agent answers at once, however busy the machine is.
    const [head, tail] = task.split('"text":"x"');
    const bigTask = Buffer.concat([
      Buffer.from(`${head}"text":"`),
      Buffer.alloc(64 << 20, 'x'),
      Buffer.from(`"${tail}`),
    ]);
    for (const declared of [false, true]) {
      const before = agent.bytesWritten();
      agent.setHandler((call, res) => {
        if (call.method !== 'SendMessage') return false;
        const body = Buffer.concat([
          Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":{"task":`),
          bigTask,
          Buffer.from('}}'),
        ]);
        res.writeHead(200, {
          'content-type': 'application/json',
          ...(declared ? { 'content-length': String(body.length) } : {}),
        });
        // Written in pieces as the client reads, so what was sent tells what was read.
        let at = 0;
        const pump = (): void => {
          while (at < body.length) {
            const piece = body.subarray(at, (at += 256 * 1024));
            if (!res.write(piece)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        res.on('close', () => (at = body.length));
        pump();
        return true;
      });
      await expect(gw.call('raw', 's', 'big please')).rejects.toMatchObject({
        code: 'FLEETGATE_AGENT_RESPONSE_TOO_LARGE',
        message: expect.stringContaining('limit of 1048576 bytes'),
      });
      // Socket buffers hold a few MiB at most: nowhere near the 64 MiB answer.
      expect(agent.bytesWritten() - before, `declared ${declared}`).toBeLessThan(16 << 20);
    }
  });

  it.each([false, true])(
    'cuts off an answer that drips in, with FLEETGATE_CALL_TIMEOUT (length declared: %s)',
    async (declared) => {
      agent.setHandler((call, res) => {
        if (call.method !== 'SendMessage') return false;
        res.writeHead(200, {
          'content-type': 'application/json',
          // A length the agent will take minutes to reach, a space every 50 ms.
          ...(declared ? { 'content-length': '100000' } : {}),
        });
        const timer = setInterval(() => res.write(' '), 50);
        res.on('close', () => clearInterval(timer));
        return true;
      });
      const started = Date.now();
      await expect(gw.call('raw', 's', 'slowly')).rejects.toMatchObject({
        code: 'FLEETGATE_CALL_TIMEOUT',
        message: expect.stringContaining('within 1500 ms'),
      });
      expect(Date.now() - started).toBeLessThan(10_000);
    },
  );

  it('answers normally again once the agent behaves', async () => {
    agent.setHandler(undefined);
    await expect(gw.call('raw', 's', 'hi')).resolves.toMatchObject({ ok: true, text: 'done' });
  });
});
