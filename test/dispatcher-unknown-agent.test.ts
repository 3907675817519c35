/**
 * A gateway that does not know a call's agent (replicas mid-roll-out differ in their agents) and
 * is asked to move the call on once its approval, answer or follow-up let it go: it leaves the
 * call to a replica that knows the agent — nothing consumed, said once — while another gateway
 * runs and a grace after the call was let go lasts; then, or at once with no other gateway
 * running, the call ends `failed` with `FLEETGATE_AGENT_UNKNOWN`, never sent. The dispatcher on a
 * SQLite store with a fake gate, fleet and clock; then the approvals door of two gateways on one
 * store, one without the agent, with a task's question answered on that one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startAgent, textPart } from '../examples/agents/index.js';
import { createInMemoryEventBus, createOutboxRelay, type OutboxRelay } from '../src/bus/index.js';
import {
  Dispatcher,
  createStoreDispatchRecords,
  type DispatchRecord,
  type DispatchRecordStore,
  type DispatchStatus,
  type FollowUpVerdict,
  type PolicyGate,
  type ReleaseVerdict,
  type ResumeVerdict,
} from '../src/dispatch/index.js';
import type { EventEnvelope } from '../src/protocol/index.js';
import { FleetgateError, HITL_MODE_V1_URI, isFleetgateError } from '../src/protocol/index.js';
import type { Gateway, GatewayStore } from '../src/service/index.js';
import { createGateway, openGatewayStore } from '../src/service/index.js';
import { openTestStore, type TestStore } from './support/stores.js';

const AT = 1_700_000_000_000;
const GRACE = 10_000;

describe('the dispatcher, for a call whose agent it does not know', () => {
  let opened: TestStore;
  let records: DispatchRecordStore;
  let relay: OutboxRelay;
  const bus = createInMemoryEventBus();
  const events: EventEnvelope[] = [];
  let now = AT;
  let replicas = true;
  let n = 0;
  const notes: { error: unknown; where: string }[] = [];
  /** What the gate was asked, by step. */
  const asked: string[] = [];
  const sent = vi.fn(() => Promise.reject(new Error('nothing is sent in these tests')));
  /** The claims the gate handed out that were used (an approval consumed). */
  const claimed: string[] = [];

  const claim = (step: string) => () => {
    claimed.push(step);
    return Promise.resolve(false);
  };
  const gate: PolicyGate = {
    decide: () => Promise.resolve({ action: 'hold', reason: 'needs a person' }),
    release: (): Promise<ReleaseVerdict> => {
      asked.push('release');
      return Promise.resolve({ action: 'go', input: { text: 'go' }, claim: claim('release') });
    },
    resume: (): Promise<ResumeVerdict> => {
      asked.push('resume');
      return Promise.resolve({
        action: 'answer',
        taskId: 'task-1',
        text: 'staging',
        claim: claim('resume'),
      });
    },
    continueFollowUp: ({ approvalId }): Promise<FollowUpVerdict> => {
      asked.push('follow-up');
      return Promise.resolve({
        action: 'go',
        dispatchId: approvalId.slice('approval-'.length),
        taskId: 'task-1',
        input: { text: 'more' },
        claim: claim('follow-up'),
      });
    },
  };
  let dispatcher: Dispatcher;

  beforeAll(async () => {
    opened = await openTestStore({ kind: 'sqlite', direct: true, skip: false }, 'fgunknown', 1);
    const { store } = opened;
    records = createStoreDispatchRecords(store.db, { sqlite: store.sqlite });
    await bus.subscribe('skill.dispatch.>', (e) => void events.push(e), { name: 'unknown' });
    relay = createOutboxRelay({ db: store.db, sqlite: store.sqlite, bus });
    dispatcher = new Dispatcher({
      fleet: {
        call: sent,
        agentClient: (name) =>
          Promise.reject(
            name === 'gone'
              ? new FleetgateError('FLEETGATE_AGENT_UNKNOWN', `No agent named ${name} is known.`)
              : new Error('no client in these tests'),
          ),
      },
      records,
      tracker: { follow: () => Promise.resolve() },
      gate,
      now: () => now,
      replicasRunning: () => Promise.resolve(replicas),
      unknownAgentGraceMs: GRACE,
      onError: (error, where) => notes.push({ error, where }),
    });
  });

  afterAll(async () => {
    await bus.close();
    await opened.remove();
  });

  beforeEach(() => {
    now = AT;
    replicas = true;
    notes.length = 0;
    asked.length = 0;
    claimed.length = 0;
  });

  async function recordOf(
    status: DispatchStatus,
    agent = 'gone',
    taskId: string | null = null,
  ): Promise<DispatchRecord> {
    n += 1;
    const record: DispatchRecord = {
      id: `d-${n}`,
      agent,
      skill: 'bulk_migration',
      correlationId: `c-${n}`,
      status,
      taskId,
      createdAt: AT,
      updatedAt: AT,
      result: null,
    };
    await records.create(record);
    return record;
  }

  async function topicsOf(id: string): Promise<string[]> {
    await relay.drain();
    await bus.idle();
    return events.filter((e) => (e.payload as { id: string }).id === id).map((e) => e.topic);
  }

  it('leaves a released call to a replica while the grace lasts, unused, and says so once', async () => {
    const { id } = await recordOf('awaiting-approval');
    const left = vi.fn();
    for (const at of [AT, AT + 1000, AT + GRACE - 1]) {
      now = at;
      expect(await dispatcher.release(id, { at: AT, left })).toMatchObject({
        status: 'awaiting-approval',
      });
    }
    expect(left).toHaveBeenCalledTimes(3);
    // The gate was not asked: its re-check would read declarations this gateway does not have.
    expect(asked).toEqual([]);
    expect(claimed).toEqual([]);
    expect(sent).not.toHaveBeenCalled();
    expect(notes).toHaveLength(1);
    expect(notes[0]!.where).toBe('dispatcher.release');
    expect(isFleetgateError(notes[0]!.error, 'FLEETGATE_AGENT_UNKNOWN')).toBe(true);
    expect((notes[0]!.error as Error).message).toMatch(
      /Agent gone is not configured on this gateway: dispatch d-\d+ \(bulk_migration\) leaves its held call to a replica that knows the agent; it fails if none sends it within 10 s/,
    );
    expect(await topicsOf(id)).toEqual([]);
  });

  it('ends a released call failed FLEETGATE_AGENT_UNKNOWN once the grace after it was let go ran out', async () => {
    const { id } = await recordOf('awaiting-approval');
    await dispatcher.release(id, { at: AT });
    now = AT + GRACE;
    const left = vi.fn();
    const ended = await dispatcher.release(id, { at: AT, left });
    expect(ended).toMatchObject({
      status: 'failed',
      result: { error: { code: 'FLEETGATE_AGENT_UNKNOWN' } },
    });
    expect(ended?.result?.error?.message).toBe(
      'No running gateway has agent gone configured: none sent its held call within 10 s of it being let go.',
    );
    expect(left).not.toHaveBeenCalled();
    expect(asked).toEqual([]);
    expect(claimed).toEqual([]);
    expect(sent).not.toHaveBeenCalled();
    expect(await topicsOf(id)).toEqual(['skill.dispatch.failed']);
    // Ended: a later release changes nothing.
    expect(await dispatcher.release(id, { at: AT })).toMatchObject({ status: 'failed' });
    expect(await topicsOf(id)).toEqual(['skill.dispatch.failed']);
  });

  it('ends it failed at once when no other gateway runs', async () => {
    replicas = false;
    const { id } = await recordOf('awaiting-approval');
    const ended = await dispatcher.release(id, { at: AT });
    expect(ended).toMatchObject({
      status: 'failed',
      result: {
        error: {
          code: 'FLEETGATE_AGENT_UNKNOWN',
          message:
            'No agent named gone is configured on this gateway, and no other gateway runs to send its held call.',
        },
      },
    });
    expect(notes).toEqual([]);
    expect(claimed).toEqual([]);
  });

  it('does not end a call a replica moved on meanwhile', async () => {
    const record = await recordOf('awaiting-approval');
    const racing = new Dispatcher({
      fleet: {
        call: sent,
        agentClient: () => Promise.reject(new FleetgateError('FLEETGATE_AGENT_UNKNOWN', 'unknown')),
      },
      records,
      tracker: { follow: () => Promise.resolve() },
      gate,
      now: () => now,
      // While this gateway looks, the replica that knows the agent releases the call.
      replicasRunning: async () => {
        await records.update(record.id, { status: 'running', at: now, from: 'awaiting-approval' });
        return false;
      },
    });
    expect(await racing.release(record.id, { at: AT })).toMatchObject({ status: 'running' });
  });

  it('asks the gate as before for an agent it knows, and when nothing was let go', async () => {
    const known = await recordOf('awaiting-approval', 'ops');
    await dispatcher.release(known.id, { at: AT });
    const refused = await recordOf('awaiting-approval');
    await dispatcher.release(refused.id);
    expect(asked).toEqual(['release', 'release']);
    expect(notes).toEqual([]);
  });

  it('leaves the answer to a question, then ends the call failed after the grace', async () => {
    const { id } = await recordOf('awaiting-input', 'gone', 'task-1');
    const left = vi.fn();
    expect(await dispatcher.resume(id, { at: AT, left })).toMatchObject({
      status: 'awaiting-input',
    });
    expect(left).toHaveBeenCalledOnce();
    expect(notes.map((note) => note.where)).toEqual(['dispatcher.resume']);
    now = AT + GRACE;
    expect(await dispatcher.resume(id, { at: AT })).toMatchObject({
      status: 'failed',
      result: { error: { code: 'FLEETGATE_AGENT_UNKNOWN' } },
    });
    expect(asked).toEqual([]);
    expect(claimed).toEqual([]);
  });

  it('leaves a follow-up, then ends the call failed after the grace', async () => {
    const { id } = await recordOf('running', 'gone', 'task-1');
    const approval = { id: `approval-${id}`, dispatchId: id };
    const left = vi.fn();
    expect(await dispatcher.continueFollowUp(approval, { at: AT, left })).toMatchObject({
      status: 'running',
    });
    expect(left).toHaveBeenCalledOnce();
    expect(notes.map((note) => note.where)).toEqual(['dispatcher.follow-up']);
    now = AT + GRACE;
    expect(await dispatcher.continueFollowUp(approval, { at: AT })).toMatchObject({
      status: 'failed',
      result: { error: { code: 'FLEETGATE_AGENT_UNKNOWN' } },
    });
    expect(asked).toEqual([]);
    expect(claimed).toEqual([]);
  });
});

describe('the approvals door of a replica that does not know the agent', () => {
  let dir: string;
  let store: GatewayStore;
  const bus = createInMemoryEventBus();
  let agent: RunningAgent;
  /** Knows the agent. */
  let a: Gateway;
  /** Does not (its config lists another agent only). */
  let b: Gateway;
  const notes: { error: unknown; where: string }[] = [];
  const asked = new Set<string>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-unknown-agent-'));
    store = await openGatewayStore(`sqlite:${join(dir, 'gw.db')}`);
    agent = await startAgent({
      name: 'asker',
      skills: [{ id: 'ask' }],
      extensions: [{ uri: HITL_MODE_V1_URI, params: { skills: { ask: { mode: 'autonomous' } } } }],
      // The first message of a task asks a question; the answer on the same task completes it.
      behaviour: (call) => {
        if (!asked.has(call.taskId)) {
          asked.add(call.taskId);
          return { state: 'input-required', statusText: `Which environment for ${call.text}?` };
        }
        return { artifacts: [[textPart(`deployed to ${call.text}`)]] };
      },
    });
    const policy = { sweepInterval: '1h', unknownRadius: 'proceed' } as const;
    a = await createGateway(
      { agents: [{ name: 'asker', url: agent.url }], policy },
      { store, bus, relay: { pollIntervalMs: 10 } },
    );
    b = await createGateway(
      { agents: [{ name: 'other', url: 'http://127.0.0.1:9' }], policy },
      {
        store,
        bus,
        relay: { pollIntervalMs: 10 },
        onError: (error, where) => notes.push({ error, where }),
      },
    );
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await agent?.close();
    await bus.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps an answer given on it for the replica that knows the agent, which sends it once', async () => {
    const record = await a.dispatch({ agent: 'asker', skill: 'ask', text: 'v2' }).answered();
    expect(record.status).toBe('awaiting-input');
    const question = (await a.approvals.list()).find((q) => q.dispatchId === record.id)!;
    expect(question).toMatchObject({ kind: 'checkpoint' });

    const answered = await b.approvals.answer(question.id, 'alice', 'staging');
    // Neither sent nor voided: the answer waits for a replica that can send it.
    expect(answered.dispatch).toMatchObject({ status: 'awaiting-input' });
    expect(answered.approval.status).toBe('approved');
    await b.approvals.sweep();
    await b.approvals.sweep();
    expect((await b.approvals.get(question.id))?.status).toBe('approved');
    expect(agent.received.map((c) => c.text)).toEqual(['v2']);
    const unknown = notes.filter((note) => isFleetgateError(note.error, 'FLEETGATE_AGENT_UNKNOWN'));
    expect(unknown.map((note) => note.where)).toEqual(['dispatcher.resume']);

    await a.approvals.sweep();
    expect(await a.dispatchRecord(record.id)).toMatchObject({
      status: 'completed',
      result: { text: 'deployed to staging' },
    });
    expect(agent.received.map((c) => c.text)).toEqual(['v2', 'staging']);
    expect((await a.approvals.get(question.id))?.status).toBe('consumed');
  });
});
