/**
 * `withEffects` on the SDK's own event bus and request context: validation as reported, one
 * effects artifact at the end and nowhere else, warnings, cancel and throw paths.
 */
import { SendMessageRequest, TaskState } from '@a2a-js/sdk';
import type { AgentExecutionEvent, ExecutionEventBus } from '@a2a-js/sdk/server';
import {
  AgentEvent,
  DefaultExecutionEventBus,
  RequestContext,
  ServerCallContext,
} from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import type { WorldStateDeltaEntry } from '../protocol/index.js';
import {
  BLAST_V1_URI,
  COST_MIME,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  STAMPS,
  WORLDSTATE_DELTA_MIME,
  isFleetgateError,
} from '../protocol/index.js';
import { declareBlast, declareCost, declareEffectDomain } from './card.js';
import { withEffects } from './effects.js';
import type { EffectsWarning, TaskEffects } from './effects-types.js';
import { EFFECTS_ARTIFACT_ID } from './effects-types.js';

const CARD = declareCost(
  declareBlast(
    declareEffectDomain(
      { skills: [{ id: 'triage' }, { id: 'review' }] },
      { triage: ['board'], review: ['ci'] },
    ),
    { triage: 'project', review: 'repo' },
  ),
);

const A: WorldStateDeltaEntry = { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 };
const B: WorldStateDeltaEntry = { domain: 'board', path: 'data.last', op: 'set', value: 'x' };

function requestContext(
  taskId: string,
  metadata: Record<string, unknown> = { [STAMPS.effectDomainSkill]: 'triage' },
  extensions: string[] = [],
): RequestContext {
  const request = SendMessageRequest.fromJSON({
    message: { messageId: `m-${taskId}`, role: 'ROLE_USER', parts: [{ text: 'go' }] },
    metadata,
  });
  return new RequestContext(
    request,
    taskId,
    `ctx-${taskId}`,
    new ServerCallContext({ requestedExtensions: extensions }),
  );
}

function status(taskId: string, state: TaskState): AgentExecutionEvent {
  return AgentEvent.statusUpdate({
    taskId,
    contextId: `ctx-${taskId}`,
    status: { state, message: undefined, timestamp: undefined },
    metadata: undefined,
  });
}

function start(taskId: string): AgentExecutionEvent {
  return AgentEvent.task({
    id: taskId,
    contextId: `ctx-${taskId}`,
    status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  });
}

/** A real SDK bus whose events are recorded. */
function recordingBus(): { bus: ExecutionEventBus; events: AgentExecutionEvent[] } {
  const bus = new DefaultExecutionEventBus();
  const events: AgentExecutionEvent[] = [];
  bus.on('event', (e) => void events.push(e));
  return { bus, events };
}

/** Runs one task whose body gets the effects; returns what was published and warned. */
async function run(
  body: (effects: TaskEffects, bus: ExecutionEventBus) => void | Promise<void>,
  options: { metadata?: Record<string, unknown>; card?: object; extensions?: string[] } = {},
) {
  const warnings: EffectsWarning[] = [];
  const executor = withEffects(
    {
      async execute(ctx, bus, effects) {
        bus.publish(start(ctx.taskId));
        await body(effects, bus);
        bus.publish(status(ctx.taskId, TaskState.TASK_STATE_COMPLETED));
        bus.finished();
      },
    },
    { card: options.card ?? CARD, onWarning: (w) => void warnings.push(w) },
  );
  const { bus, events } = recordingBus();
  const ctx = requestContext('t1', options.metadata, options.extensions);
  let error: unknown;
  try {
    await executor.execute(ctx, bus);
  } catch (caught) {
    error = caught;
  }
  return { events, warnings, error, ctx };
}

function deltaParts(events: AgentExecutionEvent[]) {
  return events.flatMap((e, i) =>
    e.kind === 'artifactUpdate'
      ? (e.data.artifact?.parts ?? [])
          .filter((p) => p.metadata?.['mimeType'] === WORLDSTATE_DELTA_MIME)
          .map((p) => ({ index: i, part: p }))
      : [],
  );
}

describe('withEffects: report() validates as reported', () => {
  const invalid: [string, unknown, string][] = [
    ['a non-object', 'board +1', 'entry'],
    ['a missing domain', { path: 'data.a', op: 'set', value: 1 }, 'domain'],
    ['an empty domain', { domain: '', path: 'data.a', op: 'set', value: 1 }, 'domain'],
    ['a domain with a dot', { domain: 'a.b', path: 'data.a', op: 'set', value: 1 }, 'domain'],
    ['a prototype domain', { domain: '__proto__', path: 'a', op: 'set', value: 1 }, 'domain'],
    ['a missing path', { domain: 'board', op: 'set', value: 1 }, 'path'],
    ['an empty path segment', { domain: 'board', path: 'data..a', op: 'set', value: 1 }, 'path'],
    [
      'a prototype path',
      { domain: 'board', path: 'data.__proto__.a', op: 'set', value: 1 },
      'path',
    ],
    ['an unknown op', { domain: 'board', path: 'data.a', op: 'add', value: 1 }, 'op'],
    ['inc by a string', { domain: 'board', path: 'data.a', op: 'inc', value: '1' }, 'value'],
    ['inc by Infinity', { domain: 'board', path: 'data.a', op: 'inc', value: Infinity }, 'value'],
    ['set without a value', { domain: 'board', path: 'data.a', op: 'set' }, 'value'],
    [
      'a value with an own __proto__',
      { domain: 'board', path: 'a', op: 'set', value: JSON.parse('{"__proto__":{"x":1}}') },
      'value',
    ],
    [
      'a value nested too deep',
      {
        domain: 'board',
        path: 'a',
        op: 'push',
        value: JSON.parse(`${'['.repeat(70)}${']'.repeat(70)}`),
      },
      'value',
    ],
  ];

  it.each(invalid)(
    'refuses %s with FLEETGATE_DELTA_INVALID naming the field',
    async (_, entry, field) => {
      const { error, events } = await run((effects) =>
        effects.report([A, entry as WorldStateDeltaEntry]),
      );
      expect(isFleetgateError(error, 'FLEETGATE_DELTA_INVALID')).toBe(true);
      expect((error as Error).message).toContain(`report(): deltas[1].${field} is invalid`);
      expect((error as { details: unknown }).details).toMatchObject({ index: 1, field });
      // Nothing of the refused call was recorded, and the task never ended: no effects went out.
      expect(deltaParts(events)).toEqual([]);
    },
  );

  it('records nothing of a batch with one bad entry', async () => {
    const { events } = await run((effects) => {
      expect(() => effects.report([A, { ...B, op: 'nope' } as never])).toThrow();
      effects.report(B);
    });
    const [only] = deltaParts(events);
    expect(only?.part.content).toEqual({ $case: 'data', value: { deltas: [B] } });
  });

  it('refuses an invalid cost sample with FLEETGATE_COST_INVALID naming the field', async () => {
    const { error } = await run((effects) => effects.reportCost({ costUsd: -1 }));
    expect(isFleetgateError(error, 'FLEETGATE_COST_INVALID')).toBe(true);
    expect((error as Error).message).toMatch(/^reportCost\(\): costUsd is invalid/);
  });

  it('refuses a report after the task ended', async () => {
    let later: TaskEffects | undefined;
    const { events } = await run((effects) => {
      effects.report(A);
      later = effects;
    });
    expect(deltaParts(events)).toHaveLength(1);
    expect(() => later!.report(B)).toThrow(
      expect.objectContaining({ code: 'FLEETGATE_EFFECTS_CLOSED' }),
    );
  });
});

describe('withEffects: one effects artifact, as the task ends', () => {
  it('sends every report in one delta part on the artifact right before the final status', async () => {
    const { events, warnings } = await run((effects, bus) => {
      effects.report(A);
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: 't1',
          contextId: 'ctx-t1',
          artifact: {
            artifactId: 'progress',
            name: 'progress',
            description: '',
            parts: [
              {
                content: { $case: 'text', value: 'half way' },
                metadata: undefined,
                filename: '',
                mediaType: '',
              },
            ],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      effects.report([B]);
      effects.reportCost({ usage: { input_tokens: 10 }, costUsd: 0.5 });
      effects.reportCost({
        usage: { input_tokens: 5, output_tokens: 2 },
        costUsd: 0.25,
        success: true,
      });
    });
    expect(warnings).toEqual([]);
    expect(events.map((e) => e.kind)).toEqual([
      'task',
      'artifactUpdate',
      'artifactUpdate',
      'statusUpdate',
    ]);
    const parts = deltaParts(events);
    expect(parts).toHaveLength(1);
    expect(parts[0]!.index).toBe(2);
    const effects = events[2]!;
    if (effects.kind !== 'artifactUpdate') throw new Error('not an artifact update');
    expect(effects.data.artifact).toMatchObject({
      artifactId: EFFECTS_ARTIFACT_ID,
      extensions: [EFFECT_DOMAIN_V1_URI, COST_V1_URI],
    });
    expect(effects.data.lastChunk).toBe(true);
    expect(effects.data.artifact!.parts.map((p) => p.content)).toEqual([
      { $case: 'data', value: { deltas: [A, B] } },
      {
        $case: 'data',
        value: { usage: { input_tokens: 15, output_tokens: 2 }, costUsd: 0.75, success: true },
      },
    ]);
    expect(effects.data.artifact!.parts[1]!.metadata).toEqual({ mimeType: COST_MIME });
  });

  it('adds the effects to a terminal task event instead of a separate artifact', async () => {
    const executor = withEffects(
      {
        execute(ctx, bus, effects) {
          effects.report(A);
          bus.publish(
            AgentEvent.task({
              id: ctx.taskId,
              contextId: ctx.contextId,
              status: {
                state: TaskState.TASK_STATE_FAILED,
                message: undefined,
                timestamp: undefined,
              },
              artifacts: [],
              history: [],
              metadata: undefined,
            }),
          );
          bus.finished();
          return Promise.resolve();
        },
      },
      { card: CARD },
    );
    const { bus, events } = recordingBus();
    await executor.execute(requestContext('t2'), bus);
    expect(events).toHaveLength(1);
    const [task] = events;
    if (task?.kind !== 'task') throw new Error('not a task');
    expect(task.data.artifacts.map((a) => a.artifactId)).toEqual([EFFECTS_ARTIFACT_ID]);
  });

  it('sends nothing for a task that reported nothing, and keeps reports across an interrupted turn', async () => {
    const executor = withEffects(
      {
        execute(ctx, bus, effects) {
          const first = effects.deltas.length === 0;
          if (first) bus.publish(start(ctx.taskId));
          effects.report(first ? A : B);
          bus.publish(
            status(
              ctx.taskId,
              first ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_COMPLETED,
            ),
          );
          bus.finished();
          return Promise.resolve();
        },
      },
      { card: CARD },
    );
    const { bus, events } = recordingBus();
    await executor.execute(requestContext('t3'), bus);
    expect(deltaParts(events)).toEqual([]);
    await executor.execute(requestContext('t3'), bus);
    const parts = deltaParts(events);
    expect(parts.map((p) => p.part.content)).toEqual([
      { $case: 'data', value: { deltas: [A, B] } },
    ]);

    const quiet = recordingBus();
    await withEffects(
      {
        execute(ctx, b) {
          b.publish(start(ctx.taskId));
          b.publish(status(ctx.taskId, TaskState.TASK_STATE_COMPLETED));
          return Promise.resolve();
        },
      },
      { card: CARD },
    ).execute(requestContext('t4'), quiet.bus);
    expect(quiet.events.map((e) => e.kind)).toEqual(['task', 'statusUpdate']);
  });

  it('sends what a canceled task reported with its canceled status', async () => {
    let release: () => void = () => undefined;
    const executor = withEffects(
      {
        async execute(ctx, bus, effects) {
          bus.publish(start(ctx.taskId));
          effects.report(A);
          await new Promise<void>((resolve) => (release = resolve));
        },
      },
      { card: CARD },
    );
    const { bus, events } = recordingBus();
    const running = executor.execute(requestContext('t5'), bus);
    await executor.cancelTask('t5', bus);
    release();
    await running;
    expect(events.map((e) => e.kind)).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
    const last = events[2]!;
    expect(last.kind === 'statusUpdate' && last.data.status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    );
    expect(deltaParts(events)).toHaveLength(1);
  });

  it('sends what was reported when the executor throws after starting the task', async () => {
    const { events, error } = await run((effects) => {
      effects.report(A);
      throw new Error('boom');
    });
    expect((error as Error).message).toBe('boom');
    expect(events.map((e) => e.kind)).toEqual(['task', 'artifactUpdate']);
    expect(deltaParts(events)).toHaveLength(1);
  });
});

describe('withEffects: stamps, activation and warnings', () => {
  it('hands the caller stamps over typed and activates the declared extensions requested', async () => {
    let seen: TaskEffects | undefined;
    const { ctx } = await run((effects) => void (seen = effects), {
      metadata: {
        [STAMPS.effectDomainSkill]: 'review',
        [STAMPS.blastRadius]: 'repo',
        [STAMPS.hitlMode]: 'veto',
        [STAMPS.hitlVetoTtlMs]: '60000',
        [STAMPS.costSkill]: 'review',
      },
      extensions: [BLAST_V1_URI, 'https://example.com/ext/other'],
    });
    expect(seen?.skill).toBe('review');
    expect(seen?.stamps).toEqual({
      skill: 'review',
      radius: 'repo',
      hitlMode: 'veto',
      vetoTtlMs: 60_000,
      costSkill: 'review',
    });
    expect(ctx.context.activatedExtensions).toEqual([BLAST_V1_URI]);
  });

  it('drops a stamp that is not valid instead of passing it on', async () => {
    let seen: TaskEffects | undefined;
    await run((effects) => void (seen = effects), {
      metadata: { [STAMPS.blastRadius]: 'galaxy', [STAMPS.hitlMode]: 42 },
    });
    expect(seen?.stamps).toEqual({});
  });

  it('warns when a report names a domain the skill did not declare', async () => {
    const { warnings, events } = await run((effects) =>
      effects.report([A, { domain: 'ci', path: 'data.x', op: 'inc', value: 1 }]),
    );
    expect(warnings).toEqual([
      expect.objectContaining({
        kind: 'undeclared-domain',
        skill: 'triage',
        domain: 'ci',
        message: expect.stringContaining('outside its declared domains (board)'),
      }),
    ]);
    // The delta is still sent: it is a fact, the gateway records it and alerts.
    expect(deltaParts(events)).toHaveLength(1);
  });

  it('warns when the card does not declare the extension a report needs', async () => {
    const { warnings } = await run(
      (effects) => {
        effects.report(A);
        effects.reportCost({ costUsd: 1 });
      },
      { card: { skills: [{ id: 'triage' }] } },
    );
    expect(warnings.map((w) => [w.kind, w.message.match(/declare (\S+)/)?.[1]])).toEqual([
      ['extension-not-declared', 'effect-domain-v1:'],
      ['extension-not-declared', 'cost-v1:'],
    ]);
  });
});
