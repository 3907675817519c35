/**
 * The dispatcher of a gateway (`createGateway`, `gw.dispatch`) against a real @a2a-js/sdk agent
 * and a real SQLite file: durable dispatch records, their `skill.dispatch.*` events, the policy
 * gate, and each dispatch ended once whichever path (reply, poll, push) saw its task end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope } from '../src/protocol/index.js';
import type {
  DispatchRecord,
  DispatchRequest,
  DispatchSend,
  PolicyGate,
} from '../src/dispatch/index.js';
import type { GatewayOptions, TestGateway, World } from './support/gateway.js';
import { gateway, startCallbackServer, until, world } from './support/gateway.js';

interface Harness {
  g: TestGateway;
  dispatch: (request: DispatchRequest) => Promise<DispatchRecord>;
  /** The durable record of a dispatch. */
  record: (id: string) => Promise<DispatchRecord | undefined>;
  events: EventEnvelope[];
  /** Lookups of a dispatch by its task so far. */
  lookups: () => number;
  stop: () => Promise<void>;
}

async function harness(
  w: World,
  options: {
    gate?: PolicyGate;
    mode?: 'blocking' | 'return-immediately';
    tracker?: Pick<GatewayOptions, 'polling' | 'maxTrackingTimeMs' | 'pushBaseUrl'>;
    /** Told of each unit the dispatcher writes before it sends: its events and its send. */
    writes?: (unit: RecordWrite) => void;
    onGateDecision?: GatewayOptions['onGateDecision'];
    leaseTtl?: string;
  } = {},
): Promise<Harness> {
  const events: EventEnvelope[] = [];
  const sub = await w.bus.subscribe('skill.dispatch.>', (e) => void events.push(e), {
    name: `dispatch-${Math.random().toString(36).slice(2, 8)}`,
  });
  let lookups = 0;
  const g = await gateway(w, {
    polling: { intervalMs: 15 },
    ...options.tracker,
    // Counts the lookups of a dispatch by its task; the records are otherwise the gateway's.
    records: (built) => ({
      ...built,
      dispatches: {
        ...built.dispatches,
        byTask: (agent, taskId) => {
          lookups += 1;
          return built.dispatches.byTask(agent, taskId);
        },
        create: async (record, createOptions) => {
          await built.dispatches.create(record, createOptions);
          const announce = createOptions?.announce;
          options.writes?.({
            id: record.id,
            topics: (announce ?? []).map((a) => a.topic),
            send: createOptions?.send,
          });
        },
        sending: async (record, send, announce) => {
          await built.dispatches.sending(record, send, announce);
          options.writes?.({
            id: record.id,
            topics: announce === undefined ? [] : [announce.topic],
            send,
          });
        },
      },
    }),
    ...(options.gate === undefined ? {} : { gate: options.gate }),
    ...(options.mode === undefined ? {} : { dispatchMode: options.mode }),
    ...(options.onGateDecision === undefined ? {} : { onGateDecision: options.onGateDecision }),
    ...(options.leaseTtl === undefined ? {} : { leaseTtl: options.leaseTtl }),
  });
  return {
    g,
    dispatch: (request) => g.gw.dispatch(request).answered(),
    record: (id) => g.gw.dispatchRecord(id),
    events,
    lookups: () => lookups,
    stop: async () => {
      await sub.unsubscribe();
      await g.stop();
    },
  };
}

/** One unit a dispatch's record wrote before its call was sent. */
interface RecordWrite {
  id: string;
  topics: string[];
  send: DispatchSend | undefined;
}

const topicsFor = (h: Harness, id: string): string[] =>
  h.events.filter((e) => (e.payload as { id: string }).id === id).map((e) => e.topic);

describe('dispatcher', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(30);
  });
  afterAll(() => w.close());

  it('records a dispatch whose reply is terminal as completed, with its events, once', async () => {
    const h = await harness(w);
    try {
      const record = await h.dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' });
      expect(record).toMatchObject({ status: 'completed', agent: 'ops', skill: 'pr_review' });
      expect(record.taskId).toEqual(expect.any(String));
      expect(record.result?.text).toContain('pr_review: 2 change(s)');
      await until(() => topicsFor(h, record.id).length === 3);
      expect(topicsFor(h, record.id)).toEqual([
        'skill.dispatch.requested',
        'skill.dispatch.started',
        'skill.dispatch.completed',
      ]);
      expect(await h.record(record.id)).toEqual(record);
      await until(() =>
        w.deltas.some((e) => (e.payload as { taskId: string }).taskId === record.taskId),
      );
    } finally {
      await h.stop();
    }
  });

  it('records a call the gate lets go at once, what it sends and both its events in one unit, before sending', async () => {
    const writes: (RecordWrite & { received: number })[] = [];
    const h = await harness(w, {
      writes: (unit) => writes.push({ ...unit, received: w.agent.received.length }),
    });
    try {
      const before = w.agent.received.length;
      const record = await h.dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' });
      expect(record.status).toBe('completed');
      const units = writes.filter((u) => u.id === record.id);
      expect(units).toHaveLength(1);
      expect(units[0]!.topics).toEqual(['skill.dispatch.requested', 'skill.dispatch.started']);
      expect(units[0]!.send).toMatchObject({
        messageId: expect.stringMatching(/.+/),
        contextId: expect.stringMatching(/.+/),
        sentAt: expect.any(Number),
      });
      // Committed before the agent heard of the call.
      expect(units[0]!.received).toBe(before);
      expect(w.agent.received.length).toBe(before + 1);
      await until(() => topicsFor(h, record.id).length === 3);
      expect(topicsFor(h, record.id)).toEqual([
        'skill.dispatch.requested',
        'skill.dispatch.started',
        'skill.dispatch.completed',
      ]);
    } finally {
      await h.stop();
    }
  });

  it('records a call in one unit also when the gate is observed, as the service observes it for its metrics', async () => {
    const writes: RecordWrite[] = [];
    const decisions: string[] = [];
    const h = await harness(w, {
      writes: (unit) => writes.push(unit),
      onGateDecision: (request, decision) =>
        decisions.push(`${request.dispatchId}:${decision.action}`),
    });
    try {
      const record = await h.dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' });
      expect(record.status).toBe('completed');
      expect(writes.filter((u) => u.id === record.id).map((u) => u.topics)).toEqual([
        ['skill.dispatch.requested', 'skill.dispatch.started'],
      ]);
      expect(decisions).toEqual([`${record.id}:allow`]);
    } finally {
      await h.stop();
    }
  });

  it("records a call first and what it sends after, when only the gate's decide can tell", async () => {
    const writes: RecordWrite[] = [];
    const later: PolicyGate = { decide: () => Promise.resolve({ action: 'allow' }) };
    const h = await harness(w, { gate: later, writes: (unit) => writes.push(unit) });
    try {
      const record = await h.dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' });
      expect(record.status).toBe('completed');
      const units = writes.filter((u) => u.id === record.id);
      expect(units.map((u) => u.topics)).toEqual([
        ['skill.dispatch.requested'],
        ['skill.dispatch.started'],
      ]);
      expect(units[0]!.send).toMatchObject({ messageId: '', contextId: '', sentAt: null });
      expect(units[1]!.send).toMatchObject({ sentAt: expect.any(Number) });
    } finally {
      await h.stop();
    }
  });

  it('hands a task still running to the tracker and completes the dispatch when it ends', async () => {
    const h = await harness(w, { mode: 'return-immediately' });
    try {
      const record = await h.dispatch({
        agent: 'ops',
        skill: 'sitrep',
        correlationId: 'corr-1',
      });
      expect(record).toMatchObject({ status: 'running', correlationId: 'corr-1' });
      await until(() => topicsFor(h, record.id).includes('skill.dispatch.completed'));
      expect(await h.record(record.id)).toMatchObject({
        status: 'completed',
        result: { state: 'completed' },
      });
      expect(topicsFor(h, record.id).filter((t) => t === 'skill.dispatch.completed')).toHaveLength(
        1,
      );
    } finally {
      await h.stop();
    }
  });

  it('looks up no dispatch for a task that ended in its first answer, and one for a followed task', async () => {
    const h = await harness(w);
    try {
      const done = await h.dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' });
      expect(done.status).toBe('completed');
      expect(h.lookups()).toBe(0);
    } finally {
      await h.stop();
    }
    const later = await harness(w, { mode: 'return-immediately' });
    try {
      const record = await later.dispatch({ agent: 'ops', skill: 'sitrep' });
      await until(() => topicsFor(later, record.id).includes('skill.dispatch.completed'));
      // The tracker settled it: the dispatch holding its task id was looked up.
      expect(later.lookups()).toBeGreaterThan(0);
    } finally {
      await later.stop();
    }
  });

  it('rejects a call the gate denies without calling the agent', async () => {
    const deny: PolicyGate = {
      decide: () => Promise.resolve({ action: 'deny', reason: 'radius public needs approval' }),
    };
    const h = await harness(w, { gate: deny });
    try {
      const before = w.agent.received.length;
      const record = await h.dispatch({ agent: 'ops', skill: 'bulk_migration' });
      expect(record).toMatchObject({
        status: 'rejected',
        result: {
          error: { code: 'FLEETGATE_DISPATCH_DENIED', message: 'radius public needs approval' },
        },
      });
      expect(w.agent.received.length).toBe(before);
      await until(() => topicsFor(h, record.id).includes('skill.dispatch.rejected'));
    } finally {
      await h.stop();
    }
  });

  it('refuses a dispatch to an unknown agent with the reason, recording nothing', async () => {
    const h = await harness(w);
    try {
      const call = h.g.gw.dispatch({ agent: 'nobody', skill: 'x' });
      await expect(call.answered()).rejects.toMatchObject({
        code: 'FLEETGATE_AGENT_UNKNOWN',
        details: { agent: 'nobody', agents: ['ops'] },
      });
      expect(await h.record(call.id)).toBeUndefined();
      expect(topicsFor(h, call.id)).toEqual([]);
    } finally {
      await h.stop();
    }
  });

  it('refuses input nested past LIMITS.inputDepth before recording it, naming where', async () => {
    const h = await harness(w);
    try {
      let data: unknown = [];
      for (let i = 0; i < 3000; i += 1) data = [data];
      const before = w.agent.received.length;
      const call = h.g.gw.dispatch({ agent: 'ops', skill: 'pr_review', data });
      await expect(call.answered()).rejects.toMatchObject({
        code: 'FLEETGATE_LIMIT_EXCEEDED',
        details: { at: `data${'[0]'.repeat(64)}`, limit: 64 },
      });
      const metadata = { a: JSON.parse('{"b":'.repeat(70) + '1' + '}'.repeat(70)) as unknown };
      const second = h.g.gw.dispatch({ agent: 'ops', skill: 'pr_review', text: 'x', metadata });
      await expect(second.answered()).rejects.toMatchObject({ code: 'FLEETGATE_LIMIT_EXCEEDED' });
      expect(await h.record(call.id)).toBeUndefined();
      expect(await h.record(second.id)).toBeUndefined();
      expect(w.agent.received.length).toBe(before);
      // At the limit the call goes through.
      let within: unknown = [];
      for (let i = 1; i < 64; i += 1) within = [within];
      const ok = await h.dispatch({ agent: 'ops', skill: 'pr_review', data: within });
      expect(ok.status).toBe('completed');
    } finally {
      await h.stop();
    }
  });

  it('leaves a call in hand alone while its gate decides, however often the recovery sweep runs', async () => {
    // Recorded (unsent) before the gate is asked: to the sweep, a call like one whose gateway
    // stopped before sending it. Before, the sweep ended it failed (FLEETGATE_CALL_INTERRUPTED)
    // while its gate decided, and the call then went out all the same.
    let allow: (() => void) | undefined;
    const slow: PolicyGate = {
      decide: () => new Promise((resolve) => (allow = () => resolve({ action: 'allow' }))),
    };
    // The sweep runs every third of the lease: about every 330 ms here.
    const h = await harness(w, { gate: slow, leaseTtl: '1s' });
    try {
      const dispatched = h.dispatch({ agent: 'ops', skill: 'sitrep', text: 'go' });
      await until(() => allow !== undefined, 10_000, 'the gate asked');
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      allow!();
      const record = await dispatched;
      expect(record).toMatchObject({ status: 'completed', result: { text: expect.any(String) } });
      expect((await h.record(record.id))?.status).toBe('completed');
    } finally {
      await h.stop();
    }
  });

  it('ends a recorded call failed with the error of a gate that could not decide', async () => {
    const broken: PolicyGate = {
      decide: () => Promise.reject(new Error('the policy store is away')),
    };
    const h = await harness(w, { gate: broken });
    try {
      const call = h.g.gw.dispatch({ agent: 'ops', skill: 'pr_review', text: 'go' });
      await expect(call.answered()).rejects.toThrow('the policy store is away');
      expect(await h.record(call.id)).toMatchObject({
        status: 'failed',
        result: { error: { code: 'FLEETGATE_CALL_FAILED', message: 'the policy store is away' } },
      });
      await until(() => topicsFor(h, call.id).includes('skill.dispatch.failed'));
    } finally {
      await h.stop();
    }
  });
});

describe('dispatcher with a failing agent', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(0, { state: 'failed', statusText: 'boom' });
  });
  afterAll(() => w.close());

  it('records a task that ended failed as a failed dispatch', async () => {
    const h = await harness(w);
    try {
      const record = await h.dispatch({ agent: 'ops', skill: 'pr_review' });
      expect(record).toMatchObject({
        status: 'failed',
        result: { state: 'failed', error: { code: 'FLEETGATE_TASK_FAILED' } },
      });
    } finally {
      await h.stop();
    }
  });
});

describe('dispatcher with a slow agent that pushes', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(30, {}, { pushNotifications: true });
  });
  afterAll(() => w.close());

  it('ends each dispatch once — one world.state.delta, one skill.dispatch.completed — with push and poll racing', async () => {
    const server = await startCallbackServer();
    // Polls every 5 ms while the agent pushes every event: both paths see each end.
    const h = await harness(w, {
      mode: 'return-immediately',
      tracker: { polling: { intervalMs: 5, growth: 1 }, pushBaseUrl: server.base },
    });
    server.bind(h.g.gw.pushReceiver);
    try {
      const records = await Promise.all(
        Array.from({ length: 40 }, () => h.dispatch({ agent: 'ops', skill: 'pr_review' })),
      );
      await until(
        () => records.every((r) => topicsFor(h, r.id).includes('skill.dispatch.completed')),
        20_000,
      );
      await new Promise((r) => setTimeout(r, 150));
      for (const record of records) {
        expect(
          topicsFor(h, record.id).filter((t) => t === 'skill.dispatch.completed'),
        ).toHaveLength(1);
        const done = (await h.record(record.id))!;
        expect(done.status).toBe('completed');
        expect(
          w.deltas.filter((e) => (e.payload as { taskId: string }).taskId === done.taskId),
        ).toHaveLength(1);
      }
      const claims = h.g.tracker.claims();
      expect(claims.push + claims.poll).toBe(40);
    } finally {
      await h.stop();
      await server.close();
    }
  });
});

describe('dispatcher with an agent that never finishes', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(10_000);
  });
  afterAll(() => w.close());

  it('fails the dispatch with FLEETGATE_TASK_TIMEOUT after the tracking time, canceling the task', async () => {
    const h = await harness(w, {
      mode: 'return-immediately',
      tracker: { maxTrackingTimeMs: 100, polling: { intervalMs: 20 } },
    });
    try {
      const record = await h.dispatch({ agent: 'ops', skill: 'bulk_migration' });
      expect(record.status).toBe('running');
      await until(() => topicsFor(h, record.id).includes('skill.dispatch.failed'));
      expect(await h.record(record.id)).toMatchObject({
        status: 'failed',
        result: { state: 'canceled', error: { code: 'FLEETGATE_TASK_TIMEOUT' } },
      });
    } finally {
      await h.stop();
    }
  });
});
