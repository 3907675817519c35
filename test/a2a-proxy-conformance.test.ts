/**
 * The A2A proxy behaves as the agent behind it does, for an unmodified SDK client: a plain
 * `@a2a-js/sdk` agent behind a real `fleetgate start`, called at `/a2a/plain` with the SDK's own
 * client (JSON-RPC and HTTP+JSON) and with plain HTTP where the wire itself is the point. Each case
 * is one of the differences the official A2A TCK found between the agent and the proxy:
 * the public card (E) in the spec's JSON form (G), a repeated message id (D), streams (F), a push
 * configuration sent with the message (C), ListTasks (A) and follow-up messages (B).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentCard, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkClient, userMessage } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';
import { startPlainSdkAgent, type PlainAgent } from './support/plain-sdk-agent.js';

const ALICE = 'conf-alice-0123456789abcdef';
const BOB = 'conf-bob-0123456789abcdefgh';
const ROOT = 'conf-root-0123456789abcdefg';

const stateOf = (event: StreamResponse): TaskState | undefined => {
  const p = event.payload;
  return p?.$case === 'task'
    ? p.value.status?.state
    : p?.$case === 'statusUpdate'
      ? p.value.status?.state
      : undefined;
};

/** A message to the agent's `work` skill (radius `self`: nothing waits for approval). */
function send(
  text: string,
  extra: { messageId?: string; contextId?: string; taskId?: string; skill?: string } = {},
) {
  return {
    tenant: '',
    message: {
      ...userMessage(
        text,
        { 'x-effect-domain-skill': extra.skill ?? 'work' },
        extra.messageId ?? randomUUID(),
      ),
      contextId: extra.contextId ?? '',
      taskId: extra.taskId ?? '',
    },
    configuration: undefined,
    metadata: undefined,
  };
}

describe('the A2A proxy in front of a plain SDK agent', () => {
  let dir: string;
  let agent: PlainAgent;
  let gw: ServiceProcess;
  let base: string;
  let pushes: {
    headers: IncomingHttpHeaders;
    body: unknown;
    url?: string | undefined;
    answered: boolean;
  }[];
  let receiver: Server;
  let receiverUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-proxy-conformance-'));
    agent = await startPlainSdkAgent({ lingerMs: 1500 });
    pushes = [];
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const push = {
          headers: req.headers,
          body: JSON.parse(body) as unknown,
          url: req.url,
          answered: false,
        };
        pushes.push(push);
        // A slow receiver: its answer comes well after a client could have heard of the task.
        const answer = (): void => {
          push.answered = true;
          res.writeHead(200).end();
        };
        if (req.url === '/slow-hook') setTimeout(answer, 400);
        else answer();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: plain, url: ${agent.url} }]`,
        // Longer than any case may take: a call that waits for it fails the case.
        'proxy: { holdFor: 60s }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: CONF_ALICE, roles: [operator] }',
        '    - { name: bob, tokenEnv: CONF_BOB, roles: [operator] }',
        '    - { name: root, tokenEnv: CONF_ROOT, roles: [admin] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', file],
      env: { CONF_ALICE: ALICE, CONF_BOB: BOB, CONF_ROOT: ROOT },
    });
    base = `${gw.url}/a2a/plain`;
    await eventually(async () => {
      const r = await fetch(`${base}/.well-known/agent-card.json`, {
        headers: { authorization: `Bearer ${ALICE}`, 'a2a-version': '1.0' },
      });
      return r.status === 200 ? true : undefined;
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('E: serves the card without a token and keeps every other route behind it', async () => {
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
      for (const version of ['1.0', undefined]) {
        const r = await fetch(`${base}${path}`, {
          headers: version === undefined ? {} : { 'a2a-version': version },
        });
        expect(r.status, `${path} A2A-Version ${version ?? 'none'}`).toBe(200);
        expect(((await r.json()) as { name?: string }).name).toBe('Plain SDK agent');
      }
    }
    const rpc = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(rpc.status).toBe(401);
    const rest = await fetch(`${base}/rest/tasks/x`, { headers: { 'a2a-version': '1.0' } });
    expect(rest.status).toBe(401);
    const extended = await fetch(`${base}/rest/extendedAgentCard`, {
      headers: { 'a2a-version': '1.0' },
    });
    expect(extended.status).toBe(401);
    // The card is what a client needs to find the token to send.
    const client = await sdkClient(base, { token: ALICE });
    const task = (await client.sendMessage(send('hello'))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);
  });

  it("G: serves the v1.0 card in the spec's JSON form", async () => {
    const r = await fetch(`${base}/.well-known/agent-card.json`, {
      headers: { 'a2a-version': '1.0' },
    });
    const text = await r.text();
    expect(text).not.toContain('$case');
    const json = JSON.parse(text) as {
      securitySchemes: Record<string, Record<string, { scheme?: string }>>;
      securityRequirements: unknown[];
    };
    expect(json.securitySchemes['fleetgate']).toEqual({
      httpAuthSecurityScheme: expect.objectContaining({ scheme: 'Bearer' }) as unknown,
    });
    // The protobuf JSON form decodes to the same declaration a strict client reads.
    const card = AgentCard.fromJSON(json);
    expect(card.securitySchemes['fleetgate']?.scheme?.$case).toBe('httpAuthSecurityScheme');
    expect(card.securityRequirements).toHaveLength(1);
    expect(r.headers.get('etag')).toMatch(/^W\/"/);
    const again = await fetch(`${base}/.well-known/agent-card.json`, {
      headers: { 'a2a-version': '1.0', 'if-none-match': r.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
  });

  it('D: answers a repeated message id at once, as the original did, without a second call', async () => {
    const client = await sdkClient(base, { token: ALICE });
    const messageId = randomUUID();
    const first = (await client.sendMessage(send('hello', { messageId }))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const calls = agent.received.length;
    // holdFor is 60 s: a repeat that waited for the task to end would time this case out.
    const again = (await client.sendMessage(send('hello', { messageId }))) as Task;
    expect(again.id).toBe(first.id);
    expect(again.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(agent.received.length).toBe(calls);
  }, 15_000);

  it("F: ends a stream when the agent's does, with each event once", async () => {
    for (const transport of ['JSONRPC', 'HTTP+JSON'] as const) {
      const client = await sdkClient(base, { token: ALICE, transport });
      const events: StreamResponse[] = [];
      for await (const event of client.sendMessageStream(send('hello'))) events.push(event);
      // The agent's stream: its task (submitted), then working; then it ended, and so does ours.
      expect(
        events.map((e) => e.payload?.$case),
        transport,
      ).toEqual(['task', 'statusUpdate']);
      expect(events.map(stateOf)).toEqual([
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
      ]);
    }
  }, 15_000);

  it('F: a REST subscription sends its headers and the task at once, and ends with the agent', async () => {
    const client = await sdkClient(base, { token: ALICE, transport: 'HTTP+JSON' });
    const started = (await client.sendMessage({
      ...send('linger'),
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: true,
      },
    })) as Task;
    // The agent keeps it submitted for 1.5 s, then working, and its stream ends.
    const headersAt = Date.now();
    const response = await fetch(`${base}/rest/tasks/${started.id}:subscribe`, {
      headers: { authorization: `Bearer ${ALICE}`, 'a2a-version': '1.0' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    expect(Date.now() - headersAt).toBeLessThan(1000);
    const body = await response.text();
    const frames = body
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5)) as Record<string, unknown>);
    expect(frames.length).toBeGreaterThanOrEqual(2);
    expect(Object.keys(frames[0]!)).toEqual(['task']);
    expect(frames.filter((f) => 'task' in f)).toHaveLength(1);
    expect(JSON.stringify(frames.at(-1))).toContain('TASK_STATE_WORKING');
  }, 15_000);

  it('C: stores and delivers a push configuration sent with the message', async () => {
    const client = await sdkClient(base, { token: ALICE });
    const task = (await client.sendMessage({
      ...send('hello'),
      configuration: {
        acceptedOutputModes: [],
        returnImmediately: false,
        taskPushNotificationConfig: {
          tenant: '',
          id: 'with-the-message',
          taskId: '',
          url: receiverUrl,
          token: 'secret-of-the-client',
          authentication: undefined,
        },
      },
    })) as Task;
    const configs = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(configs.configs.map((c) => [c.id, c.url])).toEqual([['with-the-message', receiverUrl]]);
    const push = await eventually(async () =>
      Promise.resolve(
        pushes.find((p) => JSON.stringify(p.body).includes(task.id) && p.body !== undefined),
      ),
    );
    expect(push.headers['x-a2a-notification-token']).toBe('secret-of-the-client');
    // The task as it started, then its next state, each once.
    const states = await eventually(async () => {
      const seen = pushes
        .filter((p) => JSON.stringify(p.body).includes(task.id))
        .map((p) => (p.body as { task?: { status?: { state?: string } } }).task?.status?.state);
      return Promise.resolve(seen.length >= 2 ? seen : undefined);
    });
    expect([...states].sort()).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);
  });

  it("C: a push configuration sent with the message has the task's first state answered before the client hears of the task", async () => {
    const slowUrl = receiverUrl.replace(/\/hook$/, '/slow-hook');
    const configuration = {
      acceptedOutputModes: [],
      returnImmediately: false,
      taskPushNotificationConfig: {
        tenant: '',
        id: 'slow',
        taskId: '',
        url: slowUrl,
        token: '',
        authentication: undefined,
      },
    };
    const firstPush = (taskId: string) =>
      pushes.find((p) => p.url === '/slow-hook' && JSON.stringify(p.body).includes(taskId));
    const client = await sdkClient(base, { token: ALICE });
    const calls = agent.received.length;
    // Streaming: the receiver has answered the submitted task when the first event arrives.
    for await (const event of client.sendMessageStream({ ...send('hello'), configuration })) {
      expect(event.payload?.$case).toBe('task');
      const id = (event.payload as { value: Task }).value.id;
      expect(firstPush(id)?.answered).toBe(true);
      expect(JSON.stringify(firstPush(id)?.body)).toContain('TASK_STATE_SUBMITTED');
      break;
    }
    // Blocking, answered at once: the same.
    const task = (await client.sendMessage({
      ...send('hello'),
      configuration: { ...configuration, returnImmediately: true },
    })) as Task;
    expect(firstPush(task.id)?.answered).toBe(true);
    // Both calls go on at the agent after their answers: they land before the next case counts.
    await eventually(async () =>
      Promise.resolve(agent.received.length >= calls + 2 ? true : undefined),
    );
  });

  it("C: refuses a push URL CreateTaskPushNotificationConfig refuses, and the agent isn't called", async () => {
    const client = await sdkClient(base, { token: ALICE });
    const calls = agent.received.length;
    await expect(
      client.sendMessage({
        ...send('hello'),
        configuration: {
          acceptedOutputModes: [],
          returnImmediately: false,
          taskPushNotificationConfig: {
            tenant: '',
            id: '',
            taskId: '',
            url: 'not a url',
            token: '',
            authentication: undefined,
          },
        },
      }),
    ).rejects.toThrow(/not a URL/);
    expect(agent.received.length).toBe(calls);
  });

  describe('A: ListTasks', () => {
    const contextA = randomUUID();
    const contextB = randomUUID();
    let mine: Task[];

    beforeAll(async () => {
      const alice = await sdkClient(base, { token: ALICE });
      const bob = await sdkClient(base, { token: BOB });
      mine = [];
      for (const contextId of [contextA, contextA, contextB]) {
        mine.push((await alice.sendMessage(send('hello', { contextId }))) as Task);
      }
      await bob.sendMessage(send('hello', { contextId: contextA }));
    });

    async function list(client: Client, params: Record<string, unknown> = {}) {
      return client.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: '',
        statusTimestampAfter: undefined,
        ...params,
      });
    }

    for (const transport of ['JSONRPC', 'HTTP+JSON'] as const) {
      it(`filters, pages and scopes to the caller (${transport})`, async () => {
        const alice = await sdkClient(base, { token: ALICE, transport });
        const bob = await sdkClient(base, { token: BOB, transport });
        const root = await sdkClient(base, { token: ROOT, transport });

        const byContext = await list(alice, { contextId: contextA });
        expect(byContext.tasks.map((t) => t.id).sort()).toEqual([mine[0]!.id, mine[1]!.id].sort());
        expect(byContext.totalSize).toBe(2);
        // Bob's task in the same context is his, not Alice's; an admin sees both callers'.
        expect((await list(bob, { contextId: contextA })).tasks).toHaveLength(1);
        expect((await list(root, { contextId: contextA })).tasks).toHaveLength(3);
        // What an admin lists, it reads; a caller does not read another's task.
        const bobs = (await list(bob, { contextId: contextA })).tasks[0]!;
        const read = await root.getTask({ tenant: '', id: bobs.id, historyLength: undefined });
        expect(read.id).toBe(bobs.id);
        await expect(
          alice.getTask({ tenant: '', id: bobs.id, historyLength: undefined }),
        ).rejects.toThrow(/not found/i);

        const working = await list(alice, { status: TaskState.TASK_STATE_WORKING, pageSize: 2 });
        expect(working.tasks).toHaveLength(2);
        expect(working.pageSize).toBe(2);
        expect(working.nextPageToken).not.toBe('');
        const next = await list(alice, {
          status: TaskState.TASK_STATE_WORKING,
          pageSize: 2,
          pageToken: working.nextPageToken,
        });
        const seen = [...working.tasks, ...next.tasks].map((t) => t.id);
        expect(new Set(seen).size).toBe(seen.length);
        for (const t of mine) expect(seen).toContain(t.id);
        expect(
          (await list(alice, { status: TaskState.TASK_STATE_COMPLETED, contextId: contextA }))
            .tasks,
        ).toHaveLength(0);

        const withHistory = await list(alice, { contextId: contextB, historyLength: 0 });
        expect(withHistory.tasks[0]!.history).toEqual([]);
        expect((await list(alice, { contextId: contextB })).tasks[0]!.history.length).toBe(1);

        const future = new Date(Date.now() + 60_000).toISOString();
        expect((await list(alice, { statusTimestampAfter: future })).tasks).toHaveLength(0);
        const past = new Date(Date.now() - 600_000).toISOString();
        expect(
          (await list(alice, { statusTimestampAfter: past, contextId: contextB })).tasks,
        ).toHaveLength(1);

        await expect(list(alice, { pageSize: 101 })).rejects.toThrow(/pageSize/);
        await expect(list(alice, { pageToken: 'bm9wZQ' })).rejects.toThrow(/pageToken/);
      });
    }

    it('answers v1.0 JSON-RPC on the wire', async () => {
      const r = await api<{ result: { tasks: { id: string }[]; totalSize: number } }>(
        gw.url,
        '/a2a/plain',
        {
          token: ALICE,
          headers: { 'a2a-version': '1.0' },
          body: { jsonrpc: '2.0', id: 7, method: 'ListTasks', params: { contextId: contextB } },
        },
      );
      expect(r.body.result.tasks.map((t) => t.id)).toEqual([mine[2]!.id]);
      expect(r.body.result.totalSize).toBe(1);
    });
  });

  describe('B: follow-up messages', () => {
    it("sends a follow-up to a working task to the agent's task, blocking and streaming", async () => {
      const client = await sdkClient(base, { token: ALICE });
      const task = (await client.sendMessage(send('build it'))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      const agentTaskId = agent.received.at(-1)!.taskId;

      const more = (await client.sendMessage(
        send('more detail', { taskId: task.id, contextId: task.contextId }),
      )) as Task;
      expect(more.id).toBe(task.id);
      expect(more.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      expect(agent.received.at(-1)).toMatchObject({ taskId: agentTaskId, followUp: true });

      const events: StreamResponse[] = [];
      for await (const event of client.sendMessageStream(
        send('finish', { taskId: task.id, contextId: task.contextId }),
      )) {
        events.push(event);
      }
      expect(agent.received.at(-1)).toMatchObject({ taskId: agentTaskId, followUp: true });
      expect(events.filter((e) => e.payload?.$case === 'task')).toHaveLength(1);
      expect(stateOf(events.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
      const done = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(JSON.stringify(done.artifacts)).toContain('done: build it');
      await expect(
        client.sendMessage(send('again', { taskId: task.id, contextId: task.contextId })),
      ).rejects.toThrow(/already ended/);
    }, 20_000);

    it("holds a follow-up as a call of the task's skill, and sends it on the task once approved", async () => {
      // A deploy is gated: approved once for the message that started it, a follow-up to it
      // needs approval again. It waits in the inbox, is not sent until approved, then is sent on
      // the agent's task once.
      const client = await sdkClient(base, { token: ALICE });
      const held = (await client.sendMessage({
        ...send('deploy', { skill: 'deploy' }),
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: undefined,
          returnImmediately: true,
        },
      })) as Task;
      const approvalId = await eventually(async () => {
        const t = await client.getTask({ tenant: '', id: held.id, historyLength: undefined });
        return (t.status?.message?.metadata?.['fleetgate'] as { approvalId?: string } | undefined)
          ?.approvalId;
      });
      const approved = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
        token: ROOT,
        body: {},
      });
      expect(approved.status).toBe(200);
      await eventually(async () => {
        const t = await client.getTask({ tenant: '', id: held.id, historyLength: undefined });
        return t.status?.state === TaskState.TASK_STATE_WORKING ? t : undefined;
      });
      const agentTaskId = agent.received.at(-1)!.taskId;
      const calls = agent.received.length;

      const answer = (await client.sendMessage(
        send('and the rest', { taskId: held.id, contextId: held.contextId, skill: 'deploy' }),
      )) as Task;
      // Answered at once: the task as it is, and the approval the follow-up waits for.
      expect(answer.id).toBe(held.id);
      expect(answer.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      const followUp = (
        answer.metadata?.['fleetgate'] as { followUp?: { approvalId: string; approvalUrl: string } }
      ).followUp!;
      expect(followUp.approvalUrl).toContain(followUp.approvalId);
      expect(agent.received.length).toBe(calls);
      // GetTask shows the follow-up waiting, as the answer did.
      const waiting = await client.getTask({ tenant: '', id: held.id, historyLength: undefined });
      expect(waiting.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      expect(waiting.metadata?.['fleetgate']).toMatchObject({ followUp });
      const pending = await api<{
        kind: string;
        dispatchId: string;
        requestedBy: string;
        taskId: string;
      }>(gw.url, `/api/approvals/${followUp.approvalId}`, { token: ROOT });
      expect(pending.body).toMatchObject({
        kind: 'follow-up',
        dispatchId: held.id,
        requestedBy: 'alice',
        taskId: agentTaskId,
      });
      // The caller may not approve its own follow-up.
      const self = await api(gw.url, `/api/approvals/${followUp.approvalId}/approve`, {
        token: ALICE,
        body: {},
      });
      expect(self.status).toBe(403);
      expect(agent.received.length).toBe(calls);

      const ok = await api(gw.url, `/api/approvals/${followUp.approvalId}/approve`, {
        token: ROOT,
        body: {},
      });
      expect(ok.status).toBe(200);
      const sent = await eventually(() =>
        agent.received.length > calls ? agent.received.at(-1) : undefined,
      );
      expect(sent).toMatchObject({ taskId: agentTaskId, followUp: true });
      expect(JSON.stringify(sent.message.parts)).toContain('and the rest');
      await eventually(async () => {
        const a = await api<{ status: string }>(gw.url, `/api/approvals/${followUp.approvalId}`, {
          token: ROOT,
        });
        return a.body.status === 'consumed' ? true : undefined;
      });
      // Approving again sends nothing more.
      const again = await api(gw.url, `/api/approvals/${followUp.approvalId}/approve`, {
        token: ROOT,
        body: {},
      });
      expect(again.status).toBe(409);
      expect(agent.received.length).toBe(calls + 1);
      const sentOn = await client.getTask({ tenant: '', id: held.id, historyLength: undefined });
      expect(sentOn.metadata?.['fleetgate']).not.toHaveProperty('followUp');

      // A rejected follow-up is never sent, and the task goes on.
      const second = (await client.sendMessage(
        send('one more thing', { taskId: held.id, contextId: held.contextId, skill: 'deploy' }),
      )) as Task;
      const secondId = (second.metadata?.['fleetgate'] as { followUp: { approvalId: string } })
        .followUp.approvalId;
      const asked = await client.getTask({ tenant: '', id: held.id, historyLength: undefined });
      expect(asked.metadata?.['fleetgate']).toMatchObject({ followUp: { approvalId: secondId } });
      const rejected = await api(gw.url, `/api/approvals/${secondId}/reject`, {
        token: ROOT,
        body: { reason: 'not now' },
      });
      expect(rejected.status).toBe(200);
      expect(agent.received.length).toBe(calls + 1);
      const after = await client.getTask({ tenant: '', id: held.id, historyLength: undefined });
      expect(after.status?.state).not.toBe(TaskState.TASK_STATE_REJECTED);
      expect(after.metadata?.['fleetgate']).not.toHaveProperty('followUp');
    }, 30_000);
  });
});
