/**
 * `checkAgent` and `fleetgate check-agent` on agents whose calls do not come out right: a skill
 * whose own code throws (the task ends failed), a skill that starts its task and never ends it,
 * and a card that lists one skill id twice.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentCard } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentCheckReport } from '../src/agent/index.js';
import {
  checkAgent,
  declareBlast,
  declareEffectDomain,
  endTask,
  startTask,
} from '../src/agent/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import type { KitAgent } from './support/kit-agent.js';
import { startKitAgent } from './support/kit-agent.js';

const declare = (card: AgentCard): AgentCard =>
  declareEffectDomain(declareBlast(card, { triage: 'project' }), { triage: ['board'] });

/**
 * A hand-written v1.0 agent that sends its headers and then stalls: the blocking answer never
 * comes whole, the stream sends one message and never ends.
 */
async function startStallingAgent(): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          name: 'staller',
          description: 'sends headers, then nothing',
          version: '1.0.0',
          supportedInterfaces: [
            { url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
          capabilities: { streaming: true },
          skills: [{ id: 'triage', name: 'triage', description: 'triage', tags: [] }],
        }),
      );
      return;
    }
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const { id, method } = JSON.parse(body) as { id: string; method: string };
      if (method !== 'SendStreamingMessage') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"jsonrpc":"2.0",');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const message = { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'thinking' }] };
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { message } })}\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const lines = (report: AgentCheckReport) =>
  report.diagnostics.map((d) => `${d.severity} ${d.path}: ${d.message}`);

describe('checkAgent on calls that do not come out right', () => {
  let thrower: KitAgent;
  let refuser: KitAgent;
  let decliner: KitAgent;
  let silent: KitAgent;
  let twins: KitAgent;
  let staller: Awaited<ReturnType<typeof startStallingAgent>>;
  /** Ends the silent agent's executions, so its server can close. */
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    thrower = await startKitAgent({
      name: 'thrower',
      skills: ['triage'],
      declare,
      streaming: true,
      executor: {
        execute: () => Promise.reject(new Error('the board API is down')),
      },
    });
    refuser = await startKitAgent({
      name: 'refuser',
      skills: ['triage'],
      declare,
      executor: {
        execute: (ctx, bus) => {
          startTask(bus, ctx);
          endTask(bus, ctx, 'failed', 'no issue URL in the request');
          return Promise.resolve();
        },
      },
    });
    decliner = await startKitAgent({
      name: 'decliner',
      skills: ['triage'],
      declare,
      executor: {
        execute: (ctx, bus) => {
          startTask(bus, ctx);
          endTask(bus, ctx, 'rejected', 'not an issue');
          return Promise.resolve();
        },
      },
    });
    silent = await startKitAgent({
      name: 'silent',
      skills: ['triage'],
      declare,
      streaming: true,
      executor: {
        execute: async (ctx, bus) => {
          startTask(bus, ctx);
          await released;
        },
      },
    });
    staller = await startStallingAgent();
    twins = await startKitAgent({
      name: 'twins',
      skills: ['triage', 'triage'],
      declare,
      executor: {
        execute: (ctx, bus) => {
          startTask(bus, ctx);
          endTask(bus, ctx);
          return Promise.resolve();
        },
      },
    });
  });

  afterAll(async () => {
    release();
    await Promise.all([thrower, refuser, decliner, silent, twins, staller].map((a) => a?.close()));
  });

  it('reports a task that ended failed as an error, with its status text, blocking and streaming', async () => {
    const report = await checkAgent(thrower.url, { skill: 'triage' });
    expect(report.calls.map((c) => [c.mode, c.state])).toEqual([
      ['blocking', 'failed'],
      ['streaming', 'failed'],
    ]);
    expect(report.ok).toBe(false);
    for (const mode of ['blocking', 'streaming']) {
      expect(lines(report)).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^error ${mode}: the task failed: "Agent execution error: .*the board API is down`,
          ),
        ),
      );
    }
    const refused = await checkAgent(refuser.url, { skill: 'triage' });
    expect(lines(refused)).toEqual([
      expect.stringMatching(/^error blocking: the task failed: "no issue URL in the request"/),
    ]);
  });

  it('warns about a task the agent rejected, with its status text, so --strict fails it', async () => {
    const report = await checkAgent(decliner.url, { skill: 'triage' });
    expect(report.calls.map((c) => c.state)).toEqual(['rejected']);
    expect(lines(report)).toEqual([
      expect.stringMatching(
        /^warning blocking: the task ended rejected: "not an issue"; .*--input$/,
      ),
    ]);
    expect(report.ok).toBe(true);
  });

  it('names the timeout when no answer came, gives no echo advice, and reports a stream that stopped as a task that did not end', async () => {
    const report = await checkAgent(silent.url, { skill: 'triage', timeoutMs: 800 });
    expect(lines(report)).toEqual([
      'error blocking: the call failed: no answer within the request timeout of 800 ms',
      expect.stringMatching(
        /^warning streaming: the task did not end within the timeout of 800 ms \(state working\)/,
      ),
    ]);
    const streamed = report.calls[1]!;
    expect(streamed.state).toBe('working');
    expect(streamed.taskId).toEqual(expect.any(String));
    expect(streamed.events).toEqual(['task']);
    // The stream's headers came: their echo is still checked.
    expect(streamed.echoedExtensions).not.toBeNull();
  });

  it('names the timeout when an answer began and never ended, and a stream that named no task', async () => {
    const report = await checkAgent(staller.url, { skill: 'triage', timeoutMs: 500 });
    expect(lines(report)).toEqual([
      'error blocking: the call failed: the answer did not end within the request timeout of 500 ms',
      'warning streaming: the stream did not end within the timeout of 500 ms',
    ]);
    expect(report.calls.map((c) => [c.state, c.events])).toEqual([
      ['error', undefined],
      ['message', ['message']],
    ]);
  });

  it('flags a skill id the card lists twice, naming both indexes', async () => {
    const report = await checkAgent(twins.url, { skill: 'triage' });
    expect(lines(report)).toEqual([
      'error card.skills[1].id: skill id "triage" is listed twice (skills[0] and skills[1]); skill ids must be unique within a card: a gateway keys declarations by skill id, so one of the two silently wins',
    ]);
    expect(report.ok).toBe(false);
  });
});

describe('fleetgate check-agent on calls that do not come out right', () => {
  let thrower: KitAgent;
  beforeAll(async () => {
    thrower = await startKitAgent({
      name: 'thrower',
      skills: ['triage'],
      declare,
      executor: { execute: () => Promise.reject(new Error('the board API is down')) },
    });
  });
  afterAll(() => thrower?.close());

  it(
    'exits 1 on a skill whose task ends failed and prints the status text',
    async () => {
      const run = await runCli(['check-agent', thrower.url, '--skill', 'triage']);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/blocking call \(JSONRPC, A2A 1\.0\) → failed task /);
      expect(run.stdout).toMatch(
        /^error {3}blocking: the task failed: "Agent execution error: .*the board API is down/mu,
      );
      expect(run.stdout).toContain('1 error, 0 warnings');
    },
    cliTestTimeout(1),
  );
});
