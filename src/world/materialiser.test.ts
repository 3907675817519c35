import { describe, expect, it } from 'vitest';
import { createInMemoryEventBus } from '../bus/index.js';
import { createWorldMaterialiser } from './materialiser.js';
import { createMemoryWorldStore } from './memory-world-store.js';

describe('createWorldMaterialiser', () => {
  it('hands out its functions as own properties that do not depend on `this`', async () => {
    const bus = createInMemoryEventBus();
    const world = createWorldMaterialiser({
      store: createMemoryWorldStore(),
      bus,
      seeds: { ci: { data: { n: 0 } } },
    });
    // A copy keeps only own properties, and calls them on itself, not on the materialiser.
    const copy = { ...world };
    expect(Object.keys(copy)).toEqual([
      'start',
      'stop',
      'apply',
      'applyBatch',
      'getWorld',
      'getDomain',
      'history',
      'replay',
      'prune',
    ]);
    await copy.start();
    const report = await copy.apply({
      id: 'e1',
      topic: 'world.state.delta',
      time: '2026-11-30T05:00:00.000Z',
      correlationId: 'c1',
      payload: {
        source: 'quinn',
        skill: 'pr_review',
        taskId: 't1',
        correlationId: 'c1',
        deltas: [{ domain: 'ci', path: 'data.n', op: 'inc', value: 2 }],
      },
    });
    expect(report).toMatchObject({ eventId: 'e1', skipped: false, applied: 1 });
    expect((await copy.getDomain('ci'))?.state).toEqual({ data: { n: 2 } });
    expect((await copy.replay('ci'))?.state).toEqual({ data: { n: 2 } });
    expect(await copy.history('ci')).toHaveLength(1);
    await copy.stop();
    await bus.close();
  });
});
