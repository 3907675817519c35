import type { StreamResponse, Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SettlePath, SettleResult, TaskTerminal } from '../dispatch/index.js';
import { outcomeForTask } from '../dispatch/index.js';
import { FleetgateError } from '../protocol/index.js';
import type { TaskRecord, TaskRecordStore } from './task-records.js';
import type { TaskTrackerOptions, TrackerFleet } from './tracker.js';
import { TaskTracker } from './tracker.js';

const AGENT = 'ops';
const TASK_ID = 'task-1';

function task(state: TaskState, id = TASK_ID): Task {
  return {
    id,
    contextId: 'ctx',
    status: { state, message: undefined, timestamp: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

/** Task records in memory; the claim is compare-and-set on `terminalAt`, as in the store. */
function memoryRecords(): TaskRecordStore {
  const rows = new Map<string, TaskRecord>();
  const key = (agent: string, taskId: string): string => `${agent}\u0000${taskId}`;
  return {
    create(record) {
      const k = key(record.agent, record.taskId);
      if (!rows.has(k)) rows.set(k, { ...record, terminalAt: null, terminalVia: null });
      return Promise.resolve();
    },
    get: (agent, taskId) => Promise.resolve(rows.get(key(agent, taskId))),
    byTaskId: (taskId) => Promise.resolve([...rows.values()].filter((r) => r.taskId === taskId)),
    inFlight: () => Promise.resolve([...rows.values()].filter((r) => r.terminalAt === null)),
    prune: () => Promise.resolve(0),
    noteState(agent, taskId, state, at) {
      const row = rows.get(key(agent, taskId));
      if (row !== undefined && row.terminalAt === null)
        Object.assign(row, { state, updatedAt: at });
      return Promise.resolve();
    },
    claim(agent, taskId, claim) {
      const row = rows.get(key(agent, taskId));
      if (row === undefined || row.terminalAt !== null) return Promise.resolve(false);
      Object.assign(row, { state: claim.state, terminalAt: claim.at, terminalVia: claim.via });
      return Promise.resolve(true);
    },
  };
}

/** A task terminal that claims through the records and notes every task it settled. */
function recordingTerminal(records: TaskRecordStore): {
  terminal: TaskTerminal;
  settled: { via: SettlePath; task: Task }[];
} {
  const settled: { via: SettlePath; task: Task }[] = [];
  const terminal: TaskTerminal = {
    bindChains: () => undefined,
    hold: (call, taskId) => ({ ...call, taskId, since: 0 }),
    held: () => [],
    async settle(agent, t, via = 'poll'): Promise<SettleResult> {
      const won = await records.claim(agent, t.id, { via, state: 'failed', at: Date.now() });
      if (!won) return { settled: false, reason: 'claimed' };
      settled.push({ via, task: t });
      return { settled: true, outcome: outcomeForTask(t) };
    },
    release: () => false,
    abandon: () => Promise.resolve({ settled: false, reason: 'unknown' }),
    retrying: () => 0,
    stop: () => Promise.resolve(),
    replay: () => Promise.resolve([]),
  };
  return { terminal, settled };
}

/** What the fake agent answers to each `GetTask`: a task, or an error thrown. */
type Answer = Task | Error;

interface Harness {
  tracker: TaskTracker;
  settled: { via: SettlePath; task: Task }[];
  /** When each `GetTask` was asked, relative to the start. */
  asked: number[];
  errors: unknown[];
}

/**
 * A tracker on a fake clock whose agent answers `GetTask` with `answer(n)` for the n-th call
 * (from 0), following one working task from time 0.
 */
async function follow(
  answer: (n: number) => Answer,
  options: Partial<TaskTrackerOptions> & {
    streaming?: boolean;
    /** What resuming the stream throws at once, or the stream the agent resumes. */
    resubscribe?: Error | AsyncIterable<StreamResponse>;
  } = {},
): Promise<Harness> {
  const { streaming = false, resubscribe, ...trackerOptions } = options;
  const start = Date.now();
  const records = memoryRecords();
  const { terminal, settled } = recordingTerminal(records);
  const asked: number[] = [];
  const errors: unknown[] = [];
  const client: Awaited<ReturnType<TrackerFleet['agentClient']>>['client'] = {
    getTask() {
      const n = asked.length;
      asked.push(Date.now() - start);
      const a = answer(n);
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    },
    cancelTask: () => Promise.resolve(task(TaskState.TASK_STATE_CANCELED)),
    createTaskPushNotificationConfig: () => Promise.resolve(undefined),
    resubscribeTask: (): AsyncIterable<StreamResponse> =>
      resubscribe !== undefined && !(resubscribe instanceof Error)
        ? resubscribe
        : {
            [Symbol.asyncIterator]: () => ({
              next: () => Promise.reject(resubscribe ?? new Error('no stream')),
            }),
          },
  };
  const fleet: TrackerFleet = {
    terminal,
    agentClient: () => Promise.resolve({ client, card: { capabilities: { streaming } } }),
  };
  const tracker = new TaskTracker({
    records,
    fleet,
    polling: { intervalMs: 1_000, maxIntervalMs: 30_000 },
    onError: (error) => errors.push(error),
    ...trackerOptions,
  });
  await tracker.follow({
    agent: AGENT,
    skill: 'pr_review',
    correlationId: 'corr',
    taskId: TASK_ID,
    state: 'working',
    ...(streaming ? { resubscribe: true, task: task(TaskState.TASK_STATE_WORKING) } : {}),
  });
  return { tracker, settled, asked, errors };
}

const notFound = (): Error => new TaskNotFoundError(`Task not found: ${TASK_ID}`);
const working = (): Task => task(TaskState.TASK_STATE_WORKING);

describe('task tracker: a task its agent forgot', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps following a task after one not-found answer when the agent shows it again', async () => {
    const h = await follow((n) =>
      n === 0 ? notFound() : n < 4 ? working() : task(TaskState.TASK_STATE_COMPLETED),
    );
    await vi.advanceTimersByTimeAsync(120_000);
    expect(h.settled.map((s) => [s.via, s.task.status?.state])).toEqual([
      ['poll', TaskState.TASK_STATE_COMPLETED],
    ]);
    expect(h.asked).toHaveLength(5);
    expect(h.tracker.claims()).toMatchObject({ poll: 1, forgotten: 0 });
  });

  it('starts the count again when the agent shows the task between not-found answers', async () => {
    // Not found twice, found, then not found for good: the count starts again at the fourth
    // answer, so the third not-found answer after it is the sixth.
    const h = await follow((n) => (n === 2 ? working() : notFound()), {
      forgetAfter: { answers: 3, windowMs: 0 },
    });
    await vi.advanceTimersByTimeAsync(120_000);
    expect(h.settled.map((s) => s.via)).toEqual(['forgotten']);
    expect(h.asked).toHaveLength(6);
  });

  it('settles a task forgotten once after not-found answers spanning the window, and polls no more', async () => {
    const h = await follow(() => notFound());
    // The first poll at 1 s, then backing off: 3 s, 7 s, 15 s — four answers, 14 s apart.
    await vi.advanceTimersByTimeAsync(30_999);
    expect(h.asked).toEqual([1_000, 3_000, 7_000, 15_000]);
    expect(h.settled).toEqual([]);
    // The fifth answer (31 s) is 30 s after the first: the agent no longer knows the task.
    await vi.advanceTimersByTimeAsync(1);
    expect(h.asked).toHaveLength(5);
    expect(h.settled).toHaveLength(1);
    expect(h.settled[0]!.via).toBe('forgotten');
    expect(h.settled[0]!.task).toMatchObject({
      id: TASK_ID,
      status: { state: TaskState.TASK_STATE_FAILED },
      artifacts: [],
    });
    expect(h.tracker.claims()).toMatchObject({ forgotten: 1, poll: 0, timeout: 0 });
    expect(h.tracker.size).toBe(0);
    // The not-found answers before the end were reported as they came.
    expect(h.errors.filter((e) => e instanceof TaskNotFoundError)).toHaveLength(4);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(h.asked).toHaveLength(5);
    // A late sighting of the task (a push, another path) changes nothing.
    expect(await h.tracker.observe(AGENT, task(TaskState.TASK_STATE_COMPLETED), 'push')).toBe(
      false,
    );
    expect(h.settled).toHaveLength(1);
    expect(h.tracker.claims()).toMatchObject({ forgotten: 1, push: 0, lost: 1 });
  });

  it('needs the number of answers as well as the window', async () => {
    const h = await follow(() => notFound(), { forgetAfter: { answers: 3, windowMs: 0 } });
    await vi.advanceTimersByTimeAsync(3_000);
    expect(h.asked).toEqual([1_000, 3_000]);
    expect(h.settled).toEqual([]);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(h.asked).toEqual([1_000, 3_000, 7_000]);
    expect(h.settled.map((s) => s.via)).toEqual(['forgotten']);
  });

  it('takes the window from the longest poll interval by default', async () => {
    const h = await follow(() => notFound(), {
      polling: { intervalMs: 100, maxIntervalMs: 1_000 },
    });
    // Not found at 100 ms, then 300, 700 and 1500: four answers, the last 1.4 s after the first.
    await vi.advanceTimersByTimeAsync(1_499);
    expect(h.settled).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.asked).toEqual([100, 300, 700, 1_500]);
    expect(h.settled.map((s) => s.via)).toEqual(['forgotten']);
  });

  it('never counts a network error, a timeout, a 5xx or a bare 404', async () => {
    const failures = [
      new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') }),
      new FleetgateError('FLEETGATE_CALL_TIMEOUT', 'The agent did not answer in time.'),
      new Error('HTTP error for tasks/get! Status: 502 Bad Gateway. Response: upstream down'),
      new Error('HTTP error for /tasks/task-1: 404 Not Found'),
    ];
    const h = await follow((n) => failures[n % failures.length]!, {
      maxTrackingTimeMs: 86_400_000,
    });
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(h.asked.length).toBeGreaterThan(100);
    expect(h.settled).toEqual([]);
    expect(h.tracker.size).toBe(1);
    h.tracker.stop();
  });

  it('neither counts nor forgets network errors between not-found answers', async () => {
    // Two not-found answers, then the agent unreachable for an hour: two are not three.
    const h = await follow((n) => (n < 2 ? notFound() : new TypeError('fetch failed')), {
      maxTrackingTimeMs: 86_400_000,
    });
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(h.settled).toEqual([]);
    h.tracker.stop();
    const h2 = await follow((n) => (n % 2 === 0 ? notFound() : new TypeError('fetch failed')), {
      maxTrackingTimeMs: 86_400_000,
    });
    await vi.advanceTimersByTimeAsync(120_000);
    // Not found at 1, 7, 31 s (the errors between them at 3 and 15 s): 30 s and three answers.
    expect(h2.asked.slice(0, 5)).toEqual([1_000, 3_000, 7_000, 15_000, 31_000]);
    expect(h2.settled.map((s) => s.via)).toEqual(['forgotten']);
    expect(h2.asked).toHaveLength(5);
  });

  it('counts a resumed stream the agent answers not-found like a poll', async () => {
    const h = await follow(() => notFound(), {
      streaming: true,
      // A stream's error event carries the agent's error as its cause (JSON-RPC v0.3).
      resubscribe: new Error('SSE event contained an error: Task not found (Code: -32001)', {
        cause: notFound(),
      }),
      forgetAfter: { answers: 2, windowMs: 0 },
    });
    // The stream's answer counted; the poll it asks for at once is the second.
    await vi.advanceTimersByTimeAsync(0);
    expect(h.asked).toEqual([0]);
    expect(h.settled.map((s) => s.via)).toEqual(['forgotten']);
  });

  it('starts the count again when the resumed stream shows the task', async () => {
    async function* stream(): AsyncGenerator<StreamResponse> {
      // The agent streams the task at 2 s, then the stream drops.
      await new Promise((r) => setTimeout(r, 2_000));
      yield { payload: { $case: 'task', value: working() } };
      throw new TypeError('terminated');
    }
    const h = await follow(() => notFound(), {
      streaming: true,
      resubscribe: stream(),
      forgetAfter: { answers: 2, windowMs: 0 },
    });
    await vi.advanceTimersByTimeAsync(60_000);
    // Not found at 1 s; the stream at 2 s starts the count again (and asks for a poll at once);
    // not found at 2 s and 6 s: the second answer in a row.
    expect(h.asked.map((t) => Math.floor(t / 1_000))).toEqual([1, 2, 6]);
    expect(h.settled.map((s) => s.via)).toEqual(['forgotten']);
  });
});
