import { TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import {
  isInterruptedState,
  isTerminalState,
  normalizeTaskState,
  readTask,
  TASK_STATES,
} from './index.js';

describe('normalizeTaskState', () => {
  it("reads every member of the SDK's TaskState enum as its v1.0 name", () => {
    for (const [name, value] of Object.entries(TaskState)) {
      if (typeof value !== 'number') continue;
      expect(normalizeTaskState(value), name).toBe(normalizeTaskState(name));
    }
  });

  it('maps SDK enums, v1.0 strings and v0.3 strings to one union', () => {
    const cases: [unknown, string][] = [
      [TaskState.TASK_STATE_COMPLETED, 'completed'],
      [TaskState.TASK_STATE_INPUT_REQUIRED, 'input-required'],
      [TaskState.TASK_STATE_AUTH_REQUIRED, 'auth-required'],
      [TaskState.UNRECOGNIZED, 'unknown'],
      ['TASK_STATE_WORKING', 'working'],
      ['TASK_STATE_INPUT_REQUIRED', 'input-required'],
      ['TASK_STATE_REJECTED', 'rejected'],
      ['TASK_STATE_UNSPECIFIED', 'unknown'],
      ['submitted', 'submitted'],
      ['input-required', 'input-required'],
      ['canceled', 'canceled'],
      ['cancelled', 'canceled'],
      ['bogus', 'unknown'],
      [undefined, 'unknown'],
    ];
    for (const [input, expected] of cases)
      expect(normalizeTaskState(input), String(input)).toBe(expected);
  });

  it('classifies terminal and interrupted states', () => {
    const terminal = TASK_STATES.filter(isTerminalState);
    const interrupted = TASK_STATES.filter(isInterruptedState);
    expect(terminal).toEqual(['completed', 'failed', 'canceled', 'rejected']);
    expect(interrupted).toEqual(['input-required', 'auth-required']);
  });
});

describe('readTask', () => {
  it('reads the status text and unwraps a { task } wrapper', () => {
    const task = readTask({
      task: {
        id: 't1',
        contextId: 'c1',
        status: { state: 'TASK_STATE_FAILED', message: { parts: [{ text: 'boom' }] } },
      },
    });
    expect(task).toEqual({
      id: 't1',
      contextId: 'c1',
      state: 'failed',
      statusText: 'boom',
      artifacts: [],
      metadata: {},
    });
  });

  it('throws a coded error naming the missing field', () => {
    expect(() => readTask({ status: {} })).toThrow(/task.id must be a non-empty string/);
    expect(() => readTask({ id: 'x' })).toThrow(/status must be an object/);
    expect(() => readTask('x')).toThrow(
      expect.objectContaining({ code: 'FLEETGATE_TASK_INVALID' }),
    );
  });

  it('lists undecodable parts without dropping the artifact', () => {
    const task = readTask({
      id: 't',
      status: { state: 'completed' },
      artifacts: [{ artifactId: 'a', parts: [{ text: 'ok' }, { nothing: true }] }],
    });
    expect(task.artifacts[0]!.parts).toHaveLength(1);
    expect(task.artifacts[0]!.problems).toEqual([
      { partIndex: 1, reason: expect.stringContaining('no text') },
    ]);
  });
});
