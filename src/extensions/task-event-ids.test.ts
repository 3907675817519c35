import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { deterministicEventId } from '../protocol/index.js';
import { TaskEventIds } from './task-event-ids.js';

describe('TaskEventIds', () => {
  it('gives deterministicEventId(topic, agent, taskId) for any agents and task ids, in any order', () => {
    // ASCII and not, short and longer than the buffer, with separators and digits inside.
    const text = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.constantFrom(
        '',
        '1:a;',
        'ops;3:x',
        'agënt',
        'tâsk-ÿ',
        '✓',
        '\ud800',
        'a'.repeat(2100),
        `t-${'9'.repeat(1500)}`,
      ),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(text, text), { minLength: 1, maxLength: 12 }), (calls) => {
        const ids = new TaskEventIds('world.state.delta');
        return calls.every(
          ([agent, taskId]) =>
            ids.of(agent, taskId) === deterministicEventId('world.state.delta', agent, taskId),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('keeps ids apart that only a misplaced separator would join', () => {
    const ids = new TaskEventIds('world.state.delta');
    const a = ids.of('ops', 's;2:t-2');
    const b = ids.of('op', 's;2:t-2');
    const c = ids.of('ops', 't-2');
    expect(new Set([a, b, c]).size).toBe(3);
    // Pinned: `printf '17:world.state.delta;3:ops;3:t-2;' | sha256sum | cut -c1-32`.
    expect(c).toBe('cad0173674db67319ad0d6d98e59b33d');
  });
});
