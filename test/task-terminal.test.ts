/**
 * The task terminal end to end, through gateways (`createGateway`) on real @a2a-js/sdk agents and
 * a real SQLite file: effects only on the winning path, a dispatch ends whichever path settles its
 * task, interrupted tasks handed over, timed-out calls, a hostile agent forging another agent's
 * task id, and a claim that fails once. The library path (a fleet client with no tracker) has its
 * own test of a timed-out call.
 */
import { TaskState, type Task } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorldStateDeltaPart } from '../src/protocol/index.js';
import { OPS_DELTAS, startOpsAgent } from '../examples/agents/ops-agent.js';
import { textPart, type RunningAgent } from '../examples/agents/harness.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { createFleetClient, ExtensionRegistry, registerStandardExtensions } from '../src/index.js';
import type { TaskRecordStore } from '../src/tasks/index.js';
import { createStoreTaskRecords } from '../src/tasks/index.js';
import type { GatewayOptions, TestGateway, World } from './support/gateway.js';
import { gateway, until, world } from './support/gateway.js';

const deltasOf = (w: World, taskId: string): EventEnvelope[] =>
  w.deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Starts a return-immediately call and hands its task to the tracker. */
async function startTask(g: TestGateway, agent = 'ops'): Promise<string> {
  const result = await g.gw.call(agent, 'pr_review', 'go', { mode: 'return-immediately' });
  expect(result.terminal).toBe(false);
  const taskId = result.task!.id;
  await g.tracker.follow({
    agent,
    skill: 'pr_review',
    correlationId: result.correlationId,
    taskId,
    state: result.state === 'message' ? 'unknown' : result.state,
  });
  return taskId;
}

interface Dispatching {
  g: TestGateway;
  /** Every `skill.dispatch.*` event on the bus. */
  events: EventEnvelope[];
  /** The `skill.dispatch.*` topics of one dispatch, in order. */
  topicsOf(id: string): string[];
  stop(): Promise<void>;
}

/** A gateway whose dispatches' events are collected. */
async function dispatching(w: World, options: GatewayOptions = {}): Promise<Dispatching> {
  const events: EventEnvelope[] = [];
  const sub = await w.bus.subscribe('skill.dispatch.>', (e) => void events.push(e), {
    name: `dispatch-${randomUUID()}`,
  });
  const g = await gateway(w, options);
  return {
    g,
    events,
    topicsOf: (id) =>
      events.filter((e) => (e.payload as { id: string }).id === id).map((e) => e.topic),
    stop: async () => {
      await sub.unsubscribe();
      await g.stop();
    },
  };
}

describe('task terminal: side effects beyond the bus', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(30);
  });
  afterAll(() => w.close());

  it('records cost once when two paths race to settle one task', async () => {
    const samples: { taskId?: string }[] = [];
    const sub = await w.bus.subscribe(
      'cost.sample',
      (e) => void samples.push(e.payload as { taskId?: string }),
      {
        name: `cost-${randomUUID()}`,
      },
    );
    const g = await gateway(w, { polling: { intervalMs: 60_000 } });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 10; i += 1) ids.push(await startTask(g));
      await sleep(80);
      const { client } = await g.fleet.agentClient('ops');
      await Promise.all(
        ids.map(async (id) => {
          const done = await client.getTask({ tenant: '', id, historyLength: 0 });
          await Promise.all([
            g.tracker.observe('ops', done, 'push'),
            g.tracker.observe('ops', done, 'poll'),
          ]);
        }),
      );
      await until(() => ids.every((id) => deltasOf(w, id).length > 0));
      await sleep(50);
      for (const id of ids) {
        expect(deltasOf(w, id)).toHaveLength(1);
        expect(samples.filter((s) => s.taskId === id)).toHaveLength(1);
      }
      // The gateway's own summaries counted each task's sample once too.
      expect(g.gw.costs.summary('ops', 'pr_review')?.samples).toBe(ids.length);
    } finally {
      await sub.unsubscribe();
      await g.stop();
    }
  });
});

describe('task terminal: interrupted tasks', () => {
  let w: World;
  beforeAll(async () => {
    // The first message leaves the task input-required; the answer completes it with deltas.
    w = await world(0, (call) =>
      call.text === 'answer' ? {} : { state: 'input-required', statusText: 'which repo?' },
    );
  });
  afterAll(() => w.close());

  it('reports a task handed over already input-required: dispatch awaiting-input, once', async () => {
    const h = await dispatching(w, { polling: { intervalMs: 60_000 } });
    try {
      const record = await h.g.gw
        .dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' })
        .answered();
      expect(record.status).toBe('awaiting-input');
      await until(() => h.topicsOf(record.id).includes('skill.dispatch.awaiting-input'));
      await sleep(50);
      expect(
        h.topicsOf(record.id).filter((t) => t === 'skill.dispatch.awaiting-input'),
      ).toHaveLength(1);
      expect(h.g.tracker.size).toBe(1);
      expect(await h.g.gw.dispatchRecord(record.id)).toMatchObject({ status: 'awaiting-input' });
    } finally {
      await h.stop();
    }
  });

  it('ends an answered dispatch when the follow-up call settles its task, the tracker seeing it later', async () => {
    const h = await dispatching(w, { polling: { intervalMs: 60_000 } });
    try {
      const record = await h.g.gw
        .dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' })
        .answered();
      expect(record.status).toBe('awaiting-input');
      const taskId = record.taskId!;
      // The tracker follows it (and what its start recovered of the test before: still waiting).
      const tracked = h.g.tracker.size;
      const { client } = await h.g.fleet.agentClient('ops');
      const waiting = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
      // The caller answers on the same task: the reply path settles it.
      const answer = await h.g.gw.call('ops', 'pr_review', 'answer', {
        taskId,
        contextId: waiting.contextId,
      });
      expect(answer).toMatchObject({ terminal: true, state: 'completed' });
      // The tracker's own sighting comes later and loses the claim.
      h.g.tracker.pollNow('ops', taskId);
      await until(() => h.g.tracker.claims().lost === 1);
      expect(h.g.tracker.size).toBe(tracked - 1);
      await until(() => deltasOf(w, taskId).length > 0);
      await sleep(50);
      expect(await h.g.gw.dispatchRecord(record.id)).toMatchObject({
        status: 'completed',
        result: { state: 'completed' },
      });
      const ends = h
        .topicsOf(record.id)
        .filter((t) => t === 'skill.dispatch.completed' || t === 'skill.dispatch.failed');
      expect(ends).toEqual(['skill.dispatch.completed']);
      expect(deltasOf(w, taskId)).toHaveLength(1);
    } finally {
      await h.stop();
    }
  });
});

describe('task terminal: a caller timeout', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(300);
  });
  afterAll(() => w.close());

  it('rejects the call but publishes the task’s delta exactly once when it ends at the agent', async () => {
    const g = await gateway(w, { polling: { intervalMs: 20 } });
    try {
      const correlationId = `timeout-${randomUUID()}`;
      await expect(
        g.gw.call('ops', 'pr_review', 'go', { timeoutMs: 50, correlationId }),
      ).rejects.toMatchObject({ code: 'FLEETGATE_CALL_TIMEOUT', details: { detached: true } });
      const mine = (): EventEnvelope[] =>
        w.deltas.filter(
          (e) => (e.payload as { correlationId: string }).correlationId === correlationId,
        );
      await until(() => mine().length > 0, 5_000, 'the timed-out call’s delta');
      await sleep(100);
      expect(mine()).toHaveLength(1);
      expect((mine()[0]!.payload as { deltas: unknown }).deltas).toEqual(OPS_DELTAS['pr_review']);
    } finally {
      await g.stop();
    }
  });
});

describe('the library path (a fleet client, nothing following tasks): a caller timeout', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(200, { state: 'input-required', statusText: 'which repo?' });
  });
  afterAll(() => w.close());

  it('cancels a task still running at the agent and says so on system.error', async () => {
    const reported: EventEnvelope[] = [];
    const sub = await w.bus.subscribe('system.error', (e) => void reported.push(e), {
      name: `errors-${randomUUID()}`,
    });
    // Built from the root door as a library user builds it: no tracker, no store.
    const fleet = createFleetClient({
      registry: registerStandardExtensions(new ExtensionRegistry(), { bus: w.bus }),
      bus: w.bus,
      cards: new Map([['ops', { url: w.agent.url, card: await w.agent.fetchCard() }]]),
    });
    try {
      await expect(fleet.call('ops', 'pr_review', 'go', { timeoutMs: 30 })).rejects.toMatchObject({
        code: 'FLEETGATE_CALL_TIMEOUT',
      });
      await until(() => reported.length > 0, 5_000, 'the cancel report');
      const report = reported[0]!.payload as { message: string; taskId: string };
      expect(report.message).toContain('canceled at the agent');
      const { client } = await fleet.agentClient('ops');
      const remote = await client.getTask({ tenant: '', id: report.taskId, historyLength: 0 });
      expect(remote.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      // Settled (claimed) as it was canceled: a later sighting of the task is a no-op.
      expect(
        await fleet.terminal.settle('ops', remote, 'poll', {
          call: { agent: 'ops', skill: 'pr_review', correlationId: 'c', startedAt: 0 },
        }),
      ).toEqual({ settled: false, reason: 'claimed' });
      expect(fleet.terminal.held()).toEqual([]);
    } finally {
      await sub.unsubscribe();
    }
  });
});

describe('task terminal: a hostile agent', () => {
  let w: World;
  let evil: RunningAgent;
  /** The task id the hostile agent claims in every GetTask answer. */
  let victim: string | undefined;
  beforeAll(async () => {
    w = await world(300);
    evil = await startOpsAgent({
      behaviour: () => ({ delayMs: 60_000 }),
      decorateHandler: (handler) => {
        const forging = Object.create(handler) as typeof handler;
        forging.getTask = async (params, context) => {
          const real: Task = await handler.getTask(params, context);
          if (victim === undefined) return real;
          return {
            ...real,
            id: victim,
            status: { ...real.status!, state: TaskState.TASK_STATE_COMPLETED },
            artifacts: [
              {
                artifactId: 'forged',
                name: 'forged',
                description: '',
                parts: [
                  textPart('forged'),
                  createWorldStateDeltaPart([
                    { domain: 'ci', path: 'data.forgedBy', op: 'set', value: 'evil' },
                  ]),
                ],
                metadata: undefined,
                extensions: [],
              },
            ],
          };
        };
        return forging;
      },
    });
  });
  afterAll(async () => {
    await evil.close();
    await w.close();
  });

  it('refuses a GetTask answer naming another agent’s task; the honest task settles with its own delta', async () => {
    const errors: unknown[] = [];
    const g = await gateway(w, {
      polling: { intervalMs: 20 },
      agents: { evil: evil.url },
      onError: (error) => errors.push(error),
    });
    try {
      const honest = await startTask(g, 'ops');
      victim = honest;
      const forged = await startTask(g, 'evil');
      await until(() => deltasOf(w, honest).length > 0, 5_000, 'the honest delta');
      await sleep(100);
      const published = deltasOf(w, honest);
      expect(published).toHaveLength(1);
      expect(published[0]!.payload).toMatchObject({
        source: 'ops',
        deltas: OPS_DELTAS['pr_review'],
      });
      expect(JSON.stringify(w.deltas)).not.toContain('forgedBy');
      expect(
        errors.some((e) => e instanceof Error && e.message.includes('answered about task')),
      ).toBe(true);
      // The hostile agent's own task is never settled from a forged answer.
      expect(await createStoreTaskRecords(w.store.db).get('evil', forged)).toMatchObject({
        terminalAt: null,
      });
    } finally {
      victim = undefined;
      await g.stop();
    }
  });
});

describe('task terminal: a claim that fails', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(30);
  });
  afterAll(() => w.close());

  it('puts the task back when the claim throws once, and settles it on the retry, once', async () => {
    const real = createStoreTaskRecords(w.store.db);
    let failures = 0;
    const failOnce = (built: TaskRecordStore): TaskRecordStore => ({
      ...built,
      claim: (...args) => {
        if (failures === 0) {
          failures += 1;
          return Promise.reject(new Error('connection terminated unexpectedly'));
        }
        return built.claim(...args);
      },
    });
    const errors: string[] = [];
    const g = await gateway(w, {
      records: (built) => ({ ...built, tasks: failOnce(built.tasks) }),
      polling: { intervalMs: 15 },
      onError: (_error, where) => errors.push(where),
    });
    try {
      const taskId = await startTask(g);
      await until(() => deltasOf(w, taskId).length > 0, 5_000, 'the delta after the retry');
      await sleep(80);
      expect(failures).toBe(1);
      expect(errors).toContain('tracker.claim');
      expect(deltasOf(w, taskId)).toHaveLength(1);
      expect(await real.get('ops', taskId)).toMatchObject({ state: 'completed' });
      expect(g.tracker.size).toBe(0);
    } finally {
      await g.stop();
    }
  });
});

describe('task terminal: group commit of reply claims', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(20);
  });
  afterAll(() => w.close());

  it('commits the claim of a call alone at once, and lets concurrent calls share a commit', async () => {
    const groups: (string | undefined)[] = [];
    const spy = (real: TaskRecordStore): TaskRecordStore => ({
      ...real,
      claim: (agent, taskId, claim, events) => {
        groups.push(claim.group);
        return real.claim(agent, taskId, claim, events);
      },
    });
    const g = await gateway(w, { records: (built) => ({ ...built, tasks: spy(built.tasks) }) });
    try {
      const alone = await g.fleet.call('ops', 'pr_review', 'go');
      expect(alone.terminal).toBe(true);
      expect(groups).toEqual(['turn']);
      groups.length = 0;
      const together = await Promise.all(
        Array.from({ length: 4 }, () => g.fleet.call('ops', 'pr_review', 'go')),
      );
      expect(together.every((r) => r.terminal)).toBe(true);
      // The agent answers after 20 ms: the first three end while others are still in flight.
      expect(groups.filter((group) => group === 'loop').length).toBeGreaterThanOrEqual(3);
      await until(() => w.deltas.length >= 5, 5_000, 'the five deltas');
    } finally {
      await g.stop();
    }
  });
});
