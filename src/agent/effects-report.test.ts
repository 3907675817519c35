/**
 * `report()` and `reportCost()` of a real `withEffects` executor on the SDK's own bus: only plain
 * JSON is taken (refused at once, naming the entry and the place inside the value), what is kept
 * is a snapshot of what was checked, and a bad cost sample is named for what it is.
 */
import { SendMessageRequest, TaskState } from '@a2a-js/sdk';
import type { AgentExecutionEvent } from '@a2a-js/sdk/server';
import {
  AgentEvent,
  DefaultExecutionEventBus,
  RequestContext,
  ServerCallContext,
} from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import type { WorldStateDeltaEntry } from '../protocol/index.js';
import { LIMITS, STAMPS, WORLDSTATE_DELTA_MIME, isFleetgateError } from '../protocol/index.js';
import { declareCost, declareEffectDomain } from './card.js';
import { withEffects } from './effects.js';
import type { TaskEffects } from './effects-types.js';

const CARD = declareCost(
  declareEffectDomain({ skills: [{ id: 'triage' }] }, { triage: ['board'] }),
);

const A: WorldStateDeltaEntry = { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 };
const B: WorldStateDeltaEntry = { domain: 'board', path: 'data.last', op: 'set', value: 'x' };

/** Runs one task whose body gets the effects; returns what was published. */
async function run(body: (effects: TaskEffects) => void) {
  const executor = withEffects(
    {
      execute(ctx, bus, effects) {
        bus.publish(
          AgentEvent.task({
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: {
              state: TaskState.TASK_STATE_WORKING,
              message: undefined,
              timestamp: undefined,
            },
            artifacts: [],
            history: [],
            metadata: undefined,
          }),
        );
        body(effects);
        bus.publish(
          AgentEvent.statusUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            status: {
              state: TaskState.TASK_STATE_COMPLETED,
              message: undefined,
              timestamp: undefined,
            },
            metadata: undefined,
          }),
        );
        bus.finished();
        return Promise.resolve();
      },
    },
    { card: CARD, onWarning: () => undefined },
  );
  const bus = new DefaultExecutionEventBus();
  const events: AgentExecutionEvent[] = [];
  bus.on('event', (e) => void events.push(e));
  const request = SendMessageRequest.fromJSON({
    message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
    metadata: { [STAMPS.effectDomainSkill]: 'triage' },
  });
  // What the body throws (a failed `expect` included) fails the test.
  await executor.execute(new RequestContext(request, 't1', 'ctx-t1', new ServerCallContext()), bus);
  return events;
}

/** The `deltas` of every worldstate-delta part published. */
function sentDeltas(events: AgentExecutionEvent[]): unknown[] {
  return events.flatMap((e): unknown[] =>
    e.kind === 'artifactUpdate'
      ? (e.data.artifact?.parts ?? [])
          .filter((p) => p.metadata?.['mimeType'] === WORLDSTATE_DELTA_MIME)
          .map((p): unknown =>
            p.content?.$case === 'data' ? p.content.value['deltas'] : undefined,
          )
      : [],
  );
}

/** The error `fn` throws (the test fails when it does not throw). */
function thrown(fn: () => void): Error & { code?: string; details?: Record<string, unknown> } {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

class Point {
  x = 1;
}
/** `[1, <hole>, 3]`, built without a sparse literal. */
const sparse: unknown[] = [1];
sparse[2] = 3;

describe('report() takes plain JSON only', () => {
  const notJson: [string, unknown, string][] = [
    ['a function', () => 1, 'not a function'],
    ['a symbol', Symbol('s'), 'not a symbol'],
    ['a bigint', 10n, 'not a bigint'],
    ['NaN', Number.NaN, 'not NaN'],
    ['Infinity inside an object', { x: Infinity }, 'not Infinity (at value.x)'],
    ['-Infinity inside an array', [1, -Infinity], 'not -Infinity (at value[1])'],
    ['a Map', new Map([['k', 1]]), 'not an instance of Map'],
    ['a Set inside an object', { tags: new Set(['a']) }, 'not an instance of Set (at value.tags)'],
    ['a Date', new Date(0), 'not an instance of Date'],
    ['a class instance', new Point(), 'not an instance of Point'],
    ['an undefined property', { a: 1, b: undefined }, 'not undefined (at value.b)'],
    ['an undefined item', [1, undefined], 'not undefined (at value[1])'],
    ['a hole of a sparse array', sparse, 'not undefined (at value[1])'],
    [
      'a method deep inside',
      { pr: { checks: [{ name: 'ci', rerun() {} }] } },
      'not a function (at value.pr.checks[0].rerun)',
    ],
  ];

  it.each(notJson)(
    'refuses %s with FLEETGATE_DELTA_INVALID naming the entry and where, and keeps the other deltas',
    async (_, value, problem) => {
      let error: ReturnType<typeof thrown> | undefined;
      const events = await run((effects) => {
        effects.report(A);
        error = thrown(() => effects.report([B, { ...B, path: 'data.odd', value }]));
        effects.report(B);
      });
      expect(isFleetgateError(error, 'FLEETGATE_DELTA_INVALID')).toBe(true);
      expect(error!.message).toBe(
        `report(): deltas[1].value is invalid: value must be plain JSON, ${problem}`,
      );
      expect(error!.details).toMatchObject({ index: 1, field: 'value' });
      // The refused call recorded nothing; everything else of the task went out.
      expect(sentDeltas(events)).toEqual([[A, B]]);
    },
  );

  it('words a non-finite inc as the number it is', async () => {
    await run((effects) => {
      const error = thrown(() => effects.report({ ...A, value: Number.NaN }));
      expect(error.message).toBe(
        'report(): deltas[0].value is invalid: value must be a finite number for op "inc" (got NaN)',
      );
    });
  });

  it('takes every kind of JSON value, a null-prototype object included', async () => {
    const values: unknown[] = [
      null,
      true,
      0,
      -1.5,
      '',
      [],
      {},
      { list: [1, 'two', null, { three: [false] }] },
      Object.assign(Object.create(null) as object, { k: 'v' }),
    ];
    const events = await run((effects) => {
      effects.report(values.map((value, i) => ({ ...B, path: `data.v${i}`, value })));
    });
    expect(sentDeltas(events)).toEqual([
      values.map((value, i) => ({ ...B, path: `data.v${i}`, value })),
    ]);
  });
});

describe('report() keeps a snapshot', () => {
  it('sends what was reported, not what the caller changed afterwards', async () => {
    const value: Record<string, unknown> = { n: 1, list: [{ id: 1 }] };
    let kept: readonly WorldStateDeltaEntry[] = [];
    const events = await run((effects) => {
      effects.report({ ...B, value });
      value['big'] = 'z'.repeat(LIMITS.deltaValueBytes + 1);
      (value['list'] as { id: number }[]).push({ id: 2 });
      (value['list'] as { id: number }[])[0]!.id = 9;
      kept = effects.deltas;
    });
    const reported = { ...B, value: { n: 1, list: [{ id: 1 }] } };
    // Keys first: a failure then reads without the 64 KiB string.
    expect(Object.keys(kept[0]?.value as object)).toEqual(['n', 'list']);
    expect(kept).toEqual([reported]);
    expect(sentDeltas(events)).toEqual([[reported]]);
  });
});

describe('reportCost() names what is wrong', () => {
  it.each([
    ['a string', 'cheap', 'string'],
    ['null', null, 'null'],
    ['an array', [1], 'array'],
    ['a number', 3, 'number'],
  ])('refuses %s as a sample that must be an object', async (_, sample, kind) => {
    await run((effects) => {
      const error = thrown(() => effects.reportCost(sample as never));
      expect(isFleetgateError(error, 'FLEETGATE_COST_INVALID')).toBe(true);
      expect(error.message).toBe(`reportCost(): the sample must be an object (got ${kind})`);
      expect(error.details).toMatchObject({ field: 'sample' });
    });
  });

  it.each([
    ['usage.input_tokens', { usage: { input_tokens: 1.5 } }],
    ['usage', { usage: 'many' }],
    ['durationMs', { durationMs: -1 }],
    ['success', { costUsd: 0.1, success: 'yes' }],
  ])('names the field %s of a sample', async (field, sample) => {
    await run((effects) => {
      const error = thrown(() => effects.reportCost(sample as never));
      expect(error.message).toMatch(
        new RegExp(`^reportCost\\(\\): ${field} is invalid: ${field} `),
      );
      expect(error.details).toMatchObject({ field });
    });
  });
});
