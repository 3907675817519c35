import { TaskState, type Task } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';

import { FleetgateError } from '../protocol/index.js';
import { SkillCallChain, createSkillCallContext, type CallOutcome } from '../extensions/index.js';
import { readDeclarations } from '../protocol/index.js';
import { EventCollector } from '../bus/index.js';
import { createTaskTerminal, outcomeForTask, type TaskTerminal } from './terminal.js';

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

function chain(outcomes: CallOutcome[], after?: () => void) {
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
          after: (_ctx, outcome) => {
            outcomes.push(outcome);
            after?.();
          },
        },
      },
    ],
    ctx,
    { report: () => Promise.resolve() },
  );
}

const CALL = { agent: 'a', skill: 's', correlationId: 'c', startedAt: 1 };

/** A terminal whose rebuilt chains record into `outcomes`. */
function terminalWith(
  outcomes: CallOutcome[],
  options: Parameters<typeof createTaskTerminal>[0] = {},
) {
  const terminal = createTaskTerminal(options);
  terminal.bindChains(() => Promise.resolve(chain(outcomes)));
  return terminal;
}

describe('task terminal', () => {
  it('runs the after hooks once when several paths settle the held task', async () => {
    const outcomes: CallOutcome[] = [];
    const terminal = terminalWith(outcomes);
    terminal.hold(CALL, 'task-1');
    const results = await Promise.all([
      terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED)),
      terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED)),
    ]);
    expect(results.map((r) => r.settled)).toEqual([true, false]);
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]?.ok).toBe(true);
    expect(terminal.held()).toEqual([]);
  });

  it('keeps held calls apart per agent: one agent cannot settle another agent’s task id', async () => {
    const outcomes: CallOutcome[] = [];
    const terminal = terminalWith(outcomes);
    terminal.hold(CALL, 'task-1');
    expect(await terminal.settle('evil', task(TaskState.TASK_STATE_COMPLETED))).toEqual({
      settled: false,
      reason: 'unknown',
    });
    expect(outcomes).toEqual([]);
    expect(terminal.held()).toMatchObject([{ agent: 'a', taskId: 'task-1', skill: 's' }]);
  });

  it('ignores a non-terminal task and keeps the call held', async () => {
    const terminal = terminalWith([]);
    terminal.hold(CALL, 'task-1');
    expect(await terminal.settle('a', task(TaskState.TASK_STATE_WORKING))).toEqual({
      settled: false,
      reason: 'not-terminal',
    });
    expect(await terminal.settle('a', task(TaskState.TASK_STATE_INPUT_REQUIRED))).toMatchObject({
      settled: false,
    });
    expect(terminal.held().map((p) => p.taskId)).toEqual(['task-1']);
  });

  it('honours a claim that another replica already holds', async () => {
    const outcomes: CallOutcome[] = [];
    const terminal = terminalWith(outcomes, { claim: () => Promise.resolve(false) });
    terminal.hold(CALL, 'task-1');
    expect(await terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED))).toEqual({
      settled: false,
      reason: 'claimed',
    });
    expect(outcomes).toEqual([]);
  });

  it('abandons a held call with a failed outcome', async () => {
    const outcomes: CallOutcome[] = [];
    const terminal = terminalWith(outcomes);
    terminal.hold(CALL, 'task-1');
    await terminal.abandon('a', 'task-1', new FleetgateError('FLEETGATE_CALL_TIMEOUT'));
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

  it('gives the after hooks FLEETGATE_CALL_OUTCOME_UNKNOWN for a task its agent forgot, once', async () => {
    const outcomes: CallOutcome[] = [];
    const settled: string[] = [];
    const terminal = terminalWith(outcomes, {
      onSettled: (s) => Promise.resolve(void settled.push(s.via)),
    });
    const forgotten = await terminal.settle('a', task(TaskState.TASK_STATE_FAILED), 'forgotten', {
      call: CALL,
    });
    expect(forgotten.settled).toBe(true);
    // A late push of the task's end loses the claim: nothing runs again.
    const late = await terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED), 'push', {
      call: CALL,
    });
    expect(late).toEqual({ settled: false, reason: 'claimed' });
    expect(settled).toEqual(['forgotten']);
    expect(outcomes).toHaveLength(1);
    const [outcome] = outcomes;
    expect(outcome?.ok).toBe(false);
    if (outcome?.ok === false) {
      expect(outcome.error.code).toBe('FLEETGATE_CALL_OUTCOME_UNKNOWN');
      expect(outcome.error.message).toMatch(/^Agent a no longer knows task task-1: /);
      expect(outcome.error.details).toEqual({ agent: 'a', taskId: 'task-1' });
    }
  });

  it('settles a reply with its own chain once, replacing an older held call of the task', async () => {
    const older: CallOutcome[] = [];
    const outcomes: CallOutcome[] = [];
    const terminal = terminalWith(older);
    terminal.hold(CALL, 'task-1');
    const c = chain(outcomes);
    await c.runBefore();
    const first = await terminal.settle('a', task(TaskState.TASK_STATE_FAILED), 'reply', {
      chain: c,
    });
    expect(first.settled).toBe(true);
    expect(outcomes.map((o) => o.ok)).toEqual([false]);
    expect(terminal.held()).toEqual([]);
    expect(await terminal.settle('a', task(TaskState.TASK_STATE_FAILED))).toEqual({
      settled: false,
      reason: 'unknown',
    });
    expect(older).toEqual([]);
  });

  it('tells onSettled once, on the winning path, with the call', async () => {
    const settled: string[] = [];
    const terminal = terminalWith([], {
      onSettled: (s) => {
        settled.push(`${s.agent}/${s.taskId}/${s.via}/${s.call.skill}`);
        return Promise.resolve();
      },
    });
    terminal.hold(CALL, 'task-1');
    await terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED), 'push');
    await terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED), 'poll', { call: CALL });
    expect(settled).toEqual(['a/task-1/push/s']);
  });
});

describe('task terminal, durable', () => {
  /** Records whose claim answers from `answers` in turn (`throw` throws a database error). */
  function records(answers: ('win' | 'lose' | 'throw')[]) {
    const claims: string[] = [];
    return {
      claims,
      claim: (agent: string, taskId: string) => {
        claims.push(`${agent}/${taskId}`);
        const answer = answers.shift() ?? 'lose';
        if (answer === 'throw') return Promise.reject(new Error('database is gone'));
        return Promise.resolve(answer === 'win');
      },
    };
  }

  function durableTerminal(
    answers: ('win' | 'lose' | 'throw')[],
    effects: string[],
  ): { terminal: TaskTerminal; claims: string[] } {
    const collector = new EventCollector({
      publish: () => Promise.reject(new Error('nothing is published outside a claim here')),
    });
    const store = records(answers);
    const terminal = createTaskTerminal({ durable: { records: store, collector } });
    // The chain's after hook defers a side effect, as cost-v1 defers its record.
    terminal.bindChains(() =>
      Promise.resolve(chain([], () => void collector.defer(() => void effects.push('recorded')))),
    );
    return { terminal, claims: store.claims };
  }

  it('runs deferred effects only on the path that won the claim', async () => {
    const effects: string[] = [];
    const { terminal } = durableTerminal(['lose', 'win'], effects);
    expect(
      await terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED), 'poll', { call: CALL }),
    ).toEqual({ settled: false, reason: 'claimed' });
    expect(effects).toEqual([]);
    const won = await terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED), 'push', {
      call: CALL,
    });
    expect(won.settled).toBe(true);
    expect(effects).toEqual(['recorded']);
  });

  it('puts the held call back when the claim throws, so a retry settles it', async () => {
    const effects: string[] = [];
    const { terminal, claims } = durableTerminal(['throw', 'win'], effects);
    terminal.hold(CALL, 'task-1');
    await expect(terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED))).rejects.toThrow(
      'database is gone',
    );
    expect(terminal.held().map((h) => h.taskId)).toEqual(['task-1']);
    expect(effects).toEqual([]);
    expect((await terminal.settle('a', task(TaskState.TASK_STATE_COMPLETED))).settled).toBe(true);
    expect(claims).toEqual(['a/task-1', 'a/task-1']);
    expect(effects).toEqual(['recorded']);
  });
});
