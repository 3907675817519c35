/**
 * tracker-scale: the task tracker of a gateway (`createGateway`) with 10,000 tasks in flight at
 * once, against a loopback ops agent in its own process that keeps every task `working`
 * (return-immediately calls), records in a SQLite file, events through the outbox relay onto the
 * in-memory bus.
 *
 * - `bytes_per_task`: heap growth (`heapUsed` after forced `gc()`) per task started with
 *   `gw.call` and followed, divided by the tasks (target ≤ 1024), the harness's own list of ids
 *   taken out. No `after` chain is kept per task (the terminal rebuilds it at settle time): what is
 *   left is the tracker's entry and the poll schedule's. Native memory (SQLite) is not on the heap;
 *   `rss_bytes_per_task` is the resident-set growth, noisy, for orientation.
 * - `polls_per_s`: `GetTask` polls the tracker's scheduler completes per second with thousands of
 *   tasks due at once (half the tasks, twice; default per-agent concurrency 4), and
 *   `polls_vs_raw_gettask_ratio` against raw SDK `getTask` calls at the same concurrency on the
 *   same client, in windows before, between and after.
 * - `push_to_event_p50_ms` / `push_to_event_p99_ms`: from calling the push receiver with an
 *   SDK-serialized v1.0 `{task}` body to the task's `world.state.delta` arriving at a bus
 *   subscriber (claim + outbox in one SQLite transaction, relay woken, publish, deliver), one push
 *   at a time with ~9,000 tasks still tracked (target p99 ≤ 10). The gateway's own consumers run
 *   meanwhile, as they do in production: the dispatcher's settle hook, the world-state
 *   materialiser, reconciliation and cost summaries on the same events and the same SQLite file.
 *   Baseline interleaved push by push: a raw in-memory publish→deliver of the same payload
 *   (`bus_publish_to_deliver_p50_ms`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Task } from '@a2a-js/sdk';
import { V1PushNotificationSerializer } from '@a2a-js/sdk/server';

import { OPS_DELTAS, opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { createPushToken } from '../src/tasks/index.js';
import { note, percentile, report } from './report.js';
import { startAgentProcess } from './support/agent-process.js';
import { assembleGateway } from '../src/service/internal.js';

const BENCH = 'tracker-scale';
const SKILL = 'pr_review';
const TASKS = 10_000;
/** Calls in flight while starting the tasks. */
const START_CONCURRENCY = 16;
/** The scheduler's default per-agent concurrency, used for the raw baseline too. */
const POLL_CONCURRENCY = 4;
const RAW_GETTASK_CALLS = 3_000;
const MEMORY_CHUNKS = 4;
const PUSHES = 1_000;
const PUSH_WARMUP = 50;
/** Long enough that the tracker never polls on its own during the run. */
const QUIET_INTERVAL_MS = 3_600_000;

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Heap in use after full collections (needs `--expose-gc`, as `bench/run.ts` passes). */
async function settledHeap(): Promise<{ heap: number; rss: number }> {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('run with --expose-gc (npm run bench does)');
  for (let i = 0; i < 4; i += 1) {
    gc();
    await sleep(20);
  }
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, rss: usage.rss };
}

/** Runs `fn` `total` times with `concurrency` in flight; resolves the elapsed milliseconds. */
async function pool(total: number, concurrency: number, fn: (i: number) => Promise<void>) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next;
        next += 1;
        await fn(i);
      }
    }),
  );
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const agent = await startAgentProcess(fileURLToPath(import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-tracker-scale-'));
  const store = await openGatewayStore(`sqlite:${join(dir, 'tasks.db')}`);
  try {
    const bus = createInMemoryEventBus<OpenTopics>();
    // Counts completed GetTask requests of this gateway (tracker polls and the raw baseline alike).
    let polls = 0;
    const GET_TASK = /"method":\s*"(GetTask|tasks\/get)"/;
    const countingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (typeof init?.body === 'string' && GET_TASK.test(init.body)) polls += 1;
      return response;
    };
    const errors: unknown[] = [];
    // One gateway: the composition root that ships, lent the store and the bus.
    const { gateway: gw, parts } = await assembleGateway(
      { agents: [{ name: 'ops', url: agent.url }] },
      {
        store,
        bus,
        gate: ALLOW_ALL,
        fetch: countingFetch,
        tracking: {
          polling: {
            intervalMs: QUIET_INTERVAL_MS,
            maxIntervalMs: QUIET_INTERVAL_MS,
            perAgentConcurrency: POLL_CONCURRENCY,
          },
        },
        onError: (error) => errors.push(error),
      },
    );
    const { fleet, tracker } = parts;

    // Arrival times by task id, handed to whoever waits for that id.
    const waiters = new Map<string, (at: number) => void>();
    let deltas = 0;
    const arrival = (taskId: string): Promise<number> =>
      new Promise((resolve) => waiters.set(taskId, resolve));
    const onArrival = (e: EventEnvelope): void => {
      const at = performance.now();
      const taskId = (e.payload as { taskId: string }).taskId;
      waiters.get(taskId)?.(at);
      waiters.delete(taskId);
    };
    await bus.subscribe(
      'world.state.delta',
      (e: EventEnvelope) => {
        deltas += 1;
        onArrival(e);
      },
      { name: 'bench-deltas' },
    );
    await bus.subscribe('bench.baseline', onArrival, { name: 'bench-baseline' });

    // Warm-up: a blocking call gives the completed task whose artifacts the pushes carry.
    note('warm-up');
    const template = await gw.call('ops', SKILL, 'go');
    if (template.task === undefined || !template.ok) throw new Error('warm-up call failed');
    for (let i = 0; i < 200; i += 1) await gw.call('ops', SKILL, 'go');
    const { client } = await fleet.agentClient('ops');
    await pool(1_000, POLL_CONCURRENCY, async () => {
      await client.getTask({ tenant: '', id: template.task!.id, historyLength: 0 });
    });
    await gw.settle();

    // Memory: N tasks started (return-immediately) and tracked, in chunks with a heap reading after
    // each, so a one-off change of the heap (V8 dropping caches) shows as an outlier chunk.
    const before = await settledHeap();
    const started: { taskId: string; correlationId: string; token: string }[] = [];
    const checkpoints = [before.heap];
    let startMs = 0;
    let trackMs = 0;
    for (let chunk = 0; chunk < MEMORY_CHUNKS; chunk += 1) {
      const from = started.length;
      startMs += await pool(TASKS / MEMORY_CHUNKS, START_CONCURRENCY, async () => {
        const result = await gw.call('ops', SKILL, 'hold', { mode: 'return-immediately' });
        if (result.terminal || result.task === undefined) throw new Error('task was not working');
        started.push({
          taskId: result.task.id,
          correlationId: result.correlationId,
          token: createPushToken(),
        });
      });
      trackMs += await pool(TASKS / MEMORY_CHUNKS, 1, async (i) => {
        const s = started[from + i]!;
        await tracker.follow({
          agent: 'ops',
          skill: SKILL,
          correlationId: s.correlationId,
          taskId: s.taskId,
          state: 'working',
          pushToken: s.token,
        });
      });
      checkpoints.push((await settledHeap()).heap);
    }
    const tracked = await settledHeap();
    if (tracker.size !== TASKS) throw new Error(`tracking ${tracker.size}, not ${TASKS}`);
    // The harness's own list of ids and tokens is on the heap too: measure a copy of it, take it out.
    const copy = structuredClone(started);
    const listBytes = (await settledHeap()).heap - tracked.heap;
    const totalBytesPerTask = (tracked.heap - before.heap - listBytes) / TASKS;
    copy.length = 0;
    const perChunk = checkpoints
      .slice(1)
      .map((h, i) =>
        ((h - checkpoints[i]! - listBytes / MEMORY_CHUNKS) / (TASKS / MEMORY_CHUNKS)).toFixed(0),
      );
    note(
      `started ${TASKS} in ${(startMs / 1000).toFixed(1)} s (${START_CONCURRENCY} in flight), ` +
        `tracked in ${(trackMs / 1000).toFixed(1)} s; heap +${mb(tracked.heap - before.heap)} ` +
        `(harness list ${mb(listBytes)} taken out); B/task by chunk: ${perChunk.join(', ')}`,
    );

    // Polls: raw getTask at the same concurrency, then every tracked task due at once, then raw.
    const rawWindow = async (): Promise<number> => {
      const ms = await pool(RAW_GETTASK_CALLS, POLL_CONCURRENCY, async (i) => {
        const s = started[(i * 7919) % TASKS]!;
        await client.getTask({ tenant: '', id: s.taskId, historyLength: 0 });
      });
      return RAW_GETTASK_CALLS / (ms / 1000);
    };
    // Half the tasks due at once, a raw window, the other half, a raw window: interleaved.
    await rawWindow(); // discarded: the first window after the memory phase runs slow
    const raw = [await rawWindow()];
    let trackerPolls = 0;
    let trackerMs = 0;
    for (const half of [started.slice(0, TASKS / 2), started.slice(TASKS / 2)]) {
      const polls0 = polls;
      const t0 = performance.now();
      for (const s of half) tracker.pollNow('ops', s.taskId);
      while (polls - polls0 < half.length) {
        if (performance.now() - t0 > 120_000) throw new Error(`only ${polls - polls0} polls`);
        await sleep(1);
      }
      trackerMs += performance.now() - t0;
      trackerPolls += polls - polls0;
      raw.push(await rawWindow());
    }
    const pollRate = trackerPolls / (trackerMs / 1000);
    const rawRate = raw.reduce((a, b) => a + b, 0) / raw.length;
    note(
      `tracker ${Math.round(pollRate)} polls/s over ${trackerPolls} polls; raw getTask ` +
        `${raw.map((r) => Math.round(r)).join(' / ')} per s (concurrency ${POLL_CONCURRENCY})`,
    );
    if (errors.length > 0) throw new Error(`tracker errors: ${String(errors[0])}`);

    // Push → world.state.delta, one at a time, interleaved with the raw bus baseline.
    const serializer = new V1PushNotificationSerializer();
    const templateTask = template.task;
    const pushLatency: number[] = [];
    const busLatency: number[] = [];
    const payload = {
      source: 'ops',
      skill: SKILL,
      deltas: OPS_DELTAS[SKILL],
      taskId: 'baseline',
      correlationId: 'baseline',
      state: 'completed',
    };
    const receive = gw.pushReceiver;
    for (let i = 0; i < PUSH_WARMUP + PUSHES; i += 1) {
      const s = started[i]!;
      const done: Task = { ...templateTask, id: s.taskId };
      const { body, contentType } = serializer.serialize({
        payload: { $case: 'task', value: done },
      });
      const headers = { 'content-type': contentType, 'x-a2a-notification-token': s.token };

      const pushFirst = i % 2 === 0;
      for (const side of pushFirst ? ['push', 'bus'] : ['bus', 'push']) {
        if (side === 'push') {
          const arrived = arrival(s.taskId);
          const p0 = performance.now();
          const answer = await receive({ taskId: s.taskId, headers, body });
          if (answer.status !== 200) throw new Error(`push answered ${answer.status}`);
          const at = await arrived;
          if (i >= PUSH_WARMUP) pushLatency.push(at - p0);
        } else {
          const arrived = arrival(`b${i}`);
          const b0 = performance.now();
          await bus.publish('bench.baseline', { ...payload, taskId: `b${i}` });
          const at = await arrived;
          if (i >= PUSH_WARMUP) busLatency.push(at - b0);
        }
      }
    }
    await gw.settle();
    const claims = tracker.claims();
    note(
      `pushes finished ${claims.push} tasks (lost ${claims.lost}); still tracking ${tracker.size}; ` +
        `world.state.delta events ${deltas}`,
    );
    if (claims.push !== PUSH_WARMUP + PUSHES) throw new Error('not every push finished its task');

    report({
      bench: BENCH,
      metric: 'bytes_per_task',
      value: Math.round(totalBytesPerTask),
      unit: 'B',
      target: '<=1024',
    });
    report({
      bench: BENCH,
      metric: 'rss_bytes_per_task',
      value: Math.round((tracked.rss - before.rss) / TASKS),
      unit: 'B',
    });
    report({ bench: BENCH, metric: 'tracked_tasks', value: TASKS, unit: 'tasks' });
    report({ bench: BENCH, metric: 'polls_per_s', value: Math.round(pollRate), unit: '1/s' });
    report({
      bench: BENCH,
      metric: 'polls_vs_raw_gettask_ratio',
      value: pollRate / rawRate,
      unit: 'ratio',
    });
    report({
      bench: BENCH,
      metric: 'push_to_event_p50_ms',
      value: percentile(pushLatency, 50),
      unit: 'ms',
    });
    report({
      bench: BENCH,
      metric: 'push_to_event_p99_ms',
      value: percentile(pushLatency, 99),
      unit: 'ms',
      target: '<=10',
    });
    report({
      bench: BENCH,
      metric: 'bus_publish_to_deliver_p50_ms',
      value: percentile(busLatency, 50),
      unit: 'ms',
    });
    report({
      bench: BENCH,
      metric: 'push_to_event_vs_bus_p50_ratio',
      value: percentile(pushLatency, 50) / percentile(busLatency, 50),
      unit: 'ratio',
    });

    await gw.close();
    await bus.close();
  } finally {
    agent.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--agent')) {
  // Child mode: the ops agent; `hold` keeps a task working for an hour, anything else completes.
  const agent = await startOpsAgent({
    behaviour: async (call) => ({
      ...(await opsBehaviour(call)),
      ...(call.text === 'hold' ? { delayMs: 3_600_000 } : {}),
    }),
  });
  process.stdout.write(`${JSON.stringify({ url: agent.url })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else {
  await main();
}
