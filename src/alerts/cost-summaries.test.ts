import { describe, expect, it } from 'vitest';
import { createInMemoryEventBus } from '../bus/index.js';
import type { CostSampleEvent } from '../protocol/index.js';
import { createCostSummaries } from './cost-summaries.js';

function sample(over: Partial<CostSampleEvent> = {}): CostSampleEvent {
  return {
    agent: 'quinn',
    skill: 'pr_review',
    wallMs: 100,
    success: true,
    measured: 'agent',
    ...over,
  };
}

describe('cost summaries', () => {
  it('summarises samples, success rate, p50/p95 wall time, tokens and cost per (agent, skill)', () => {
    let now = 1_000_000;
    const costs = createCostSummaries({ windowMs: 60_000, now: () => now });
    for (let i = 1; i <= 20; i++) {
      costs.record(
        sample({ wallMs: i * 10, success: i % 4 !== 0, tokensIn: 10, tokensOut: 5, costUsd: 0.01 }),
      );
    }
    costs.record(sample({ skill: 'other', wallMs: 1, measured: 'wall-clock' }));
    const s = costs.summary('quinn', 'pr_review')!;
    expect(s).toMatchObject({
      samples: 20,
      successes: 15,
      successRate: 0.75,
      wallMs: { p50: 100, p95: 190, max: 200 },
      tokensIn: 200,
      tokensOut: 100,
      measuredByAgent: 20,
      lastAt: now,
    });
    expect(s.costUsd).toBeCloseTo(0.2);
    expect(costs.summaries().map((x) => x.skill)).toEqual(['other', 'pr_review']);
    now += 60_001;
    expect(costs.summary('quinn', 'pr_review')).toBeUndefined();
    expect(costs.summaries()).toEqual([]);
  });

  it('rolls the window: old samples leave, new ones count', () => {
    let now = 0;
    const costs = createCostSummaries({ windowMs: 1000, now: () => now });
    costs.record(sample({ success: false, wallMs: 900 }));
    now = 600;
    costs.record(sample({ success: true, wallMs: 100 }));
    expect(costs.summary('quinn', 'pr_review')).toMatchObject({ samples: 2, successRate: 0.5 });
    now = 1200;
    expect(costs.summary('quinn', 'pr_review')).toMatchObject({
      samples: 1,
      successRate: 1,
      wallMs: { p50: 100, p95: 100 },
    });
  });

  it('keeps at most maxSamples per key', () => {
    const costs = createCostSummaries({ maxSamples: 3, now: () => 0 });
    for (let i = 0; i < 10; i++) costs.record(sample({ wallMs: i }));
    expect(costs.summary('quinn', 'pr_review')).toMatchObject({
      samples: 3,
      wallMs: { p50: 8, max: 9 },
    });
  });

  it('reads cost.sample from the bus', async () => {
    const bus = createInMemoryEventBus();
    const costs = createCostSummaries();
    await costs.start(bus);
    await bus.publish('cost.sample', sample({ tokensIn: 7 }));
    await bus.idle();
    expect(costs.summary('quinn', 'pr_review')).toMatchObject({ samples: 1, tokensIn: 7 });
    await costs.stop();
    await bus.close();
  });
});
