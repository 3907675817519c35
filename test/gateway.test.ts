/**
 * `createGateway` as a library user meets it: a config naming real `@a2a-js/sdk` agents and a
 * SQLite file, nothing wired by hand.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';
import { until } from './support/gateway.js';

describe('createGateway', () => {
  let dir: string;
  let ops: RunningAgent;
  let slow: RunningAgent;
  let gw: Gateway;
  const deltas: EventEnvelope[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-gateway-'));
    ops = await startOpsAgent();
    slow = await startOpsAgent({
      behaviour: async (call) => ({ ...(await opsBehaviour(call)), delayMs: 300 }),
    });
    gw = await createGateway(
      {
        store: `sqlite:${join(dir, 'gw.db')}`,
        agents: [
          { name: 'ops', url: ops.url },
          { name: 'slow', url: slow.url },
          { name: 'down', url: 'http://127.0.0.1:9' },
        ],
      },
      // The wiring under test here is the call path; the HITL gate has its own suite.
      {
        gate: ALLOW_ALL,
        seeds: { ci: { data: { blockedPRs: 5 } }, board: { data: { untriaged: 12 } } },
      },
    );
    await gw.events.subscribe('world.state.delta', (e) => void deltas.push(e), {
      name: 'test-deltas',
    });
  });

  afterAll(async () => {
    await gw?.close();
    await ops?.close();
    await slow?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads every configured card on start and reports the one it could not fetch', () => {
    const states = Object.fromEntries(gw.agents.states().map((s) => [s.name, s.status]));
    expect(states).toEqual({ ops: 'fresh', slow: 'fresh', down: 'failed' });
    expect(gw.agents.effectiveRadius('ops', 'pr_review').radius).toBe('repo');
  });

  it('dispatches a call: durable record, world state updated once, event on the bus', async () => {
    const record = await gw
      .dispatch({ agent: 'ops', skill: 'pr_review', text: 'review #42' })
      .answered();
    expect(record).toMatchObject({ agent: 'ops', skill: 'pr_review', status: 'completed' });
    expect(await gw.dispatchRecord(record.id)).toMatchObject({ status: 'completed' });
    await gw.settle();
    expect(await gw.world.getDomain('ci')).toMatchObject({
      version: 1,
      state: { data: { blockedPRs: 4 } },
    });
    const mine = deltas.filter((e) => (e.payload as { taskId: string }).taskId === record.taskId);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.payload).toMatchObject({ source: 'ops', skill: 'pr_review' });
  });

  it('stamps what the broker declared on the library call path', async () => {
    const result = await gw.call('ops', 'sitrep', 'status');
    expect(result.ok).toBe(true);
    expect(ops.received.at(-1)?.metadata).toMatchObject({
      'x-effect-domain-skill': 'sitrep',
      'x-blast-radius': 'self',
    });
  });

  it('finishes calls in flight on close, then refuses new ones with a coded error', async () => {
    const own = await createGateway(
      { store: `sqlite:${join(dir, 'close.db')}`, agents: [{ name: 'slow', url: slow.url }] },
      { gate: ALLOW_ALL },
    );
    const seen: EventEnvelope[] = [];
    await own.events.subscribe('world.state.delta', (e) => void seen.push(e), { name: 'seen' });
    const inFlight = own.dispatch({ agent: 'slow', skill: 'pr_review', text: 'late' }).answered();
    // Close while the agent is still working on the call.
    await until(() => slow.received.some((c) => c.text === 'late'), 5000, 'the call to arrive');
    const closed = own.close();
    await expect(own.call('slow', 'sitrep', 'x')).rejects.toSatisfy((e: unknown) =>
      isFleetgateError(e, 'FLEETGATE_GATEWAY_CLOSED'),
    );
    expect((await inFlight).status).toBe('completed');
    await closed;
    // The outbox was flushed before the bus closed: the delta of the call in flight went out.
    expect(seen).toHaveLength(1);
  });

  it('keeps state across a restart on the same SQLite file', async () => {
    const path = `sqlite:${join(dir, 'restart.db')}`;
    const first = await createGateway({ store: path, agents: [{ name: 'ops', url: ops.url }] });
    const record = await first.dispatch({ agent: 'ops', skill: 'sitrep', text: 'one' }).answered();
    await first.close();
    const second = await createGateway({ store: path, agents: [{ name: 'ops', url: ops.url }] });
    try {
      expect(await second.dispatchRecord(record.id)).toMatchObject({ status: 'completed' });
      expect((await second.world.getDomain('board'))?.state).toEqual({
        data: { lastSitrep: 'green' },
      });
    } finally {
      await second.close();
    }
  });

  it('rejects an invalid configuration with every problem and its path', async () => {
    await expect(createGateway({ bus: 'kafka://x', cards: { timeout: 'soon' } })).rejects.toSatisfy(
      (e: unknown) =>
        isFleetgateError(e, 'FLEETGATE_CONFIG_INVALID') &&
        /bus/.test(e.message) &&
        /cards\.timeout/.test(e.message),
    );
  });
});
