import type { Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';

import { deterministicEventId } from '../protocol/index.js';
import { FleetgateError } from '../protocol/index.js';
import {
  STAMPS,
  WORLDSTATE_DELTA_MIME,
  createCostPart,
  createWorldStateDeltaPart,
  readDeclarations,
} from '../protocol/index.js';
import { SkillCallChain, createSkillCallContext } from './chain.js';
import { createBlastExtension } from './blast.js';
import { createCostExtension } from './cost.js';
import { createEffectDomainExtension, taskEventId } from './effect-domain.js';
import { createHitlModeExtension } from './hitl-mode.js';
import type { CallOutcome, Extension, ExtensionEventBus } from './types.js';

function recordingBus() {
  const events: { topic: string; payload: Record<string, unknown>; id?: string | undefined }[] = [];
  const bus: ExtensionEventBus = {
    publish(topic, payload, options) {
      events.push({ topic, payload: payload as Record<string, unknown>, id: options?.id });
      return Promise.resolve({});
    },
  };
  return { bus, events };
}

const card = {
  name: 'ops',
  capabilities: {
    extensions: [
      {
        uri: 'https://proto-labs.ai/a2a/ext/hitl-mode-v1',
        params: {
          skills: {
            review: { mode: 'veto', vetoTtlMs: 30000 },
            deploy: { mode: 'gated' },
            plain: { mode: 'veto' },
          },
        },
      },
    ],
  },
  skills: [{ id: 'review' }, { id: 'deploy' }, { id: 'plain' }],
};

async function run(extension: Extension, outcome: CallOutcome, skill = 'review') {
  const ctx = createSkillCallContext({
    agent: 'ops',
    skill,
    correlationId: 'corr-1',
    signal: new AbortController().signal,
    declarations: readDeclarations(card),
  });
  const chain = new SkillCallChain([{ extension, required: true }], ctx, {
    report: () => Promise.resolve(),
  });
  await chain.runBefore();
  const failure = await chain.runAfter(outcome);
  if (failure !== undefined) throw failure;
  return ctx;
}

function taskWith(
  parts: Task['artifacts'][number]['parts'][],
  state = TaskState.TASK_STATE_COMPLETED,
): Task {
  return {
    id: 'task-1',
    contextId: 'ctx',
    status: { state, message: undefined, timestamp: undefined },
    artifacts: parts.map((p, i) => ({
      artifactId: `a${i}`,
      name: '',
      description: '',
      parts: p,
      metadata: undefined,
      extensions: [],
    })),
    history: [],
    metadata: undefined,
  };
}

describe('effect-domain-v1', () => {
  it('stamps the skill and publishes one world.state.delta with every entry of every part', async () => {
    const { bus, events } = recordingBus();
    const task = taskWith([
      [createWorldStateDeltaPart([{ domain: 'ci', path: 'data.a', op: 'inc', value: 1 }])],
      [createWorldStateDeltaPart([{ domain: 'board', path: 'data.b', op: 'set', value: 'x' }])],
    ]);
    const ctx = await run(createEffectDomainExtension({ bus }), { ok: true, task });
    expect(ctx.stamps).toEqual({ [STAMPS.effectDomainSkill]: 'review' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      topic: 'world.state.delta',
      id: deterministicEventId('world.state.delta', 'ops', 'task-1'),
      payload: {
        source: 'ops',
        skill: 'review',
        taskId: 'task-1',
        correlationId: 'corr-1',
        state: 'completed',
        deltas: [
          { domain: 'ci', path: 'data.a', op: 'inc', value: 1 },
          { domain: 'board', path: 'data.b', op: 'set', value: 'x' },
        ],
      },
    });
  });

  it('derives the same event id as the bus’s deterministicEventId', () => {
    expect(taskEventId('world.state.delta', 'agent', 'task')).toBe(
      deterministicEventId('world.state.delta', 'agent', 'task'),
    );
    // Length prefixes count UTF-8 bytes, not characters.
    expect(taskEventId('world.state.delta', 'agënt', 'tâsk-✓')).toBe(
      deterministicEventId('world.state.delta', 'agënt', 'tâsk-✓'),
    );
  });

  it('publishes each task’s deltas under deterministicEventId, whichever agent called before', async () => {
    const { bus, events } = recordingBus();
    const extension = createEffectDomainExtension({ bus });
    const task = taskWith([
      [createWorldStateDeltaPart([{ domain: 'ci', path: 'data.a', op: 'inc', value: 1 }])],
    ]);
    const calls = [
      ['ops', 't-1'],
      ['agënt', 't-1'],
      ['agënt', 't-2'],
      ['ops', 't-2'],
      ['op', 's;2:t-2'],
    ] as const;
    for (const [agent, taskId] of calls) {
      const ctx = createSkillCallContext({
        agent,
        skill: 'review',
        correlationId: 'corr',
        signal: new AbortController().signal,
        declarations: readDeclarations(card),
      });
      const chain = new SkillCallChain([{ extension, required: true }], ctx, {
        report: () => Promise.resolve(),
      });
      await chain.runBefore();
      expect(await chain.runAfter({ ok: true, task: { ...task, id: taskId } })).toBeUndefined();
    }
    expect(events.map((e) => e.id)).toEqual(
      calls.map(([agent, taskId]) => deterministicEventId('world.state.delta', agent, taskId)),
    );
    expect(new Set(events.map((e) => e.id)).size).toBe(calls.length);
  });

  it('publishes invalid entries on world.state.delta.rejected with reasons', async () => {
    const { bus, events } = recordingBus();
    const bad = {
      content: {
        $case: 'data' as const,
        value: {
          deltas: [
            { domain: 'ci', path: 'data.ok', op: 'set', value: 1 },
            { domain: 'ci', path: 'data.__proto__.x', op: 'set', value: 1 },
            { domain: 'ci', path: 'data.n', op: 'inc', value: 'not a number' },
          ],
        },
      },
      metadata: { mimeType: WORLDSTATE_DELTA_MIME },
      filename: '',
      mediaType: '',
    };
    await run(createEffectDomainExtension({ bus }), { ok: true, task: taskWith([[bad]]) });
    expect(events.map((e) => e.topic)).toEqual(['world.state.delta', 'world.state.delta.rejected']);
    expect(events[0]?.payload['deltas']).toEqual([
      { domain: 'ci', path: 'data.ok', op: 'set', value: 1 },
    ]);
    const rejected = events[1]?.payload['rejected'] as { index: number; reason: string }[];
    expect(rejected.map((r) => r.index)).toEqual([1, 2]);
    expect(rejected.every((r) => r.reason.length > 0)).toBe(true);
  });

  it('publishes nothing for a task without delta parts or a failure without a task', async () => {
    const { bus, events } = recordingBus();
    await run(createEffectDomainExtension({ bus }), { ok: true, task: taskWith([]) });
    await run(createEffectDomainExtension({ bus }), {
      ok: false,
      error: new FleetgateError('FLEETGATE_CALL_FAILED'),
    });
    expect(events).toEqual([]);
  });

  it('publishes the deltas of a failed task too, with its state', async () => {
    const { bus, events } = recordingBus();
    const task = taskWith(
      [[createWorldStateDeltaPart([{ domain: 'ci', path: 'data.a', op: 'inc', value: 1 }])]],
      TaskState.TASK_STATE_FAILED,
    );
    await run(createEffectDomainExtension({ bus }), {
      ok: false,
      task,
      error: new FleetgateError('FLEETGATE_TASK_FAILED'),
    });
    expect(events).toHaveLength(1);
    expect(events[0]?.payload['state']).toBe('failed');
  });
});

describe('on a bus that answers at once (publishNow)', () => {
  function answeringBus(refuse?: string) {
    const events: { via: 'now' | 'promise'; topic: string; id?: string | undefined }[] = [];
    const bus: ExtensionEventBus = {
      publish(topic, _payload, options) {
        events.push({ via: 'promise', topic, id: options?.id });
        return topic === refuse
          ? Promise.reject(new Error(`refused ${topic}`))
          : Promise.resolve({});
      },
      publishNow(topic, _payload, options) {
        if (topic === refuse) throw new Error(`refused ${topic}`);
        events.push({ via: 'now', topic, id: options?.id });
        return {};
      },
    };
    return { bus, events };
  }

  function chainOf(bus: ExtensionEventBus) {
    const ctx = createSkillCallContext({
      agent: 'ops',
      skill: 'review',
      correlationId: 'corr-1',
      signal: new AbortController().signal,
      declarations: readDeclarations(card),
    });
    const extensions = [createEffectDomainExtension({ bus }), createCostExtension({ bus })];
    return new SkillCallChain(
      extensions.map((extension) => ({ extension, required: true })),
      ctx,
      { report: () => Promise.resolve() },
    );
  }

  const deltas = taskWith([
    [
      createWorldStateDeltaPart([{ domain: 'ci', path: 'data.a', op: 'inc', value: 1 }]),
      createCostPart({ usage: { input_tokens: 1 } }),
    ],
  ]);

  it('publishes cost and deltas through it: every after hook has run when runAfter returns', async () => {
    const { bus, events } = answeringBus();
    const chain = chainOf(bus);
    await chain.runBefore();
    const settled = chain.runAfter({ ok: true, task: deltas });
    expect(events).toEqual([
      { via: 'now', topic: 'cost.sample', id: undefined },
      {
        via: 'now',
        topic: 'world.state.delta',
        id: taskEventId('world.state.delta', 'ops', 'task-1'),
      },
    ]);
    expect(await settled).toBeUndefined();
  });

  it('fails a required hook whose publish it refuses, as a rejected publish would', async () => {
    const { bus } = answeringBus('world.state.delta');
    const chain = chainOf(bus);
    await chain.runBefore();
    const failure = await chain.runAfter({ ok: true, task: deltas });
    expect(failure?.code).toBe('FLEETGATE_HOOK_FAILED');
    expect(failure?.message).toContain('refused world.state.delta');
  });

  it('sends deltas and rejections as promises, so a refused one never keeps the other back', async () => {
    const { bus, events } = answeringBus('world.state.delta');
    const task = taskWith([
      [
        createWorldStateDeltaPart([
          { domain: 'ci', path: 'data.a', op: 'inc', value: 1 },
          { domain: 'ci', path: 'data.__proto__', op: 'set', value: 1 },
        ]),
      ],
    ]);
    const chain = chainOf(bus);
    await chain.runBefore();
    const failure = await chain.runAfter({ ok: true, task });
    expect(events.filter((e) => e.topic !== 'cost.sample')).toEqual([
      { via: 'promise', topic: 'world.state.delta', id: expect.any(String) as string },
      { via: 'promise', topic: 'world.state.delta.rejected', id: expect.any(String) as string },
    ]);
    expect(failure?.message).toContain('refused world.state.delta');
  });
});

describe('blast-v1', () => {
  it('stamps x-blast-radius only when the skill has a radius', async () => {
    const lookup = (ctx: { skill: string }) =>
      ctx.skill === 'review' ? ('repo' as const) : undefined;
    const task = taskWith([]);
    const declared = await run(createBlastExtension({ lookup }), { ok: true, task }, 'review');
    const undeclared = await run(createBlastExtension({ lookup }), { ok: true, task }, 'other');
    expect(declared.stamps).toEqual({ [STAMPS.blastRadius]: 'repo' });
    expect(undeclared.stamps).toEqual({});
  });
});

describe('hitl-mode-v1', () => {
  it('stamps the mode, and the veto window only for veto', async () => {
    const task = taskWith([]);
    const review = await run(createHitlModeExtension(), { ok: true, task }, 'review');
    const deploy = await run(createHitlModeExtension(), { ok: true, task }, 'deploy');
    const none = await run(createHitlModeExtension(), { ok: true, task }, 'unknown');
    expect(review.stamps).toEqual({
      [STAMPS.hitlMode]: 'veto',
      [STAMPS.hitlVetoTtlMs]: '30000',
    });
    expect(deploy.stamps).toEqual({ [STAMPS.hitlMode]: 'gated' });
    expect(none.stamps).toEqual({});
  });
});

describe('cost-v1', () => {
  it('publishes tokens and cost when the agent sent a cost part', async () => {
    const { bus, events } = recordingBus();
    let clock = 100;
    const task = taskWith([
      [
        createCostPart({
          usage: { input_tokens: 10, output_tokens: 5 },
          costUsd: 0.5,
          success: false,
        }),
      ],
    ]);
    const extension = createCostExtension({ bus, now: () => (clock += 25) });
    const ctx = await run(extension, { ok: true, task });
    expect(ctx.stamps).toEqual({ [STAMPS.costSkill]: 'review' });
    expect(events).toEqual([
      {
        topic: 'cost.sample',
        id: undefined,
        payload: {
          agent: 'ops',
          skill: 'review',
          taskId: 'task-1',
          tokensIn: 10,
          tokensOut: 5,
          costUsd: 0.5,
          wallMs: 25,
          success: false,
          measured: 'agent',
        },
      },
    ]);
  });

  it('publishes wall time only, marked wall-clock, when the agent sent nothing', async () => {
    const { bus, events } = recordingBus();
    const recorded: unknown[] = [];
    const extension = createCostExtension({ bus, record: (s) => void recorded.push(s) });
    await run(extension, { ok: false, error: new FleetgateError('FLEETGATE_CALL_FAILED') });
    expect(events[0]?.payload).toMatchObject({ measured: 'wall-clock', success: false });
    expect(events[0]?.payload).not.toHaveProperty('tokensIn');
    expect(recorded).toHaveLength(1);
  });
});
