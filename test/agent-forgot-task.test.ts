/**
 * A task the gateway follows whose agent forgets it (it restarted with an in-memory task store):
 * the agent answers "task not found" to every look, and after the tracker's rule (`forgetAfter`:
 * three answers in a row spanning the longest poll interval) the call ends `failed`
 * `FLEETGATE_CALL_OUTCOME_UNKNOWN` with one `ops.alert.outcome_unknown`, instead of staying
 * `running` for the whole tracking time and then "timing out". An agent that answers not-found
 * once (a replica behind a load balancer without the task) and then shows the task is followed to
 * the end as before. Real @a2a-js/sdk agents, a real SQLite file; in process, and through the
 * front door (`fleetgate start`, `POST /api/dispatch`, `GET /api/events`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { TaskState, type Task } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/harness.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import type { AssembledGateway } from '../src/service/internal.js';
import { assembleGateway } from '../src/service/internal.js';
import type { ServiceProcess, SseFrame } from './support/gateway-service.js';
import { api, eventually, readEvents, startServiceProcess } from './support/gateway-service.js';

interface Hold {
  promise: Promise<void>;
  release: () => void;
}

const newHold = (): Hold => {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
};

/** The ops agent; each task it starts stays working until `hold` settles. */
const holdingAgent = (
  hold: () => Hold,
  more: Parameters<typeof startOpsAgent>[0] = {},
): Promise<RunningAgent> =>
  startOpsAgent({
    ...more,
    behaviour: async (call): Promise<AgentPlan> => ({
      ...(await opsBehaviour(call)),
      hold: hold().promise,
    }),
  });

/** The agent restarts on its port with an empty task store: it no longer knows any task. */
async function restart(agent: RunningAgent, hold: () => Hold): Promise<RunningAgent> {
  await agent.close();
  return holdingAgent(hold, { port: Number(new URL(agent.url).port) });
}

/** The task record's end as the store has it. */
function taskRow(file: string, taskId: string): { state: string; terminal_via: string | null } {
  const db = new Database(file, { readonly: true });
  try {
    return db
      .prepare('select state, terminal_via from fleetgate_task where task_id = ?')
      .get(taskId) as { state: string; terminal_via: string | null };
  } finally {
    db.close();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('a followed task its agent forgot (in process)', () => {
  let dir: string;
  let hold: Hold;
  let agent: RunningAgent | undefined;
  let assembled: AssembledGateway | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-forgot-'));
  });
  afterEach(async () => {
    hold.release();
    await assembled?.gateway.close();
    assembled = undefined;
    await agent?.close();
    agent = undefined;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function startGateway(file: string, url: string): Promise<AssembledGateway> {
    assembled = await assembleGateway(
      { store: `sqlite:${file}`, agents: [{ name: 'ops', url }] },
      {
        dispatchMode: 'return-immediately',
        // The rule's window is the longest poll interval: 300 ms here.
        tracking: { polling: { intervalMs: 20, maxIntervalMs: 300 } },
      },
    );
    return assembled;
  }

  it('ends the call FLEETGATE_CALL_OUTCOME_UNKNOWN once; a late end of the task changes nothing', async () => {
    hold = newHold();
    agent = await holdingAgent(() => hold);
    const file = join(dir, 'forgot.db');
    const { gateway: gw, parts } = await startGateway(file, agent.url);
    const failed: EventEnvelope[] = [];
    const alerts: EventEnvelope[] = [];
    const deltas: EventEnvelope[] = [];
    await gw.events.subscribe('skill.dispatch.failed', (e) => void failed.push(e), {
      name: 'failed',
    });
    await gw.events.subscribe('ops.alert.outcome_unknown', (e) => void alerts.push(e), {
      name: 'alerts',
    });
    await gw.events.subscribe('world.state.delta', (e) => void deltas.push(e), { name: 'deltas' });

    const sent = await gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'status' }).answered();
    expect(sent.status).toBe('running');
    const taskId = sent.taskId!;
    const old = hold;
    hold = newHold();
    agent = await restart(agent, () => hold);
    old.release(); // the old process's task ends where nobody can see it

    const ended = await eventually(
      async () => {
        const record = await gw.dispatchRecord(sent.id);
        return record?.status === 'running' ? undefined : record;
      },
      20_000,
      'the dispatch to end',
    );
    expect(ended).toMatchObject({ status: 'failed', taskId });
    expect(ended.result?.error?.code).toBe('FLEETGATE_CALL_OUTCOME_UNKNOWN');
    expect(ended.result?.error?.message).toContain(`Agent ops no longer knows task ${taskId}`);
    expect(ended.result?.error?.message).toContain('Check at the agent before sending it again');
    expect(taskRow(file, taskId)).toEqual({ state: 'failed', terminal_via: 'forgotten' });
    expect(parts.tracker.claims()).toMatchObject({ forgotten: 1, timeout: 0 });
    // Nothing was sent again: the restarted agent never saw the call.
    expect(agent.received).toHaveLength(0);

    // The agent shows the task ended after all (a late push, another path): a no-op.
    const late: Task = {
      id: taskId,
      contextId: sent.id,
      status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
      artifacts: [],
      history: [],
      metadata: undefined,
    };
    expect(await parts.tracker.observe('ops', late, 'push')).toBe(false);
    await gw.settle();
    await sleep(100);
    expect(await gw.dispatchRecord(sent.id)).toMatchObject({
      status: 'failed',
      result: ended.result,
    });
    expect(taskRow(file, taskId)).toEqual({ state: 'failed', terminal_via: 'forgotten' });
    const mine = (e: EventEnvelope): boolean => (e.payload as { id?: string }).id === sent.id;
    expect(failed.filter(mine)).toHaveLength(1);
    const raised = alerts.filter(
      (e) => (e.payload as { evidence?: { dispatchId?: string } }).evidence?.dispatchId === sent.id,
    );
    expect(raised).toHaveLength(1);
    // The alert says what happened: the agent forgot the task (no gateway stopped).
    expect((raised[0]!.payload as { message: string }).message).toBe(
      `ops/sitrep: dispatch ${sent.id} may or may not have run. ${ended.result!.error!.message}`,
    );
    expect(deltas).toHaveLength(0);
  }, 30_000);

  it('follows a task to its end after one not-found answer (a replica without the task)', async () => {
    hold = newHold();
    let flaky = 1;
    agent = await holdingAgent(() => hold, {
      decorateHandler: (handler) => {
        const balanced = Object.create(handler) as typeof handler;
        balanced.getTask = async (params, context) => {
          if (flaky > 0) {
            flaky -= 1;
            throw new TaskNotFoundError(`Task not found: ${params.id}`);
          }
          return handler.getTask(params, context);
        };
        return balanced;
      },
    });
    const { gateway: gw, parts } = await startGateway(join(dir, 'flaky.db'), agent.url);
    const sent = await gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'status' }).answered();
    expect(sent.status).toBe('running');
    await eventually(() => (flaky === 0 ? true : undefined), 10_000, 'the not-found answer');
    // Well past the rule's window: the task is still followed.
    await sleep(1_000);
    expect(await gw.dispatchRecord(sent.id)).toMatchObject({ status: 'running' });
    hold.release();
    const ended = await eventually(async () => {
      const record = await gw.dispatchRecord(sent.id);
      return record?.status === 'running' ? undefined : record;
    }, 20_000);
    expect(ended).toMatchObject({ status: 'completed', taskId: sent.taskId });
    expect(parts.tracker.claims()).toMatchObject({ poll: 1, forgotten: 0 });
  }, 30_000);
});

describe('a followed task its agent forgot (fleetgate start)', () => {
  let dir: string;
  let hold: Hold;
  let agent: RunningAgent;
  let gateway: ServiceProcess | undefined;
  const watching = new AbortController();

  beforeAll(async () => {
    hold = newHold();
    agent = await holdingAgent(() => hold);
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-forgot-e2e-'));
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'gw.db')}`,
        'bus: memory',
        `agents: [{ name: ops, url: ${agent.url} }]`,
      ].join('\n'),
    );
    gateway = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 });
  }, 90_000);

  afterAll(async () => {
    watching.abort();
    hold.release();
    await gateway?.stop('SIGKILL');
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ends a dispatch whose agent restarted and forgot its task FLEETGATE_CALL_OUTCOME_UNKNOWN, with one alert', async () => {
    const g = gateway!;
    const frames: SseFrame[] = [];
    const events = await readEvents(
      g.url,
      '/api/events?topics=ops.alert.>',
      { signal: watching.signal },
      frames,
    );
    expect(events.status).toBe(200);
    const sent = await api<{ id: string; status: string; taskId?: string }>(
      g.url,
      '/api/dispatch',
      { body: { agent: 'ops', skill: 'sitrep', text: 'status' } },
    );
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ status: 'running' });
    const { id, taskId } = sent.body;
    expect(taskId).toBeDefined();
    expect(agent.received.map((r) => r.taskId)).toEqual([taskId]);

    const old = hold;
    hold = newHold();
    agent = await restart(agent, () => hold);
    old.release();
    const restartedAt = Date.now();

    // The rule with the default polling (1 s, backing off to 30 s): five not-found answers, the
    // last 30 s after the first.
    const ended = await eventually(
      async () => {
        const record = await api<{
          status: string;
          result?: { error?: { code: string; message: string } };
        }>(g.url, `/api/dispatches/${id}`);
        return record.body.status === 'running' ? undefined : record.body;
      },
      60_000,
      'the dispatch to end',
    );
    expect(ended.status).toBe('failed');
    expect(ended.result?.error?.code).toBe('FLEETGATE_CALL_OUTCOME_UNKNOWN');
    expect(ended.result?.error?.message).toContain(`no longer knows task ${taskId}`);
    // Not before the rule's window: 30 s of not-found answers.
    expect(Date.now() - restartedAt).toBeGreaterThanOrEqual(30_000);

    const forIt = (f: SseFrame): boolean =>
      f.data?.topic === 'ops.alert.outcome_unknown' &&
      (f.data.payload?.evidence as { dispatchId?: string } | undefined)?.dispatchId === id;
    await eventually(() => (frames.some(forIt) ? true : undefined), 10_000, 'the alert');
    await sleep(500);
    expect(frames.filter(forIt)).toHaveLength(1);
    // Nothing sent again: the restarted agent never saw the call.
    expect(agent.received).toHaveLength(0);
  }, 120_000);
});
