import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  startAgent,
  startStreamingAgent,
  type AgentPlan,
  type RunningAgent,
} from '../examples/agents/index.js';
import { deterministicEventId, type EventEnvelope } from '../src/protocol/index.js';
import {
  EFFECT_DOMAIN_V1_URI,
  WORLDSTATE_DELTA_MIME,
  WORLDSTATE_DELTA_V1_URI,
  createWorldStateDeltaPart,
} from '../src/protocol/index.js';
import { createTestFleet } from './extensions-support.js';

const A = { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 } as const;
const B = { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 } as const;
const C = { domain: 'board', path: 'data.lastReview', op: 'set', value: 'pr-42' } as const;

const invalidPart = {
  content: {
    $case: 'data' as const,
    value: {
      deltas: [
        { domain: 'ci', path: 'data.ok', op: 'push', value: 'x' },
        { domain: 'ci', path: 'data.n', op: 'inc', value: 'one' },
        { domain: 'ci', path: 'constructor.prototype', op: 'set', value: 1 },
        { domain: 'ci', op: 'set', value: 1 },
      ],
    },
  },
  metadata: { mimeType: WORLDSTATE_DELTA_MIME },
  filename: '',
  mediaType: '',
};

let plan: AgentPlan = {};
let agent: RunningAgent;
let aliasAgent: RunningAgent;
let streaming: RunningAgent;

beforeAll(async () => {
  agent = await startAgent({
    name: 'deltas',
    skills: [{ id: 'review' }],
    streaming: true,
    extensions: [{ uri: EFFECT_DOMAIN_V1_URI }],
    behaviour: () => plan,
  });
  aliasAgent = await startAgent({
    name: 'old-uri',
    skills: [{ id: 'review' }],
    extensions: [{ uri: WORLDSTATE_DELTA_V1_URI }],
    behaviour: () => ({ artifacts: [[createWorldStateDeltaPart([A])]] }),
  });
  streaming = await startStreamingAgent();
});

afterAll(async () => {
  await Promise.all([agent, aliasAgent, streaming].map((a) => a.close()));
});

describe('world.state.delta', () => {
  it('publishes exactly one event with every entry of two delta parts', async () => {
    plan = {
      artifacts: [[createWorldStateDeltaPart([A, B])], [createWorldStateDeltaPart([C])]],
    };
    const t = await createTestFleet([agent]);
    const result = await t.fleet.call('deltas', 'review', 'x', { correlationId: 'corr-7' });
    const events = await t.on('world.state.delta');
    expect(events).toHaveLength(1);
    expect(events[0]!.id).toBe(
      deterministicEventId('world.state.delta', 'deltas', result.task!.id),
    );
    expect(events[0]!.correlationId).toBe('corr-7');
    expect(events[0]!.payload).toEqual({
      source: 'deltas',
      skill: 'review',
      deltas: [A, B, C],
      taskId: result.task!.id,
      correlationId: 'corr-7',
      state: 'completed',
    });
    expect(await t.on('world.state.delta.rejected')).toEqual([]);
  });

  it('lists invalid entries with reasons in one world.state.delta.rejected', async () => {
    plan = { artifacts: [[createWorldStateDeltaPart([A])], [invalidPart]] };
    const t = await createTestFleet([agent]);
    const result = await t.fleet.call('deltas', 'review', 'x');
    const [delta] = await t.on('world.state.delta');
    const rejected = await t.on('world.state.delta.rejected');
    expect((delta!.payload as { deltas: unknown[] }).deltas).toEqual([
      A,
      { domain: 'ci', path: 'data.ok', op: 'push', value: 'x' },
    ]);
    expect(rejected).toHaveLength(1);
    const payload = rejected[0]!.payload as {
      source: string;
      taskId: string;
      rejected: { index: number; entry: unknown; reason: string }[];
    };
    expect(payload.source).toBe('deltas');
    expect(payload.taskId).toBe(result.task!.id);
    expect(payload.rejected.map((r) => r.index)).toEqual([2, 3, 4]);
    for (const r of payload.rejected) expect(r.reason).toMatch(/\S/);
  });

  it('publishes nothing for a task without deltas', async () => {
    plan = { artifacts: [] };
    const t = await createTestFleet([agent]);
    await t.fleet.call('deltas', 'review', 'x');
    expect(await t.on('world.state.delta')).toEqual([]);
    expect(await t.on('world.state.delta.rejected')).toEqual([]);
  });

  it('publishes the deltas of a failed task, with its state, and resolves with ok: false', async () => {
    plan = { artifacts: [[createWorldStateDeltaPart([A])]], state: 'failed' };
    const t = await createTestFleet([agent]);
    const result = await t.fleet.call('deltas', 'review', 'x');
    expect(result.ok).toBe(false);
    expect(result.state).toBe('failed');
    const events = await t.on('world.state.delta');
    expect(events.map((e) => e.payload)).toEqual([
      expect.objectContaining({ state: 'failed', deltas: [A] }),
    ]);
  });

  it('treats a card declaring the older worldstate-delta-v1 URI as effect-domain-v1', async () => {
    const t = await createTestFleet([aliasAgent]);
    await t.fleet.call('old-uri', 'review', 'x');
    expect(aliasAgent.received.at(-1)!.headers['a2a-extensions']).toBe(EFFECT_DOMAIN_V1_URI);
    expect(await t.on('world.state.delta')).toHaveLength(1);
  });
});

function comparable(events: EventEnvelope[]) {
  return events.map((e) => {
    const payload = { ...(e.payload as Record<string, unknown>) };
    delete payload['taskId'];
    delete payload['correlationId'];
    delete payload['wallMs'];
    return { topic: e.topic, payload };
  });
}

describe('call modes', () => {
  it('publishes identical events for blocking and streaming calls of the same behaviour', async () => {
    const blocking = await createTestFleet([streaming]);
    const streamed = await createTestFleet([streaming]);
    const seen: string[] = [];
    const b = await blocking.fleet.call('stream', 'build', 'x');
    const s = await streamed.fleet.call('stream', 'build', 'x', {
      mode: 'streaming',
      onEvent: (event) => seen.push(event.payload?.$case ?? 'none'),
    });
    await Promise.all([blocking.bus.idle(), streamed.bus.idle()]);
    expect(seen).toEqual([
      'task',
      'statusUpdate',
      'artifactUpdate',
      'artifactUpdate',
      'statusUpdate',
    ]);
    expect(b.state).toBe('completed');
    expect(s.state).toBe('completed');
    expect(s.text).toBe(b.text);
    expect(blocking.events.map((e) => e.topic).sort()).toEqual([
      'cost.sample',
      'world.state.delta',
    ]);
    expect(comparable(streamed.events)).toEqual(comparable(blocking.events));
  });

  it('runs the after hooks once, at the terminal state, for a returnImmediately call', async () => {
    plan = { artifacts: [[createWorldStateDeltaPart([A])]], delayMs: 150 };
    const t = await createTestFleet([agent]);
    const result = await t.fleet.call('deltas', 'review', 'x', { mode: 'return-immediately' });
    expect(result.terminal).toBe(false);
    expect(['submitted', 'working']).toContain(result.state);
    expect(t.fleet.terminal.held().map((p) => p.taskId)).toEqual([result.task!.id]);
    expect(await t.on('world.state.delta')).toEqual([]);

    // What the task tracker (a later issue) will do: observe the terminal task, hand it over.
    const client = (await t.fleet.agentClient('deltas')).client;
    let task = await client.getTask({ tenant: '', id: result.task!.id, historyLength: 0 });
    while (task.status?.state !== TaskState.TASK_STATE_COMPLETED) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      task = await client.getTask({ tenant: '', id: result.task!.id, historyLength: 0 });
    }
    const first = await t.fleet.terminal.settle('deltas', task);
    const second = await t.fleet.terminal.settle('deltas', task);
    expect(first.settled).toBe(true);
    expect(second).toEqual({ settled: false, reason: 'unknown' });
    expect(await t.on('world.state.delta')).toHaveLength(1);
    expect(t.fleet.terminal.held()).toEqual([]);
  });

  it('leaves an input-required task to the tracker without running the after hooks', async () => {
    plan = { artifacts: [[createWorldStateDeltaPart([A])]], state: 'input-required' };
    const t = await createTestFleet([agent]);
    const result = await t.fleet.call('deltas', 'review', 'x');
    expect(result.state).toBe('input-required');
    expect(result.terminal).toBe(false);
    expect(await t.on('world.state.delta')).toEqual([]);
    expect(await t.on('cost.sample')).toEqual([]);
  });
});
