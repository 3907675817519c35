import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startAgent, type RunningAgent } from '../examples/agents/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { CallOutcome, Extension } from '../src/extensions/index.js';
import { createTestFleet } from './extensions-support.js';

const URI = { A: 'urn:fleetgate:test:a', B: 'urn:fleetgate:test:b', C: 'urn:fleetgate:test:c' };

function tracing(name: keyof typeof URI, log: string[], throwInBefore = false): Extension {
  return {
    uri: URI[name],
    description: name,
    before(ctx) {
      log.push(`before ${name}`);
      if (throwInBefore) throw new Error(`${name} exploded`);
      ctx.stamp(`x-test-${name.toLowerCase()}`, 'yes');
    },
    after(_ctx, outcome: CallOutcome) {
      log.push(`after ${name} ${outcome.ok ? 'ok' : `fail ${outcome.error.code}`}`);
    },
  };
}

let agent: RunningAgent;
let slow: RunningAgent;
let failing: Server;
let failingUrl: string;
let refusedUrl: string;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const declared = Object.values(URI).map((uri) => ({ uri }));
  agent = await startAgent({
    name: 'abc',
    skills: [{ id: 's' }],
    extensions: declared,
    behaviour: () => ({}),
  });
  slow = await startAgent({
    name: 'slow',
    skills: [{ id: 's' }],
    extensions: declared,
    behaviour: () => ({ delayMs: 1_500 }),
  });
  failing = createServer((_req, res) => {
    res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
  });
  failingUrl = await listen(failing);
  const closed = createServer();
  refusedUrl = await listen(closed);
  await new Promise((resolve) => closed.close(resolve));
});

afterAll(async () => {
  failing.closeAllConnections();
  await Promise.all([
    agent.close(),
    slow.close(),
    new Promise((resolve) => failing.close(resolve)),
  ]);
});

async function fleetWith(log: string[], options: { throwB?: boolean; requiredB?: boolean } = {}) {
  return createTestFleet([agent, slow], {
    extensions: [
      { extension: tracing('A', log) },
      {
        extension: tracing('B', log, options.throwB ?? false),
        required: options.requiredB ?? false,
      },
      { extension: tracing('C', log) },
    ],
  });
}

describe('chain order around a real call', () => {
  it('runs before A, B, C and after C, B, A', async () => {
    const log: string[] = [];
    const t = await fleetWith(log);
    await t.fleet.call('abc', 's', 'x');
    expect(log).toEqual([
      'before A',
      'before B',
      'before C',
      'after C ok',
      'after B ok',
      'after A ok',
    ]);
    expect(agent.received.at(-1)!.metadata).toEqual({
      'x-test-a': 'yes',
      'x-test-b': 'yes',
      'x-test-c': 'yes',
    });
  });

  it('still runs C when an optional B throws, runs after for A and C, and publishes system.error', async () => {
    const log: string[] = [];
    const t = await fleetWith(log, { throwB: true });
    const result = await t.fleet.call('abc', 's', 'x');
    expect(result.ok).toBe(true);
    expect(log).toEqual(['before A', 'before B', 'before C', 'after C ok', 'after A ok']);
    expect(agent.received.at(-1)!.metadata).toEqual({ 'x-test-a': 'yes', 'x-test-c': 'yes' });
    // B is still active for this agent: the header carries every declared, registered extension.
    expect(agent.received.at(-1)!.headers['a2a-extensions']?.split(',')).toEqual([
      URI.A,
      URI.B,
      URI.C,
    ]);
    const errors = await t.on('system.error');
    expect(errors.map((e) => e.payload)).toEqual([
      expect.objectContaining({
        source: `extension:${URI.B}`,
        hook: 'before',
        agent: 'abc',
        skill: 's',
      }),
    ]);
    expect(t.fleet.hookFailures()).toEqual({ [`${URI.B} before`]: 1 });
  });

  it('does not send the request when a required before throws, and runs after for A only', async () => {
    const log: string[] = [];
    const t = await fleetWith(log, { throwB: true, requiredB: true });
    const before = agent.received.length;
    const error = await t.fleet.call('abc', 's', 'x').catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_HOOK_FAILED')).toBe(true);
    expect(agent.received.length).toBe(before);
    expect(log).toEqual(['before A', 'before B', 'after A fail FLEETGATE_HOOK_FAILED']);
  });
});

describe('after always runs', () => {
  it('gives every after hook { ok: false } when the agent answers HTTP 500', async () => {
    const log: string[] = [];
    const t = await fleetWith(log);
    t.cards.set('broken', { url: failingUrl, card: await agent.fetchCard() });
    const error = await t.fleet.call('broken', 's', 'x').catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_CALL_FAILED')).toBe(true);
    expect((error as { details?: Record<string, unknown> }).details?.['status']).toBe(500);
    expect(log).toEqual([
      'before A',
      'before B',
      'before C',
      'after C fail FLEETGATE_CALL_FAILED',
      'after B fail FLEETGATE_CALL_FAILED',
      'after A fail FLEETGATE_CALL_FAILED',
    ]);
  });

  it('gives every after hook { ok: false } when the connection is refused, in every mode', async () => {
    for (const mode of ['blocking', 'streaming', 'return-immediately'] as const) {
      const log: string[] = [];
      const t = await fleetWith(log);
      t.cards.set('gone', { url: refusedUrl, card: await agent.fetchCard() });
      const error = await t.fleet.call('gone', 's', 'x', { mode }).catch((e: unknown) => e);
      expect(isFleetgateError(error, 'FLEETGATE_CALL_FAILED')).toBe(true);
      expect(log.filter((l) => l.startsWith('after'))).toEqual([
        'after C fail FLEETGATE_CALL_FAILED',
        'after B fail FLEETGATE_CALL_FAILED',
        'after A fail FLEETGATE_CALL_FAILED',
      ]);
    }
  });

  it('fails with FLEETGATE_CALL_TIMEOUT after timeoutMs; every after hook runs once the request ends', async () => {
    const log: string[] = [];
    const t = await fleetWith(log);
    const started = performance.now();
    const error = await t.fleet.call('slow', 's', 'x', { timeoutMs: 60 }).catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_CALL_TIMEOUT')).toBe(true);
    expect(performance.now() - started).toBeLessThan(1_000);
    // The timeout detaches the caller, not the request: the task still ends at the agent, and the
    // after hooks see how it ended (its deltas are facts to publish), once.
    const afters = (): string[] => log.filter((l) => l.startsWith('after'));
    const end = Date.now() + 5_000;
    while (afters().length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(afters()).toHaveLength(3);
    expect(log.at(-1)).toBe('after A ok');
  });

  it('fails with FLEETGATE_CALL_ABORTED when the caller aborts', async () => {
    const log: string[] = [];
    const t = await fleetWith(log);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const error = await t.fleet
      .call('slow', 's', 'x', { signal: controller.signal, mode: 'streaming' })
      .catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_CALL_ABORTED')).toBe(true);
    expect(log.at(-1)).toBe('after A fail FLEETGATE_CALL_ABORTED');
  });

  it('fails the call when a required after hook throws, after the other after hooks ran', async () => {
    const log: string[] = [];
    const throwingAfter: Extension = {
      uri: URI.B,
      description: 'B',
      after() {
        log.push('after B throws');
        throw new Error('B after exploded');
      },
    };
    const t = await createTestFleet([agent], {
      extensions: [
        { extension: tracing('A', log) },
        { extension: throwingAfter, required: true },
        { extension: tracing('C', log) },
      ],
    });
    const error = await t.fleet.call('abc', 's', 'x').catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_HOOK_FAILED')).toBe(true);
    expect(log).toEqual(['before A', 'before C', 'after C ok', 'after B throws', 'after A ok']);
  });
});
