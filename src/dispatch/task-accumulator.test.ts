import { TaskState, type Part, type StreamResponse } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';

import { TaskAccumulator, readReply } from './task-accumulator.js';

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

function artifactEvent(id: string, parts: Part[], append: boolean): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: {
        taskId: 't',
        contextId: 'c',
        artifact: {
          artifactId: id,
          name: id,
          description: '',
          parts,
          metadata: { n: id },
          extensions: append ? [] : ['urn:x'],
        },
        append,
        lastChunk: !append,
        metadata: undefined,
      },
    },
  };
}

describe('TaskAccumulator', () => {
  it('folds task, status and artifact events into the terminal task', () => {
    const acc = new TaskAccumulator();
    acc.apply({
      payload: {
        $case: 'task',
        value: {
          id: 't',
          contextId: 'c',
          status: {
            state: TaskState.TASK_STATE_SUBMITTED,
            message: undefined,
            timestamp: undefined,
          },
          artifacts: [],
          history: [],
          metadata: undefined,
        },
      },
    });
    acc.apply(artifactEvent('a', [text('1')], false));
    acc.apply(artifactEvent('a', [text('2')], true));
    acc.apply(artifactEvent('b', [text('3')], false));
    acc.apply({
      payload: {
        $case: 'statusUpdate',
        value: {
          taskId: 't',
          contextId: 'c',
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            message: undefined,
            timestamp: undefined,
          },
          metadata: undefined,
        },
      },
    });
    const task = acc.task!;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts.map((a) => [a.artifactId, a.parts.length, a.extensions])).toEqual([
      ['a', 2, ['urn:x']],
      ['b', 1, ['urn:x']],
    ]);
    expect(readReply(task, undefined).text).toBe('1\n2\n3');
  });

  it('replaces an artifact sent again without append', () => {
    const acc = new TaskAccumulator();
    acc.apply(artifactEvent('a', [text('old')], false));
    acc.apply(artifactEvent('a', [text('new')], false));
    expect(readReply(acc.task, undefined).text).toBe('new');
  });

  it('keeps a message reply', () => {
    const acc = new TaskAccumulator();
    acc.apply({
      payload: {
        $case: 'message',
        value: {
          messageId: 'm',
          contextId: '',
          taskId: '',
          role: 2,
          parts: [text('hi')],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
      },
    });
    expect(acc.task).toBeUndefined();
    expect(readReply(undefined, acc.message).text).toBe('hi');
  });
});
