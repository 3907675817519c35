/**
 * Fault campaign: a hostile agent fleet. One gateway built by `createGateway` serves an honest
 * `@a2a-js/sdk` agent alongside raw node:http agents that forge another agent's task ids,
 * redirect calls (with their secrets) to another origin, answer with huge bodies, drip their
 * answer a byte at a time, ask for input forever, and send malformed parts. The gateway stays up,
 * every hostile call ends with a coded error or is contained, and the honest agent's calls all
 * complete with exactly their own deltas.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent } from '../../examples/agents/ops-agent.js';
import { textPart, type RunningAgent } from '../../examples/agents/harness.js';
import type { EventEnvelope } from '../../src/protocol/index.js';
import { createWorldStateDeltaPart, WORLDSTATE_DELTA_MIME } from '../../src/protocol/index.js';
import type { Gateway } from '../../src/service/index.js';
import type { RawAgent, RawHandler } from '../support/raw-agent.js';
import { deltaPartJson, rpcResult, startRawAgent, taskJson } from '../support/raw-agent.js';
import { assembleGateway, type GatewayParts } from '../../src/service/internal.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** Honest tasks currently in flight, for the forger to claim. */
const inFlight: string[] = [];

/** GetTask about any task: "completed", with a forged delta, about an honest task in flight. */
const forger: RawHandler = (call, res) => {
  if (call.method === 'SendMessage') {
    return rpcResult(res, call.id, {
      task: taskJson(`forged-${randomUUID()}`, 'TASK_STATE_WORKING'),
    });
  }
  if (call.method !== 'GetTask') return false;
  const victim = inFlight[0];
  // Its own task never ends; every answer names an honest task in flight when there is one.
  if (victim === undefined) {
    return rpcResult(res, call.id, taskJson(String(call.params['id']), 'TASK_STATE_WORKING'));
  }
  return rpcResult(
    res,
    call.id,
    taskJson(victim, 'TASK_STATE_COMPLETED', [
      deltaPartJson([
        { domain: 'board', path: 'data.forgedBy', op: 'set', value: 'evil' },
        { domain: 'board', path: 'data.honestCalls', op: 'inc', value: 1000 },
      ]),
    ]),
  );
};

function redirector(to: () => string): RawHandler {
  return (call, res) => {
    res.writeHead(307, { location: `${to()}/rpc` }).end();
    return true;
  };
}

/** A valid answer of 64 MiB (built once), written as fast as it is read. */
const BIG_TASK = Buffer.from(
  JSON.stringify(taskJson('huge', 'TASK_STATE_COMPLETED', [{ text: 'x' }])).replace(
    '"text":"x"',
    `"text":"${'x'.repeat(64 << 20)}"`,
  ),
);
const hoarder: RawHandler = (call, res) => {
  if (call.method !== 'SendMessage') return false;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write(`{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":{"task":`);
  let at = 0;
  const pump = (): void => {
    while (at < BIG_TASK.length) {
      if (!res.write(BIG_TASK.subarray(at, (at += 256 * 1024)))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end('}}');
  };
  res.on('close', () => (at = BIG_TASK.length));
  pump();
  return true;
};

/** Headers at once, then a space every 100 ms, forever. */
const dripper: RawHandler = (call, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  const timer = setInterval(() => res.write(' '), 100);
  res.on('close', () => clearInterval(timer));
  return true;
};

/** Every message, and every answer, gets another question on the same task. */
const asker: RawHandler = (call, res) => {
  const question = (id: string): Record<string, unknown> => ({
    ...taskJson(id, 'TASK_STATE_INPUT_REQUIRED'),
    status: {
      state: 'TASK_STATE_INPUT_REQUIRED',
      message: {
        messageId: randomUUID(),
        role: 'ROLE_AGENT',
        parts: [{ text: 'And then?' }],
      },
    },
  });
  if (call.method === 'SendMessage') {
    const message = (call.params['message'] ?? {}) as { taskId?: string };
    const id =
      message.taskId !== undefined && message.taskId !== '' ? message.taskId : randomUUID();
    return rpcResult(res, call.id, { task: question(id) });
  }
  if (call.method === 'GetTask')
    return rpcResult(res, call.id, question(String(call.params['id'])));
  return false;
};

/** Parts of every wrong shape next to one good entry. */
const garbler: RawHandler = (call, res) => {
  if (call.method !== 'SendMessage') return false;
  const mime = { mimeType: WORLDSTATE_DELTA_MIME };
  return rpcResult(res, call.id, {
    task: taskJson(`garbled-${randomUUID()}`, 'TASK_STATE_COMPLETED', [
      { data: 5, metadata: mime },
      { data: { deltas: 'not a list' }, metadata: mime },
      {
        data: {
          deltas: [
            { domain: '__proto__', path: 'data.polluted', op: 'set', value: 1 },
            { domain: 'board', path: 'constructor.prototype.polluted', op: 'set', value: 1 },
            { domain: 'board', path: 'data.x', op: 'inc', value: 'NaN' },
            { domain: 'board', path: 'data.y', op: 'explode', value: 1 },
            'garbage',
            null,
            { domain: 'board', path: 'data.big', op: 'set', value: 'b'.repeat(200_000) },
            { domain: 'board', path: 'data.garbled', op: 'set', value: 1 },
          ],
        },
        metadata: mime,
      },
      { data: { deltas: [] }, metadata: { mimeType: 42 } },
      { text: 'fine' },
    ]),
  });
};

/** Parts the SDK cannot decode at all. */
const undecodable: RawHandler = (call, res) => {
  if (call.method !== 'SendMessage') return false;
  return rpcResult(res, call.id, {
    task: { id: 'u', contextId: 'c', status: { state: 'TASK_STATE_BOGUS' }, artifacts: 'nope' },
  });
};

describe('fault campaign: a hostile agent fleet', () => {
  let dir: string;
  let honest: RunningAgent;
  const raw: Record<string, RawAgent> = {};
  let capture: { url: string; hits: number; close: () => Promise<void> };
  let gw: Gateway;
  let parts: GatewayParts;
  const systemErrors: string[] = [];
  const deltas: EventEnvelope[] = [];
  const rejections: EventEnvelope[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-hostile-'));
    honest = await startOpsAgent({
      behaviour: () => ({
        delayMs: 300,
        artifacts: [
          [
            textPart('sitrep: counted'),
            createWorldStateDeltaPart([
              { domain: 'board', path: 'data.honestCalls', op: 'inc', value: 1 },
            ]),
          ],
        ],
      }),
    });
    let hits = 0;
    const server: Server = createServer((req, res) => {
      hits += 1;
      req.resume();
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    capture = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      get hits() {
        return hits;
      },
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
    raw.forger = await startRawAgent('forger', forger);
    raw.redirector = await startRawAgent(
      'redirector',
      redirector(() => capture.url),
    );
    raw.hoarder = await startRawAgent('hoarder', hoarder);
    raw.dripper = await startRawAgent('dripper', dripper);
    raw.asker = await startRawAgent('asker', asker);
    raw.garbler = await startRawAgent('garbler', garbler);
    raw.undecodable = await startRawAgent('undecodable', undecodable);
    ({ gateway: gw, parts } = await assembleGateway(
      {
        store: `sqlite:${join(dir, 'gw.db')}`,
        agents: [
          { name: 'honest', url: honest.url },
          ...Object.entries(raw).map(([name, agent]) => ({
            name,
            url: agent.url,
            auth: { headersEnv: { 'X-Api-Key': 'FLEET_KEY' } },
          })),
        ],
        policy: { unknownRadius: 'proceed', sweepInterval: '1h' },
        limits: { agentResponseBytes: '1MiB', agentResponseTimeout: '5s' },
      },
      {
        secrets: (name) => (name === 'FLEET_KEY' ? 'k-123' : undefined),
        tracking: { polling: { intervalMs: 50, maxIntervalMs: 200 } },
      },
    ));
    await gw.events.subscribe('system.error', (e) => void systemErrors.push(e.payload.message), {
      name: 'hostile-errors',
    });
    await gw.events.subscribe('world.state.delta', (e) => void deltas.push(e), {
      name: 'hostile-deltas',
    });
    await gw.events.subscribe('world.state.delta.rejected', (e) => void rejections.push(e), {
      name: 'hostile-rejections',
    });
  }, 30_000);

  afterAll(async () => {
    await gw.close();
    await honest.close();
    for (const agent of Object.values(raw)) await agent.close();
    await capture.close();
    process.off('unhandledRejection', onUnhandled);
    rmSync(dir, { recursive: true, force: true });
  });

  it('contains every hostile agent at once while the honest agent’s calls complete with their own deltas', async () => {
    // Honest tasks followed by the tracker (returned at once, finished 300 ms later) — the ones
    // the forger claims in its GetTask answers.
    const honestTasks: string[] = [];
    const followHonest = async (): Promise<void> => {
      const result = await gw.call('honest', 'sitrep', 'count', { mode: 'return-immediately' });
      const taskId = result.task!.id;
      honestTasks.push(taskId);
      inFlight.unshift(taskId);
      await parts.tracker.follow({
        agent: 'honest',
        skill: 'sitrep',
        correlationId: result.correlationId,
        taskId,
        state: result.state === 'message' ? 'unknown' : result.state,
      });
    };
    const forged = await gw.dispatch({ agent: 'forger', skill: 's', text: 'hi' }).answered();
    expect(forged.status).toBe('running');

    const hostile = Promise.allSettled([
      gw.dispatch({ agent: 'redirector', skill: 's', text: 'the plan' }).answered(),
      gw.dispatch({ agent: 'hoarder', skill: 's', text: 'all of it' }).answered(),
      gw.dispatch({ agent: 'dripper', skill: 's', text: 'slowly' }).answered(),
      gw.dispatch({ agent: 'garbler', skill: 's', text: 'mess' }).answered(),
      gw.dispatch({ agent: 'undecodable', skill: 's', text: '?' }).answered(),
    ]);
    // Honest work alongside: ten followed tasks and ten blocking dispatches.
    const honestDispatches = Promise.all(
      Array.from({ length: 10 }, () =>
        gw.dispatch({ agent: 'honest', skill: 'sitrep', text: 'go' }).answered(),
      ),
    );
    for (let i = 0; i < 10; i += 1) await followHonest();
    const [redirected, hoarded, dripped, garbled, broken] = (await hostile).map((r) => {
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    });
    for (const record of await honestDispatches) {
      expect(record.status).toBe('completed');
    }

    // Each hostile call ended with its own coded error.
    expect(redirected!.result?.error?.code).toBe('FLEETGATE_CALL_REDIRECT_REFUSED');
    expect(capture.hits).toBe(0);
    expect(hoarded!.result?.error?.code).toBe('FLEETGATE_AGENT_RESPONSE_TOO_LARGE');
    expect(raw.hoarder!.bytesWritten()).toBeLessThan(16 << 20);
    // The dripper took the call and its answer was cut off: the call may run there, so it is not
    // failed blind. Asked for the task (ListTasks, which it drips as well), it cannot say: the
    // call stays sent without a task id, for the recovery sweep to ask again (and to end
    // FLEETGATE_CALL_OUTCOME_UNKNOWN once recoveryGiveUpMs has passed).
    expect(dripped!).toMatchObject({ status: 'running', taskId: null, result: null });
    await until(
      () =>
        systemErrors.some((m) => m.includes('did not finish answering') && m.includes('5000 ms')),
      15_000,
      'the look-up of the dripper’s call reported',
    );
    // A task in a state nobody can read is not an end: followed like a running one.
    expect(broken!).toMatchObject({ status: 'running', taskId: 'u' });

    // Malformed parts: the good entry applied, every bad one rejected with a reason, no pollution.
    expect(garbled!.status).toBe('completed');
    await until(
      () => rejections.some((e) => (e.payload as { source: string }).source === 'garbler'),
      5_000,
      'the garbler’s rejections',
    );
    const garblerRejections = rejections
      .filter((e) => (e.payload as { source: string }).source === 'garbler')
      .flatMap((e) => (e.payload as { rejected: { reason: string; entry: unknown }[] }).rejected);
    expect(garblerRejections.length).toBeGreaterThanOrEqual(8);
    expect(JSON.stringify(garblerRejections).length).toBeLessThan(64 * 1024);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    // The honest tasks all settle, each with its own delta, whatever the forger answers.
    await until(
      async () => {
        const board = await gw.world.getDomain('board');
        return (board?.state.data as { honestCalls?: number } | undefined)?.honestCalls === 20;
      },
      10_000,
      'twenty honest deltas',
    );
    inFlight.length = 0;
    await sleep(300);
    await gw.settle();
    const board = (await gw.world.getDomain('board'))!.state.data as Record<string, unknown>;
    expect(board['honestCalls']).toBe(20);
    expect(board['forgedBy']).toBeUndefined();
    expect(board['garbled']).toBe(1);
    for (const taskId of honestTasks) {
      const mine = deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);
      expect(mine.map((e) => (e.payload as { source: string }).source)).toEqual(['honest']);
    }
    expect(systemErrors.some((m) => m.includes('answered about task'))).toBe(true);
    // The forger's own task never settles from a forged answer.
    expect((await gw.dispatchRecord(forged.id))?.status).toBe('running');
  }, 60_000);

  it('keeps asking an agent that asks forever, one question at a time, until an operator stops it', async () => {
    let record = await gw
      .dispatch({
        agent: 'asker',
        skill: 's',
        text: 'start',
        requestedBy: 'bob',
      })
      .answered();
    expect(record.status).toBe('awaiting-input');
    for (let round = 0; round < 3; round += 1) {
      const open = (await gw.approvals.list()).filter(
        (a) => a.dispatchId === record.id && a.status === 'pending',
      );
      expect(open).toHaveLength(1);
      const answered = await gw.approvals.answer(open[0]!.id, 'alice', `answer ${round}`);
      expect(answered.dispatch?.status).toBe('awaiting-input');
      record = answered.dispatch!;
    }
    const last = (await gw.approvals.list()).find(
      (a) => a.dispatchId === record.id && a.status === 'pending',
    )!;
    const stopped = await gw.approvals.reject(last.id, 'alice', 'enough');
    expect(stopped.dispatch?.status).toBe('rejected');
    // One message per answer, no storm: the start and three answers.
    expect(raw.asker!.calls.filter((c) => c.method === 'SendMessage')).toHaveLength(4);
  }, 30_000);

  it('still serves the honest agent, and closes cleanly', async () => {
    const record = await gw
      .dispatch({ agent: 'honest', skill: 'sitrep', text: 'after' })
      .answered();
    expect(record.status).toBe('completed');
    expect(unhandled).toEqual([]);
  }, 30_000);
});
