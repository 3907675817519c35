import { afterEach, describe, expect, it, vi } from 'vitest';
import { createInMemoryEventBus } from '../../bus/index.js';
import type { DispatchRecord } from '../../dispatch/index.js';
import { createHubDispatchWatcher } from './context.js';
import { createEventHub } from './event-hub.js';

function recordOf(status: DispatchRecord['status']): DispatchRecord {
  return {
    id: 'd-1',
    agent: 'ops',
    skill: 'sitrep',
    correlationId: 'c-1',
    status,
    taskId: 't-1',
    createdAt: 1,
    updatedAt: 2,
    result: null,
  };
}

/** Lets queued microtasks and immediates run (the bus delivers on microtasks). */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

describe('dispatch watcher', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function setup(read: () => Promise<DispatchRecord | undefined>) {
    const bus = createInMemoryEventBus();
    const hub = createEventHub({
      bus,
      retain: 100,
      clientBuffer: 100,
      heartbeatMs: 60_000,
      maxClients: 10,
      sequenced: false,
      onError: (e) => {
        throw e;
      },
    });
    await hub.start();
    const watcher = createHubDispatchWatcher({ dispatchRecord: () => read() }, hub);
    cleanup.push(
      () => bus.close(),
      () => hub.close(),
      () => watcher.close(),
    );
    return { bus, watcher };
  }

  it('ends a wait on a completion published while the first read is in flight, with no timer', async () => {
    // Timers are frozen: only the event can end the wait.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let status: DispatchRecord['status'] = 'running';
    let reads = 0;
    const { bus, watcher } = await setup(async () => {
      reads += 1;
      const seen = recordOf(status);
      if (reads === 1) {
        // The dispatch ends (and its event is delivered) after this read saw it running.
        status = 'completed';
        await bus.publish('skill.dispatch.completed', recordOf('completed'));
        await bus.idle();
      }
      return seen;
    });
    let answer: DispatchRecord | undefined;
    void watcher.settled('d-1', 30_000).then((r) => (answer = r));
    await turns();
    expect(answer?.status).toBe('completed');
    expect(reads).toBe(2);
  });

  it('ends a wait on the dispatch event, not on a poll, and ignores other dispatches', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let status: DispatchRecord['status'] = 'running';
    let reads = 0;
    const { bus, watcher } = await setup(() => {
      reads += 1;
      return Promise.resolve(recordOf(status));
    });
    let answer: DispatchRecord | undefined;
    void watcher.settled('d-1', 30_000).then((r) => (answer = r));
    await turns();
    expect(answer).toBeUndefined();
    await bus.publish('skill.dispatch.completed', { ...recordOf('completed'), id: 'd-2' });
    await turns();
    expect(answer).toBeUndefined();
    expect(reads).toBe(1);
    status = 'completed';
    await bus.publish('skill.dispatch.completed', recordOf('completed'));
    await turns();
    expect(answer?.status).toBe('completed');
    expect(reads).toBe(2);
  });

  it('answers with the dispatch as it stands once the wait times out', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { watcher } = await setup(() => Promise.resolve(recordOf('running')));
    let answer: DispatchRecord | undefined;
    void watcher.settled('d-1', 2_500).then((r) => (answer = r));
    await turns();
    for (let i = 0; i < 3 && answer === undefined; i += 1) {
      await vi.advanceTimersByTimeAsync(1_000);
      await turns();
    }
    expect(answer?.status).toBe('running');
  });
});
