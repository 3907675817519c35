/**
 * `gw.dispatch()`'s handle, as a library user meets it: the id at once, the gate's decision, the
 * call's updates in order, its end however it comes (reply, tracker, approval) and its cancel —
 * real `@a2a-js/sdk` agents over loopback HTTP, a real SQLite file, the real HITL gate.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/index.js';
import type { CallUpdate, DispatchHandle } from '../src/dispatch/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';

async function updatesOf(call: DispatchHandle): Promise<CallUpdate[]> {
  const all: CallUpdate[] = [];
  for await (const update of call.events()) all.push(update);
  return all;
}

const statuses = (updates: CallUpdate[]): string[] =>
  updates.flatMap((u) => (u.type === 'status' ? [u.record.status] : []));

describe('dispatch handle', () => {
  let dir: string;
  let ops: RunningAgent;
  let gw: Gateway;
  /** Releases the agent's `long` tasks. */
  const release = new Map<string, () => void>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-handle-'));
    ops = await startOpsAgent({
      streaming: true,
      behaviour: async (call) => {
        const plan = await opsBehaviour(call);
        // The task is working a while, then reports: the stream has several events.
        if (call.text === 'streamed') return { ...plan, delayMs: 50 };
        if (!call.text.startsWith('long')) return plan;
        return { ...plan, hold: new Promise<void>((resolve) => release.set(call.text, resolve)) };
      },
    });
    gw = await createGateway({
      store: `sqlite:${join(dir, 'gw.db')}`,
      agents: [{ name: 'ops', url: ops.url }],
      // sitrep (self) goes at once; bulk_migration (fleet) waits for one approver.
      policy: { approvalAtOrAbove: 'fleet', approvers: { fleet: 1 }, sweepInterval: '1h' },
    });
  });

  afterAll(async () => {
    for (const go of release.values()) go();
    await gw?.close();
    await ops?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A call the agent keeps working on (until `release`), handed to the tracker. */
  async function startLong(text: string) {
    const call = gw.dispatch({ agent: 'ops', skill: 'sitrep', text, mode: 'return-immediately' });
    const answered = await call.answered();
    expect(answered).toMatchObject({ status: 'running', taskId: expect.any(String) });
    return { call, answered };
  }

  it('names the call at once, then gives its decision, its updates in order and its end', async () => {
    const call = gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'status', id: 'handle-1' });
    expect(call.id).toBe('handle-1');
    const updates = updatesOf(call);
    const end = await call.result();
    expect(end).toMatchObject({ id: 'handle-1', status: 'completed' });
    expect((await call.decision).action).toBe('allow');
    expect(call.status).toBe('completed');
    const seen = await updates;
    expect(seen[0]).toMatchObject({ type: 'decision', decision: { action: 'allow' } });
    expect(seen.map((u) => u.type)).toEqual(['decision', 'reply', 'status']);
    expect(statuses(seen)).toEqual(['completed']);
    // An iterator started after the end reads the same updates.
    expect((await updatesOf(call)).map((u) => u.type)).toEqual(['decision', 'reply', 'status']);
    // A call of a program that embeds the gateway says so.
    expect(await gw.dispatchRecord('handle-1')).toMatchObject({
      status: 'completed',
      door: 'library',
    });
  });

  it("streams the agent's events before its answer and the record's end", async () => {
    const call = gw.dispatch({
      agent: 'ops',
      skill: 'sitrep',
      text: 'streamed',
      mode: 'streaming',
    });
    const seen = await updatesOf(call);
    const types = seen.map((u) => u.type);
    expect(types[0]).toBe('decision');
    expect(types.filter((t) => t === 'stream').length).toBeGreaterThanOrEqual(2);
    expect(types.indexOf('reply')).toBeGreaterThan(types.lastIndexOf('stream'));
    expect(types.at(-1)).toBe('status');
    expect(statuses(seen)).toEqual(['completed']);
    expect(call.status).toBe('completed');
  });

  it('follows a call handed to the tracker to its end', async () => {
    const { call, answered } = await startLong('long-tracked');
    const updates = updatesOf(call);
    release.get('long-tracked')!();
    expect(await call.result()).toMatchObject({ status: 'completed', taskId: answered.taskId });
    expect(statuses(await updates)).toEqual(['running', 'completed']);
  });

  it('waits for the approval of a held call, and ends with the approved call', async () => {
    const call = gw.dispatch({
      agent: 'ops',
      skill: 'bulk_migration',
      text: 'migrate-handle',
      requestedBy: 'carol',
    });
    const decision = await call.decision;
    expect(decision.action).toBe('hold');
    expect(await call.answered()).toMatchObject({ status: 'awaiting-approval' });
    expect(call.status).toBe('awaiting-approval');
    const updates = updatesOf(call);
    let ended = false;
    const result = call.result().then((r) => ((ended = true), r));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ended).toBe(false);
    expect(ops.received.filter((c) => c.text === 'migrate-handle')).toHaveLength(0);
    const approvalId = decision.action === 'hold' ? decision.approvalId! : '';
    await gw.approvals.approve(approvalId, 'alice');
    expect(await result).toMatchObject({ status: 'completed' });
    // `running` in between when this process read the record while the agent worked.
    const moves = statuses(await updates);
    expect([moves[0], moves.at(-1)]).toEqual(['awaiting-approval', 'completed']);
    expect(moves.filter((s) => !['awaiting-approval', 'running', 'completed'].includes(s))).toEqual(
      [],
    );
    expect(ops.received.filter((c) => c.text === 'migrate-handle')).toHaveLength(1);
  });

  it('cancels a held call: its approval is rejected and the agent never hears of it', async () => {
    const call = gw.dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-never' });
    expect(await call.answered()).toMatchObject({ status: 'awaiting-approval' });
    const canceled = await call.cancel('not needed after all');
    expect(canceled.status).toBe('rejected');
    expect(await call.result()).toMatchObject({ status: 'rejected' });
    const approval = (await gw.approvals.list({ status: 'rejected' })).find(
      (a) => a.dispatchId === call.id,
    );
    expect(approval).toBeDefined();
    expect(ops.received.filter((c) => c.text === 'migrate-never')).toHaveLength(0);
  });

  it('cancels a running task at the agent: the call ends canceled', async () => {
    const { call, answered } = await startLong('long-canceled');
    const canceled = await call.cancel();
    expect(canceled.status).toBe('canceled');
    expect(await call.result()).toMatchObject({ status: 'canceled', taskId: answered.taskId });
    expect(call.status).toBe('canceled');
    // Canceling an ended call answers it as it is.
    expect((await call.cancel()).status).toBe('canceled');
  });

  it('cancels a call sent blocking while the agent works on it (its task id not known yet)', async () => {
    // `SendMessage`, asked for: the agent's task id comes with its answer.
    const call = gw.dispatch({
      agent: 'ops',
      skill: 'sitrep',
      text: 'long-blocking',
      mode: 'blocking',
    });
    await expect
      .poll(() => ops.received.some((c) => c.text === 'long-blocking'), { timeout: 10_000 })
      .toBe(true);
    expect(await gw.dispatchRecord(call.id)).toMatchObject({ status: 'running', taskId: null });
    const canceled = await call.cancel('stop');
    expect(canceled.status).toBe('canceled');
    expect(canceled.taskId).not.toBeNull();
    expect(await call.result()).toMatchObject({ status: 'canceled' });
  });

  it('keeps the task id of a call given no mode while the agent works on it (the agent streams)', async () => {
    const call = gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'long-named' });
    await expect
      .poll(() => ops.received.some((c) => c.text === 'long-named'), { timeout: 10_000 })
      .toBe(true);
    const taskId = ops.received.find((c) => c.text === 'long-named')!.taskId;
    await expect
      .poll(async () => (await gw.dispatchRecord(call.id))?.taskId, { timeout: 10_000 })
      .toBe(taskId);
    expect(call.status).toBe('running');
    // One answer at the end all the same, as a blocking call's.
    const canceled = await call.cancel('stop');
    expect(canceled).toMatchObject({ status: 'canceled', taskId });
    expect(await call.result()).toMatchObject({ status: 'canceled', taskId });
  });

  it('cancels by id with no handle (a call dispatched elsewhere): held, running, unknown', async () => {
    const heldCall = gw.dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-by-id' });
    await heldCall.answered();
    const rejected = await gw.cancelDispatch(heldCall.id, { reason: 'by id', by: 'carol' });
    expect(rejected.status).toBe('rejected');
    const approval = (await gw.approvals.list({ status: 'rejected' })).find(
      (a) => a.dispatchId === heldCall.id,
    );
    expect(approval?.decidedBy).toBe('carol');
    const { call } = await startLong('long-by-id');
    expect((await gw.cancelDispatch(call.id)).status).toBe('canceled');
    expect(await call.result()).toMatchObject({ status: 'canceled' });
    await expect(gw.cancelDispatch('no-such-call')).rejects.toMatchObject({
      code: 'FLEETGATE_DISPATCH_NOT_FOUND',
    });
  });

  it("stops waiting when the caller's signal aborts, leaving the call as it is", async () => {
    const call = gw.dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-abort' });
    await call.answered();
    const stop = new AbortController();
    const waiting = call.result({ signal: stop.signal });
    stop.abort(new Error('the caller gave up'));
    await expect(waiting).rejects.toThrow('the caller gave up');
    expect(await gw.dispatchRecord(call.id)).toMatchObject({ status: 'awaiting-approval' });
  });

  it('refuses an agent or a skill the fleet does not have at once, naming what it has, recording nothing', async () => {
    const typo = gw.dispatch({ agent: 'opps', skill: 'sitrep', text: 'status' });
    await expect(typo.result()).rejects.toMatchObject({
      code: 'FLEETGATE_AGENT_UNKNOWN',
      message: expect.stringContaining('configured: ops') as unknown,
    });
    await expect(typo.decision).rejects.toMatchObject({ code: 'FLEETGATE_AGENT_UNKNOWN' });
    const skill = gw.dispatch({ agent: 'ops', skill: 'sitrepp', text: 'status' });
    await expect(skill.answered()).rejects.toMatchObject({
      code: 'FLEETGATE_SKILL_UNKNOWN',
      details: { agent: 'ops', skill: 'sitrepp', skills: expect.arrayContaining(['sitrep']) },
    });
    expect(await gw.dispatchRecord(typo.id)).toBeUndefined();
    expect(await gw.dispatchRecord(skill.id)).toBeUndefined();
    expect(await gw.approvals.list()).not.toContainEqual(
      expect.objectContaining({ dispatchId: skill.id }),
    );
  });

  it('reports a dispatch it could not record through the handle, with a coded error', async () => {
    const other = await createGateway({
      store: `sqlite:${join(dir, 'closed.db')}`,
      agents: [{ name: 'ops', url: ops.url }],
    });
    await other.close();
    const call = other.dispatch({ agent: 'ops', skill: 'sitrep', text: 'late' });
    const closed = (e: unknown) => isFleetgateError(e) && e.code === 'FLEETGATE_GATEWAY_CLOSED';
    await expect(call.answered()).rejects.toSatisfy(closed);
    await expect(call.decision).rejects.toSatisfy(closed);
    await expect(call.result()).rejects.toSatisfy(closed);
    expect(await updatesOf(call)).toEqual([]);
  });

  it('ends a wait for a held call when the gateway closes, and the call goes on after a restart', async () => {
    const store = `sqlite:${join(dir, 'restart.db')}`;
    const config = {
      store,
      agents: [{ name: 'ops', url: ops.url }],
      policy: { approvalAtOrAbove: 'fleet' as const, sweepInterval: '1h' },
    };
    let first = await createGateway(config);
    const call = first.dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate-later' });
    const decision = await call.decision;
    await call.answered();
    const waiting = call.result().catch((error: unknown) => error);
    await first.close();
    const error = await waiting;
    expect(isFleetgateError(error) && error.code).toBe('FLEETGATE_GATEWAY_CLOSED');
    first = await createGateway(config);
    try {
      const approvalId = decision.action === 'hold' ? decision.approvalId! : '';
      const outcome = await first.approvals.approve(approvalId, 'alice');
      expect(outcome.dispatch?.status).toBe('completed');
    } finally {
      await first.close();
    }
  });
});
