import { TaskState, type Task } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';

import { FleetgateError } from '../protocol/index.js';
import { SkillCallChain, createSkillCallContext, type CallOutcome } from '../extensions/index.js';
import { readDeclarations } from '../protocol/index.js';
import { TerminalRouter, outcomeForTask } from './terminal.js';

function task(state: TaskState): Task {
  return {
    id: 'task-1',
    contextId: 'c',
    status: { state, message: undefined, timestamp: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

function chain(outcomes: CallOutcome[]) {
  const ctx = createSkillCallContext({
    agent: 'a',
    skill: 's',
    correlationId: 'c',
    signal: new AbortController().signal,
    declarations: readDeclarations({}),
  });
  return new SkillCallChain(
    [
      {
        required: false,
        extension: {
          uri: 'urn:x',
          description: 'x',
          after: (_ctx, outcome) => void outcomes.push(outcome),
        },
      },
    ],
    ctx,
    { report: () => Promise.resolve() },
  );
}

describe('TerminalRouter', () => {
  it('runs the after hooks once when several paths report the terminal task', async () => {
    const outcomes: CallOutcome[] = [];
    const router = new TerminalRouter();
    const c = chain(outcomes);
    await c.runBefore();
    router.track('task-1', c);
    const results = await Promise.all([
      router.onTerminal(task(TaskState.TASK_STATE_COMPLETED)),
      router.onTerminal(task(TaskState.TASK_STATE_COMPLETED)),
    ]);
    expect(results.map((r) => r.ran)).toEqual([true, false]);
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]?.ok).toBe(true);
    expect(router.pending()).toEqual([]);
  });

  it('ignores a non-terminal task and keeps the call pending', async () => {
    const router = new TerminalRouter();
    const c = chain([]);
    await c.runBefore();
    router.track('task-1', c);
    expect(await router.onTerminal(task(TaskState.TASK_STATE_WORKING))).toEqual({
      ran: false,
      reason: 'not-terminal',
    });
    expect(await router.onTerminal(task(TaskState.TASK_STATE_INPUT_REQUIRED))).toMatchObject({
      ran: false,
    });
    expect(router.pending().map((p) => p.taskId)).toEqual(['task-1']);
  });

  it('honours a claim that another replica already holds', async () => {
    const outcomes: CallOutcome[] = [];
    const router = new TerminalRouter({ claim: () => Promise.resolve(false) });
    const c = chain(outcomes);
    await c.runBefore();
    router.track('task-1', c);
    expect(await router.onTerminal(task(TaskState.TASK_STATE_COMPLETED))).toEqual({
      ran: false,
      reason: 'claimed',
    });
    expect(outcomes).toEqual([]);
  });

  it('abandons a pending call with a failed outcome', async () => {
    const outcomes: CallOutcome[] = [];
    const router = new TerminalRouter();
    const c = chain(outcomes);
    await c.runBefore();
    router.track('task-1', c);
    await router.abandon('task-1', new FleetgateError('FLEETGATE_CALL_TIMEOUT'));
    expect(outcomes).toMatchObject([{ ok: false }]);
  });

  it('maps failed, canceled and rejected tasks to FLEETGATE_TASK_FAILED with the task', () => {
    for (const state of [
      TaskState.TASK_STATE_FAILED,
      TaskState.TASK_STATE_CANCELED,
      TaskState.TASK_STATE_REJECTED,
    ]) {
      const outcome = outcomeForTask(task(state));
      expect(outcome.ok).toBe(false);
      if (!outcome.ok) {
        expect(outcome.error.code).toBe('FLEETGATE_TASK_FAILED');
        expect(outcome.task?.id).toBe('task-1');
      }
    }
    expect(outcomeForTask(task(TaskState.TASK_STATE_COMPLETED)).ok).toBe(true);
  });

  it('finishes a task terminal on arrival once, replacing an older pending entry of it', async () => {
    const older: CallOutcome[] = [];
    const outcomes: CallOutcome[] = [];
    const router = new TerminalRouter();
    const stale = chain(older);
    await stale.runBefore();
    router.track('task-1', stale);
    const c = chain(outcomes);
    await c.runBefore();
    const first = await router.finish(task(TaskState.TASK_STATE_FAILED), c);
    expect(first.ran).toBe(true);
    expect(outcomes.map((o) => o.ok)).toEqual([false]);
    expect(router.pending()).toEqual([]);
    expect(await router.onTerminal(task(TaskState.TASK_STATE_FAILED))).toEqual({
      ran: false,
      reason: 'not-pending',
    });
    expect(older).toEqual([]);
  });

  it('finishes nothing a durable claim gave to another path, and tracks a task not yet terminal', async () => {
    const outcomes: CallOutcome[] = [];
    const router = new TerminalRouter({ claim: () => Promise.resolve(false) });
    const c = chain(outcomes);
    await c.runBefore();
    expect(await router.finish(task(TaskState.TASK_STATE_COMPLETED), c)).toEqual({
      ran: false,
      reason: 'claimed',
    });
    expect(outcomes).toEqual([]);
    expect(await router.finish(task(TaskState.TASK_STATE_WORKING), c)).toEqual({
      ran: false,
      reason: 'not-terminal',
    });
    expect(router.pending().map((p) => p.taskId)).toEqual(['task-1']);
  });
});
