import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PollResult } from './poll-scheduler.js';
import { PollScheduler } from './poll-scheduler.js';

describe('PollScheduler', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('polls each task when due, in due order, with one timer for all of them', async () => {
    const seen: string[] = [];
    const scheduler = new PollScheduler({
      poll: (_agent, taskId) => {
        seen.push(taskId);
        return Promise.resolve('terminal');
      },
    });
    scheduler.add('a', 'late', 3000);
    scheduler.add('a', 'early', 1000);
    scheduler.add('b', 'middle', 2000);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(2001);
    expect(seen).toEqual(['early', 'middle', 'late']);
    expect(scheduler.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('polls a pending task again with a growing interval, and stops when it is terminal', async () => {
    const at: number[] = [];
    let polls = 0;
    const scheduler = new PollScheduler({
      intervalMs: 1000,
      growth: 2,
      maxIntervalMs: 5000,
      poll: () => {
        at.push(Date.now());
        polls += 1;
        return Promise.resolve<PollResult>(polls < 5 ? 'pending' : 'terminal');
      },
    });
    const start = Date.now();
    scheduler.add('a', 't', 0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(at.map((t) => t - start)).toEqual([0, 1000, 3000, 7000, 12000]);
    expect(scheduler.size).toBe(0);
  });

  it('backs off exponentially after errors, capped, and reports them', async () => {
    const at: number[] = [];
    const errors: unknown[] = [];
    const scheduler = new PollScheduler({
      intervalMs: 1000,
      maxIntervalMs: 8000,
      poll: () => {
        at.push(Date.now());
        return Promise.reject(new Error('agent down'));
      },
      onError: (_a, _t, e) => errors.push(e),
    });
    const start = Date.now();
    scheduler.add('a', 't', 0);
    await vi.advanceTimersByTimeAsync(40_000);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(gaps.slice(0, 5)).toEqual([2000, 4000, 8000, 8000, 8000]);
    expect(at[0]).toBe(start);
    expect(errors.length).toBe(at.length);
    scheduler.stop();
  });

  it('never polls one task twice at once, and limits polls in flight per agent', async () => {
    let inFlight = 0;
    let peak = 0;
    const perTask = new Map<string, number>();
    const release: (() => void)[] = [];
    const scheduler = new PollScheduler({
      perAgentConcurrency: 2,
      intervalMs: 10,
      poll: (_agent, taskId) => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        perTask.set(taskId, (perTask.get(taskId) ?? 0) + 1);
        expect(perTask.get(taskId)).toBe(1);
        return new Promise<PollResult>((resolve) =>
          release.push(() => {
            inFlight -= 1;
            perTask.set(taskId, 0);
            resolve('pending');
          }),
        );
      },
    });
    for (let i = 0; i < 6; i += 1) scheduler.add('a', `t${i}`, 0);
    await vi.advanceTimersByTimeAsync(0);
    expect(inFlight).toBe(2);
    for (let round = 0; round < 20; round += 1) {
      scheduler.pollNow('a', 't0');
      release.shift()?.();
      await vi.advanceTimersByTimeAsync(10);
    }
    expect(peak).toBe(2);
    scheduler.stop();
  });

  it('forgets a removed task, including one waiting for an agent slot', async () => {
    const seen: string[] = [];
    let finish: (() => void) | undefined;
    const scheduler = new PollScheduler({
      perAgentConcurrency: 1,
      poll: (_a, taskId) => {
        seen.push(taskId);
        return new Promise<PollResult>((resolve) => (finish = () => resolve('terminal')));
      },
    });
    scheduler.add('a', 'first', 0);
    scheduler.add('a', 'queued', 0);
    await vi.advanceTimersByTimeAsync(0);
    scheduler.remove('a', 'queued');
    finish?.();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(seen).toEqual(['first']);
    expect(scheduler.size).toBe(0);
  });

  it('polls in due order for any set of adds and removals (heap property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 10_000 }), fc.boolean()), {
          minLength: 1,
          maxLength: 60,
        }),
        async (tasks) => {
          const seen: number[] = [];
          const scheduler = new PollScheduler({
            perAgentConcurrency: 1000,
            poll: (_a, taskId) => {
              seen.push(Date.now());
              void taskId;
              return Promise.resolve('terminal');
            },
          });
          const start = Date.now();
          const kept: number[] = [];
          tasks.forEach(([delay, keep], i) => {
            scheduler.add('a', `t${i}`, delay);
            if (keep) kept.push(delay);
          });
          tasks.forEach(([, keep], i) => {
            if (!keep) scheduler.remove('a', `t${i}`);
          });
          await vi.advanceTimersByTimeAsync(10_001);
          expect(seen.map((t) => t - start)).toEqual([...kept].sort((x, y) => x - y));
        },
      ),
      { numRuns: 50 },
    );
  });
});
