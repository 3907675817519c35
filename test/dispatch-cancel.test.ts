/**
 * Cancelling a call by its id on a running gateway, as a user who dispatched it from the CLI or
 * the HTTP API would: `POST /api/dispatches/:id/cancel` and `fleetgate cancel ID`. A task running
 * at the agent is canceled there; a call held for approval is rejected; an ended call is answered
 * as it is. A real SDK agent over loopback HTTP, the gateway as a child process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/index.js';
import { opsBehaviour } from '../examples/agents/index.js';
import { TaskState, type Task } from '@a2a-js/sdk';
import { sdkClient, userMessage } from './support/a2a-client.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually } from './support/gateway-service.js';
import { startOpsProxy, type OpsProxy } from './support/ops-proxy.js';

interface Dispatch {
  id: string;
  status: string;
  taskId: string | null;
  result: { error?: { code: string; message: string } } | null;
}

describe('cancelling a dispatch by its id', () => {
  let fixture: OpsProxy;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let operator: string;
  let viewer: string;
  /** Calls whose text is `hold` keep working at the agent until the test ends. */
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const as = (token: string): NodeJS.ProcessEnv => ({
    FLEETGATE_URL: gw.url,
    FLEETGATE_TOKEN: token,
  });

  beforeAll(async () => {
    // A blocking agent: a call's task id comes with the agent's answer.
    fixture = await startOpsProxy('cancel', {
      streaming: false,
      config: [],
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        ...(call.text === 'hold' ? { hold: held } : {}),
      }),
    });
    ({ agent, gw, token: operator, viewerToken: viewer } = fixture);
  }, 60_000);

  afterAll(async () => {
    release();
    await fixture?.close();
  });

  const dispatch = async (body: object): Promise<Dispatch> =>
    (await api<Dispatch>(gw.url, '/api/dispatch', { body, token: operator })).body;

  it(
    'cancels a task running at the agent: the agent hears it and the call ends canceled',
    async () => {
      const running = await dispatch({ agent: 'ops', skill: 'sitrep', text: 'hold' });
      expect(running.status).toBe('running');
      // Named by the end of its id, as `fleetgate dispatch` prints it.
      const run = await runCli(
        ['cancel', running.id.slice(-8), '--reason', 'not needed'],
        as(operator),
      );
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/ops\/sitrep\s+canceled/);
      // Who canceled it and why: the call's error, and an event of its story.
      expect(run.stdout).toContain('FLEETGATE_DISPATCH_CANCELED: Canceled by bob: not needed');
      const read = await api<Dispatch>(gw.url, `/api/dispatches/${running.id}`, {
        token: operator,
      });
      expect(read.body).toMatchObject({
        status: 'canceled',
        taskId: running.taskId,
        result: {
          error: { code: 'FLEETGATE_DISPATCH_CANCELED', message: 'Canceled by bob: not needed' },
        },
      });
      const story = await api<{ events: { topic: string; payload: Record<string, unknown> }[] }>(
        gw.url,
        `/api/dispatches/${running.id}/story`,
        { token: operator },
      );
      const asked = story.body.events.filter((e) => e.topic === 'skill.dispatch.cancel-requested');
      expect(asked).toHaveLength(1);
      expect(asked[0]!.payload).toMatchObject({
        canceledBy: 'bob',
        reason: 'not needed',
        status: 'running',
      });
      // Asked again: the call is answered as it ended.
      const again = await api<Dispatch>(gw.url, `/api/dispatches/${running.id}/cancel`, {
        body: {},
        token: operator,
      });
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('canceled');
    },
    cliTestTimeout(1),
  );

  it('rejects a call held for approval, with the reason, and nothing reaches the agent', async () => {
    const heldCall = await dispatch({ agent: 'ops', skill: 'bulk_migration', text: 'migrate' });
    expect(heldCall.status).toBe('awaiting-approval');
    const canceled = await api<Dispatch>(gw.url, `/api/dispatches/${heldCall.id}/cancel`, {
      body: { reason: 'wrong week' },
      token: operator,
    });
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('rejected');
    const approvals = await api<{ approvals: { dispatchId?: string; status: string }[] }>(
      gw.url,
      '/api/approvals?status=rejected',
      { token: operator },
    );
    expect(approvals.body.approvals.find((a) => a.dispatchId === heldCall.id)).toMatchObject({
      status: 'rejected',
    });
    expect(agent.received.some((r) => r.text === 'migrate')).toBe(false);
  });

  it(
    'says a call that had already ended was not canceled (exit 1), and names an unknown id',
    async () => {
      const done = await dispatch({ agent: 'ops', skill: 'sitrep', text: 'status' });
      const read = await api<Dispatch>(gw.url, `/api/dispatches/${done.id}?wait=10s`, {
        token: operator,
      });
      expect(read.body.status).toBe('completed');
      const ended = await runCli(['cancel', done.id], as(operator));
      expect(ended.code).toBe(1);
      expect(ended.stdout).toMatch(/ops\/sitrep\s+completed/);
      expect(ended.stdout).toContain('it had already ended completed: nothing was canceled');

      const unknown = await runCli(['cancel', 'no-such-call'], as(operator));
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/^FLEETGATE_DISPATCH_NOT_FOUND: No dispatch no-such-call/mu);
    },
    cliTestTimeout(2),
  );

  it("cancels a call that came through the A2A proxy while the agent works on it, by the API and by the client's CancelTask", async () => {
    const client = await sdkClient(`${gw.url}/a2a/ops`, { token: operator });
    /** A proxied call the agent is working on: sent blocking, its task id not known yet. */
    const working = async (): Promise<Task> => {
      const before = agent.received.length;
      const task = (await client.sendMessage({
        tenant: '',
        message: userMessage('hold', { 'x-effect-domain-skill': 'sitrep' }),
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: undefined,
          returnImmediately: true,
        },
        metadata: undefined,
      })) as Task;
      await eventually(() => Promise.resolve(agent.received.length > before ? true : undefined));
      // The proxy's task is the call: its id is the dispatch's.
      const read = await api<Dispatch>(gw.url, `/api/dispatches/${task.id}`, { token: operator });
      expect(read.body).toMatchObject({ status: 'running', taskId: null });
      return task;
    };
    const endsCanceled = (task: Task) =>
      eventually(async () => {
        const t = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
        return t.status?.state === TaskState.TASK_STATE_CANCELED ? t : undefined;
      });

    const byApi = await working();
    const canceled = await api<Dispatch>(gw.url, `/api/dispatches/${byApi.id}/cancel`, {
      body: {},
      token: operator,
    });
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    expect(canceled.body.taskId).not.toBeNull();
    await endsCanceled(byApi);

    const byClient = await working();
    const answer = await client.cancelTask({ tenant: '', id: byClient.id, metadata: undefined });
    expect(answer.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const seen = await endsCanceled(byClient);
    // The A2A client reads who canceled it beside the agent's canceled task.
    expect(seen.metadata?.fleetgate).toMatchObject({
      code: 'FLEETGATE_DISPATCH_CANCELED',
      reason: 'Canceled by bob.',
    });
    const read = await api<Dispatch>(gw.url, `/api/dispatches/${byClient.id}`, {
      token: operator,
    });
    // The A2A client's token names who canceled it.
    expect(read.body).toMatchObject({
      status: 'canceled',
      result: { error: { code: 'FLEETGATE_DISPATCH_CANCELED', message: 'Canceled by bob.' } },
    });
  });

  it('refuses a viewer token: cancelling is an operator action', async () => {
    const running = await dispatch({ agent: 'ops', skill: 'sitrep', text: 'hold' });
    const refused = await api<{ error: { code: string } }>(
      gw.url,
      `/api/dispatches/${running.id}/cancel`,
      { body: {}, token: viewer },
    );
    expect(refused.status).toBe(403);
    const read = await api<Dispatch>(gw.url, `/api/dispatches/${running.id}`, { token: operator });
    expect(read.body.status).toBe('running');
  });
});
