import { TaskState, type Part, type Task } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';

import { createInMemoryEventBus } from '../bus/index.js';
import type { EventEnvelope, OpenTopics } from '../protocol/index.js';
import { WORLDSTATE_DELTA_MIME, readDeclarations } from '../protocol/index.js';
import { SkillCallChain, createHookFailureLog, createSkillCallContext } from './chain.js';
import { createEffectDomainExtension } from './effect-domain.js';

/** A completed task whose one delta part carries `json` as the agent sent it (parsed JSON). */
function taskWithDeltaJson(json: string): Task {
  const part: Part = {
    content: { $case: 'data', value: JSON.parse(json) as unknown },
    metadata: { mimeType: WORLDSTATE_DELTA_MIME },
    filename: '',
    mediaType: '',
  };
  return {
    id: 'task-1',
    contextId: 'ctx',
    status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
    artifacts: [
      {
        artifactId: 'a',
        name: '',
        description: '',
        parts: [part],
        metadata: undefined,
        extensions: [],
      },
    ],
    history: [],
    metadata: undefined,
  };
}

/** Runs the effect-domain-v1 hooks of one call on `task`; returns what a bus subscriber saw. */
async function publishedFor(task: Task): Promise<EventEnvelope[]> {
  const bus = createInMemoryEventBus<OpenTopics>();
  const seen: EventEnvelope[] = [];
  await bus.subscribe('world.state.>', (event) => void seen.push(event), { name: 'observer' });
  const extension = { extension: createEffectDomainExtension({ bus }), required: false };
  const ctx = createSkillCallContext({
    agent: 'ops',
    skill: 'review',
    correlationId: 'corr',
    signal: new AbortController().signal,
    declarations: readDeclarations({}),
  });
  const chain = new SkillCallChain([extension], ctx, createHookFailureLog({ bus }));
  await chain.runBefore();
  expect(await chain.runAfter({ ok: true, task })).toBeUndefined();
  await bus.idle();
  await bus.close();
  return seen;
}

const GOOD = '{ "domain": "ci", "path": "data.n", "op": "inc", "value": 1 }';

describe('effect-domain-v1 applies the protocol rule before anything is published', () => {
  it.each([
    [
      'a __proto__ domain',
      '{ "domain": "__proto__", "path": "data.x", "op": "set", "value": 1 }',
      /^domain must not be "__proto__"/,
    ],
    [
      'a constructor domain',
      '{ "domain": "constructor", "path": "x", "op": "inc", "value": 1 }',
      /^domain must not be "constructor"/,
    ],
    [
      'an own __proto__ key deep in the value',
      '{ "domain": "ci", "path": "data.x", "op": "set", "value": { "a": [{ "b": { "__proto__": { "polluted": true } } }] } }',
      /^value must not have an own "__proto__" key \(at value\.a\[0\]\.b\.__proto__\)/,
    ],
    [
      'an own __proto__ key in a pushed value',
      '{ "domain": "ci", "path": "data.log", "op": "push", "value": { "__proto__": 1 } }',
      /^value must not have an own "__proto__" key/,
    ],
    [
      'a NUL in the domain',
      '{ "domain": "c\\u0000i", "path": "data.x", "op": "inc", "value": 1 }',
      /^domain must not contain a NUL character/,
    ],
    [
      'a NUL in the path',
      '{ "domain": "ci", "path": "data.x\\u0000", "op": "inc", "value": 1 }',
      /^path must not contain a NUL character/,
    ],
  ])('never hands a subscriber %s: it is listed as rejected', async (_, bad, reason) => {
    const seen = await publishedFor(taskWithDeltaJson(`{ "deltas": [${GOOD}, ${bad}] }`));
    const delta = seen.find((e) => e.topic === 'world.state.delta');
    expect((delta?.payload as { deltas: unknown[] }).deltas).toEqual([JSON.parse(GOOD)]);
    const rejected = seen.find((e) => e.topic === 'world.state.delta.rejected');
    const entries = (rejected?.payload as { rejected: { index: number; reason: string }[] })
      .rejected;
    expect(entries).toHaveLength(1);
    expect(entries[0]!.index).toBe(1);
    expect(entries[0]!.reason).toMatch(reason);
  });

  it('refuses a value nested deeper than the limit', async () => {
    const deep = `${'{"a":'.repeat(70)}1${'}'.repeat(70)}`;
    const seen = await publishedFor(
      taskWithDeltaJson(
        `{ "deltas": [{ "domain": "ci", "path": "x", "op": "set", "value": ${deep} }] }`,
      ),
    );
    expect(seen.map((e) => e.topic)).toEqual(['world.state.delta.rejected']);
    const [entry] = (seen[0]!.payload as { rejected: { reason: string }[] }).rejected;
    expect(entry!.reason).toMatch(/^value is nested deeper than 64 levels/);
  });
});
