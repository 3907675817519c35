/**
 * The A2A proxy as an unmodified A2A client meets it: `fleetgate start --config` in its own
 * process, a real `@a2a-js/sdk` agent behind it, and the SDK's own client pointed at
 * `/a2a/<agent>` — the rewritten card, JSON-RPC and HTTP+JSON, v1.0 and v0.3, raw JSON-RPC; every
 * assertion on what the client got and on what the agent actually received.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { AgentCard, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import {
  BLAST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  FLEETGATE_GATEWAY_V1_URI,
} from '../src/protocol/index.js';
import { bearerFetch, sdkClient, userMessage } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'admin-token-0123456789abcdef';
const OPERATOR = 'operator-token-0123456789abc';
const VIEWER = 'viewer-token-0123456789abcde';

function textOf(task: Task): string {
  return task.artifacts
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('\n');
}

function statusText(task: Task): string {
  return (task.status?.message?.parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');
}

function approvalIdOf(task: Task): string {
  const id = (task.status?.message?.metadata?.['fleetgate'] as { approvalId?: string } | undefined)
    ?.approvalId;
  if (id === undefined) throw new Error(`task ${task.id} names no approval: ${statusText(task)}`);
  return id;
}

function kindOf(event: StreamResponse): string {
  const p = event.payload;
  if (p?.$case === 'statusUpdate') return `status:${TaskState[p.value.status!.state]}`;
  if (p?.$case === 'task') return `task:${TaskState[p.value.status!.state]}`;
  return p?.$case ?? 'none';
}

async function rpc(
  base: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}/a2a/ops`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe('the A2A proxy', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-proxy-'));
    agent = await startOpsAgent({ streaming: true });
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0, bodyLimit: 65536 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: ops, url: ${agent.url} }`,
        'policy: { sweepInterval: 200ms }',
        'proxy: { holdFor: 1500ms, push: { attempts: 2, backoff: 100ms, timeout: 1s } }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: PX_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: PX_OPERATOR, roles: [operator] }',
        '    - { name: carol, tokenEnv: PX_VIEWER, roles: [viewer] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', config],
      env: { PX_ADMIN: ADMIN, PX_OPERATOR: OPERATOR, PX_VIEWER: VIEWER },
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('card', () => {
    it('serves the agent card with every interface on the gateway, extensions kept, and the skill-hint entry', async () => {
      const { status, body } = await api<Record<string, unknown>>(
        gw.url,
        '/a2a/ops/.well-known/agent-card.json',
        { token: OPERATOR, headers: { 'A2A-Version': '1.0' } },
      );
      expect(status).toBe(200);
      const card = AgentCard.fromJSON(body);
      expect(card.name).toBe('ops');
      expect(card.supportedInterfaces.length).toBeGreaterThanOrEqual(2);
      for (const iface of card.supportedInterfaces) {
        expect(iface.url.startsWith(`${gw.url}/a2a/ops`)).toBe(true);
        expect(iface.url).not.toContain(agent.url);
      }
      expect(
        card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`),
      ).toEqual(
        expect.arrayContaining(['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3']),
      );
      const uris = (card.capabilities?.extensions ?? []).map((e) => e.uri);
      expect(uris).toEqual(
        expect.arrayContaining([BLAST_V1_URI, EFFECT_DOMAIN_V1_URI, FLEETGATE_GATEWAY_V1_URI]),
      );
      const hint = card.capabilities!.extensions.find((e) => e.uri === FLEETGATE_GATEWAY_V1_URI)!;
      expect(hint.params).toMatchObject({
        skillHintKeys: ['x-effect-domain-skill', 'fleetgate.skill'],
      });
      expect(card.skills.map((s) => s.id)).toEqual(['sitrep', 'pr_review', 'bulk_migration']);
    });

    it('serves the v0.3 card to a v0.3 client, at both card paths', async () => {
      for (const path of ['agent-card.json', 'agent.json']) {
        const { status, body } = await api<Record<string, unknown>>(
          gw.url,
          `/a2a/ops/.well-known/${path}`,
          { token: OPERATOR },
        );
        expect(status).toBe(200);
        expect(body['protocolVersion']).toBe('0.3');
        expect(body['url']).toBe(`${gw.url}/a2a/ops`);
      }
    });

    it('answers an unknown agent with 404 and a code', async () => {
      const { status, body } = await api(gw.url, '/a2a/nobody/.well-known/agent-card.json', {
        token: OPERATOR,
      });
      expect(status).toBe(404);
      expect(body).toMatchObject({ error: { code: 'FLEETGATE_AGENT_UNKNOWN' } });
    });

    it('is public; every call needs the operator role', async () => {
      const path = '/a2a/ops/.well-known/agent-card.json';
      expect((await api(gw.url, path)).status).toBe(200);
      const call = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } };
      const headers = { 'a2a-version': '1.0' };
      expect((await api(gw.url, '/a2a/ops', { body: call, headers })).status).toBe(401);
      expect((await api(gw.url, '/a2a/ops', { body: call, headers, token: VIEWER })).status).toBe(
        403,
      );
      expect(
        (
          await api(gw.url, '/a2a/ops', {
            body: call,
            headers,
            token: 'wrong-token-0123456789abcdef',
          })
        ).status,
      ).toBe(401);
    });
  });

  describe('SendMessage (JSON-RPC v1.0)', () => {
    it("returns the agent's answer under the gateway's task id, its deltas in the world state once", async () => {
      const before = agent.received.length;
      const client = await sdkClient(`${gw.url}/a2a/ops`, {
        token: OPERATOR,
        transport: 'JSONRPC',
      });
      expect(client.protocolVersion).toBe('1.0');
      const reply = await client.sendMessage({
        tenant: '',
        message: userMessage('status please', { 'x-effect-domain-skill': 'sitrep' }),
        configuration: undefined,
        metadata: { note: 'from the client' },
      });
      const task = reply as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(task)).toContain('sitrep: 1 change(s)');

      // The task id is the gateway's: its dispatch has the agent's task id.
      const { body: dispatch } = await api<{ status: string; taskId: string; skill: string }>(
        gw.url,
        `/api/dispatches/${task.id}`,
        { token: OPERATOR },
      );
      expect(dispatch).toMatchObject({ status: 'completed', skill: 'sitrep' });
      expect(dispatch.taskId).not.toBe(task.id);

      expect(agent.received.length).toBe(before + 1);
      const got = agent.received.at(-1)!;
      expect(got.text).toBe('status please');
      expect(got.skill).toBe('sitrep');
      expect(got.metadata).toMatchObject({ note: 'from the client', 'x-blast-radius': 'self' });
      // The caller's gateway token never reaches the agent.
      expect(got.headers['authorization']).toBeUndefined();
      expect(got.requestedExtensions).toEqual(
        expect.arrayContaining([EFFECT_DOMAIN_V1_URI, BLAST_V1_URI]),
      );

      const world = await eventually(async () => {
        const { body } = await api<{ version: number; state: { data?: { lastSitrep?: string } } }>(
          gw.url,
          '/api/world/board',
          { token: OPERATOR },
        );
        return body.state?.data?.lastSitrep === 'green' ? body : undefined;
      });
      // One delta event for the one task, however many paths saw it end.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const { body: settled } = await api<{ version: number }>(gw.url, '/api/world/board', {
        token: OPERATOR,
      });
      expect(settled.version).toBe(world.version);
      expect(world.version).toBe(1);

      const again = await client.getTask({ tenant: '', id: task.id });
      expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(again)).toBe(textOf(task));
    });

    it('sends the same messageId once: the retry gets the same task', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const before = agent.received.length;
      const message = userMessage('once', { 'fleetgate.skill': 'sitrep' });
      const first = (await client.sendMessage({
        tenant: '',
        message,
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      const second = (await client.sendMessage({
        tenant: '',
        message,
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      expect(second.id).toBe(first.id);
      expect(second.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(agent.received.length).toBe(before + 1);
    });

    it('answers raw JSON-RPC SendMessage (v1.0 wire) like the SDK does', async () => {
      const { status, body } = await rpc(
        gw.url,
        {
          jsonrpc: '2.0',
          id: 7,
          method: 'SendMessage',
          params: {
            message: {
              messageId: randomUUID(),
              role: 'ROLE_USER',
              parts: [{ text: 'raw' }],
              metadata: { 'x-effect-domain-skill': 'sitrep' },
            },
          },
        },
        { authorization: `Bearer ${OPERATOR}`, 'A2A-Version': '1.0' },
      );
      expect(status).toBe(200);
      expect(body).toMatchObject({
        jsonrpc: '2.0',
        id: 7,
        result: { task: { status: { state: 'TASK_STATE_COMPLETED' } } },
      });
    });

    it('refuses a message nested past the input depth limit as malformed, leaving no task behind', async () => {
      const auth = { authorization: `Bearer ${OPERATOR}`, 'A2A-Version': '1.0' };
      const contextId = randomUUID();
      const deep = `${'['.repeat(3000)}${']'.repeat(3000)}`;
      const { status, body } = await rpc(
        gw.url,
        `{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{"message":{"messageId":"${randomUUID()}","contextId":"${contextId}","role":"ROLE_USER","parts":[{"data":{"v":${deep}}}],"metadata":{"x-effect-domain-skill":"sitrep"}}}}`,
        auth,
      );
      expect(status).toBe(200);
      const error = (body as { error: { code: number; message: string } }).error;
      expect(error.code).toBe(-32602);
      expect(error.message).toBe(
        `The message nests deeper than 64 levels (at message.parts[0].data.v${'[0]'.repeat(60)}).`,
      );
      const listed = await rpc(
        gw.url,
        { jsonrpc: '2.0', id: 9, method: 'ListTasks', params: { contextId } },
        auth,
      );
      expect(listed.body).toMatchObject({ result: { tasks: [] } });
    });
  });
  describe('gated calls', () => {
    it('holds a gated call, answers input-required with the approval id and dashboard URL, and completes once approved', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const before = agent.received.filter((c) => c.skill === 'bulk_migration').length;
      const held = (await client.sendMessage({
        tenant: '',
        message: userMessage('migrate', { 'x-effect-domain-skill': 'bulk_migration' }),
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      expect(held.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const approvalId = approvalIdOf(held);
      expect(statusText(held)).toContain(`Awaiting approval ${approvalId}`);
      expect(statusText(held)).toContain(`${gw.url}/#/approvals/${approvalId}`);
      expect(agent.received.filter((c) => c.skill === 'bulk_migration').length).toBe(before);

      const approved = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
        token: ADMIN,
        body: { reason: 'ok' },
      });
      expect(approved.status).toBe(200);
      const done = await eventually(async () => {
        const task = await client.getTask({ tenant: '', id: held.id });
        return task.status?.state === TaskState.TASK_STATE_COMPLETED ? task : undefined;
      });
      expect(textOf(done)).toContain('bulk_migration: 1 change(s)');
      expect(agent.received.filter((c) => c.skill === 'bulk_migration').length).toBe(before + 1);
    });

    it('answers a blocking call approved while it is held with the finished task', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const sending = client.sendMessage({
        tenant: '',
        message: userMessage('migrate now', { 'fleetgate.skill': 'bulk_migration' }),
        configuration: undefined,
        metadata: undefined,
      });
      const pending = await eventually(async () => {
        const { body } = await api<{ approvals: { id: string; status: string }[] }>(
          gw.url,
          '/api/approvals?status=pending',
          { token: ADMIN },
        );
        return body.approvals[0];
      });
      await api(gw.url, `/api/approvals/${pending.id}/approve`, { token: ADMIN, body: {} });
      const task = (await sending) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    });

    it('never calls the agent for a rejected call, and ends the task rejected with the reason', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const before = agent.received.length;
      const held = (await client.sendMessage({
        tenant: '',
        message: userMessage('review', { 'x-effect-domain-skill': 'pr_review' }),
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      expect(held.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const rejected = await api(gw.url, `/api/approvals/${approvalIdOf(held)}/reject`, {
        token: ADMIN,
        body: { reason: 'not today' },
      });
      expect(rejected.status).toBe(200);
      const ended = await eventually(async () => {
        const task = await client.getTask({ tenant: '', id: held.id });
        return task.status?.state === TaskState.TASK_STATE_REJECTED ? task : undefined;
      });
      expect(statusText(ended)).toContain('not today');
      expect(statusText(ended)).toContain('The agent was not called');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(agent.received.length).toBe(before);
    });

    it('gates a call that names no skill as the widest-radius skill, and says so', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const held = (await client.sendMessage({
        tenant: '',
        message: userMessage('do something'),
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      expect(held.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      expect(statusText(held)).toContain('bulk_migration');
      expect(statusText(held)).toContain("the agent's widest radius (fleet)");
      await api(gw.url, `/api/approvals/${approvalIdOf(held)}/reject`, { token: ADMIN, body: {} });
    });
  });

  describe('streaming', () => {
    it("streams the agent's events in order under the gateway's task id", async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const events: StreamResponse[] = [];
      for await (const event of client.sendMessageStream({
        tenant: '',
        message: userMessage('stream it', { 'x-effect-domain-skill': 'sitrep' }),
        configuration: undefined,
        metadata: undefined,
      })) {
        events.push(event);
      }
      const kinds = events.map(kindOf);
      expect(kinds[0]).toMatch(/^task:/);
      expect(kinds.at(-1)).toBe('status:TASK_STATE_COMPLETED');
      expect(kinds).toContain('artifactUpdate');
      expect(kinds.indexOf('artifactUpdate')).toBeLessThan(kinds.length - 1);
      const id = (events[0]!.payload as { value: Task }).value.id;
      const { body } = await api<{ taskId: string }>(gw.url, `/api/dispatches/${id}`, {
        token: OPERATOR,
      });
      expect(body.taskId).not.toBe(id);
      for (const e of events.slice(1)) {
        const value = e.payload?.value as { taskId?: string; id?: string };
        expect(value.taskId ?? value.id).toBe(id);
      }
    });

    it('streams "awaiting approval" at once, then the agent\'s events once approved', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const events: StreamResponse[] = [];
      let approvalId: string | undefined;
      for await (const event of client.sendMessageStream({
        tenant: '',
        message: userMessage('stream a migration', { 'x-effect-domain-skill': 'bulk_migration' }),
        configuration: undefined,
        metadata: undefined,
      })) {
        events.push(event);
        const p = event.payload;
        if (approvalId === undefined && p?.$case === 'statusUpdate') {
          expect(p.value.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
          approvalId = (p.value.status?.message?.metadata?.['fleetgate'] as { approvalId: string })
            .approvalId;
          await api(gw.url, `/api/approvals/${approvalId}/approve`, { token: ADMIN, body: {} });
        }
      }
      const kinds = events.map(kindOf);
      expect(kinds.slice(0, 2)).toEqual([
        'task:TASK_STATE_SUBMITTED',
        'status:TASK_STATE_INPUT_REQUIRED',
      ]);
      expect(kinds).toContain('artifactUpdate');
      expect(kinds.at(-1)).toBe('status:TASK_STATE_COMPLETED');
    });

    it('resumes with SubscribeToTask after the client went away', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const abort = new AbortController();
      let id = '';
      let approvalId = '';
      try {
        for await (const event of client.sendMessageStream(
          {
            tenant: '',
            message: userMessage('stream then leave', { 'fleetgate.skill': 'bulk_migration' }),
            configuration: undefined,
            metadata: undefined,
          },
          { signal: abort.signal },
        )) {
          const p = event.payload;
          if (p?.$case === 'task') id = p.value.id;
          if (p?.$case === 'statusUpdate') {
            approvalId = (
              p.value.status?.message?.metadata?.['fleetgate'] as { approvalId: string }
            ).approvalId;
            abort.abort();
          }
        }
      } catch {
        // the client hung up
      }
      expect(approvalId).not.toBe('');
      const resumed: StreamResponse[] = [];
      for await (const event of client.resubscribeTask({ tenant: '', id })) {
        resumed.push(event);
        if (resumed.length === 1) {
          await api(gw.url, `/api/approvals/${approvalId}/approve`, { token: ADMIN, body: {} });
        }
      }
      const kinds = resumed.map(kindOf);
      expect(kinds[0]).toBe('task:TASK_STATE_INPUT_REQUIRED');
      expect(kinds).toContain('artifactUpdate');
      expect(kinds.at(-1)).toBe('status:TASK_STATE_COMPLETED');
    });
  });

  describe('A2A-Extensions', () => {
    /** The SDK client with a fetch that keeps each response's `A2A-Extensions` header. */
    async function recordingClient(transport: 'JSONRPC' | 'HTTP+JSON') {
      const seen: string[] = [];
      const inner = bearerFetch(OPERATOR);
      const fetchImpl: typeof fetch = async (input, init) => {
        const response = await inner(input, init);
        if (init?.method === 'POST') seen.push(response.headers.get('A2A-Extensions') ?? '');
        return response;
      };
      const factory = new ClientFactory({
        transports: [
          new JsonRpcTransportFactory({ fetchImpl }),
          new RestTransportFactory({ fetchImpl }),
        ],
        preferredTransports: [transport],
      });
      const card = await api<Record<string, unknown>>(
        gw.url,
        '/a2a/ops/.well-known/agent-card.json',
        { token: OPERATOR, headers: { 'A2A-Version': '1.0' } },
      );
      const client = await factory.createFromAgentCard(AgentCard.fromJSON(card.body));
      return { client, seen };
    }
    const uris = (header: string | undefined): string[] =>
      (header ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    const asked = { 'A2A-Extensions': `${EFFECT_DOMAIN_V1_URI}, ${FLEETGATE_GATEWAY_V1_URI}` };

    for (const transport of ['JSONRPC', 'HTTP+JSON'] as const) {
      it(`answers a blocking ${transport} call with the extensions activated for it`, async () => {
        const { client, seen } = await recordingClient(transport);
        const before = agent.received.length;
        const task = (await client.sendMessage(
          {
            tenant: '',
            message: userMessage('ext blocking', { 'x-effect-domain-skill': 'sitrep' }),
            configuration: undefined,
            metadata: undefined,
          },
          { serviceParameters: asked },
        )) as Task;
        expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        expect(agent.received.length).toBe(before + 1);
        // The client's requests reached the agent merged with the gateway's own.
        const got = uris(seen.at(-1));
        expect(got).toEqual(
          expect.arrayContaining([EFFECT_DOMAIN_V1_URI, FLEETGATE_GATEWAY_V1_URI]),
        );
        // What the agent echoed (the extensions the gateway activated for the call) is passed on.
        expect(got).toContain(BLAST_V1_URI);
        expect(new Set(got).size).toBe(got.length);
      });

      it(`answers a streaming ${transport} call with the requested extensions the agent declares`, async () => {
        const { client, seen } = await recordingClient(transport);
        const kinds: string[] = [];
        for await (const event of client.sendMessageStream(
          {
            tenant: '',
            message: userMessage('ext streaming', { 'x-effect-domain-skill': 'sitrep' }),
            configuration: undefined,
            metadata: undefined,
          },
          {
            serviceParameters: { 'A2A-Extensions': `${asked['A2A-Extensions']}, urn:not-declared` },
          },
        )) {
          kinds.push(kindOf(event));
        }
        expect(kinds.at(-1)).toBe('status:TASK_STATE_COMPLETED');
        const got = uris(seen.at(-1));
        expect(got).toEqual(
          expect.arrayContaining([EFFECT_DOMAIN_V1_URI, FLEETGATE_GATEWAY_V1_URI]),
        );
        expect(got).not.toContain('urn:not-declared');
      });
    }
  });

  describe('transports and versions', () => {
    it('answers the SDK client over HTTP+JSON', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, {
        token: OPERATOR,
        transport: 'HTTP+JSON',
      });
      const task = (await client.sendMessage({
        tenant: '',
        message: userMessage('rest', { 'x-effect-domain-skill': 'sitrep' }),
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect((await client.getTask({ tenant: '', id: task.id })).id).toBe(task.id);
    });

    it('answers a v0.3 client built from the v0.3 card, on both transports', async () => {
      const { body } = await api(gw.url, '/a2a/ops/.well-known/agent-card.json', {
        token: OPERATOR,
      });
      const card = parseLegacyAgentCard(body);
      for (const transport of ['JSONRPC', 'HTTP+JSON'] as const) {
        const fetchImpl = bearerFetch(OPERATOR);
        const factory = new ClientFactory({
          transports: [
            new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
            new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
          ],
          preferredTransports: [transport],
        });
        const client = await factory.createFromAgentCard(card);
        expect(client.protocolVersion).toBe('0.3');
        const before = agent.received.length;
        const task = (await client.sendMessage({
          tenant: '',
          message: userMessage(`legacy ${transport}`, { 'x-effect-domain-skill': 'sitrep' }),
          configuration: undefined,
          metadata: undefined,
        })) as Task;
        expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        expect(agent.received.length).toBe(before + 1);
        expect(agent.received.at(-1)!.text).toBe(`legacy ${transport}`);
      }
    });

    it('answers raw v0.3 JSON-RPC (message/send, kind, lowercase states)', async () => {
      const { status, body } = await rpc(
        gw.url,
        {
          jsonrpc: '2.0',
          id: 'v03',
          method: 'message/send',
          params: {
            message: {
              kind: 'message',
              messageId: randomUUID(),
              role: 'user',
              parts: [{ kind: 'text', text: 'old client' }],
              metadata: { 'x-effect-domain-skill': 'sitrep' },
            },
          },
        },
        { authorization: `Bearer ${OPERATOR}` },
      );
      expect(status).toBe(200);
      expect(body).toMatchObject({
        id: 'v03',
        result: { kind: 'task', status: { state: 'completed' } },
      });
    });
  });

  describe('refused before anything is forwarded', () => {
    it('answers malformed JSON-RPC, an oversized body and a wrong token in the A2A shape', async () => {
      const before = agent.received.length;
      const auth = { authorization: `Bearer ${OPERATOR}`, 'A2A-Version': '1.0' };

      const garbled = await rpc(gw.url, '{"jsonrpc": "2.0", "method": ', auth);
      expect(garbled.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });

      const noMethod = await rpc(gw.url, { jsonrpc: '2.0', id: 1, params: {} }, auth);
      // Invalid request (the SDK's own answer: -32600 or -32602, never forwarded).
      expect([-32600, -32602]).toContain((noMethod.body as { error: { code: number } }).error.code);

      const unknownMethod = await rpc(
        gw.url,
        { jsonrpc: '2.0', id: 2, method: 'Nope', params: {} },
        auth,
      );
      expect(unknownMethod.body).toMatchObject({ error: { code: -32601 } });

      const big = await rpc(
        gw.url,
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'SendMessage',
          params: {
            message: { messageId: 'big', role: 'ROLE_USER', parts: [{ text: 'x'.repeat(70_000) }] },
          },
        },
        auth,
      );
      expect(big.status).toBe(413);
      expect(big.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });

      const wrong = await rpc(
        gw.url,
        { jsonrpc: '2.0', id: 4, method: 'SendMessage', params: {} },
        { authorization: 'Bearer wrong-token-0123456789abcdef', 'A2A-Version': '1.0' },
      );
      expect(wrong.status).toBe(401);
      expect(wrong.body).toMatchObject({
        jsonrpc: '2.0',
        error: { code: -32600, data: [{ reason: 'FLEETGATE_AUTH_INVALID' }] },
      });

      const nobody = await fetch(`${gw.url}/a2a/nobody`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'SendMessage', params: {} }),
      });
      expect(nobody.status).toBe(404);
      expect(await nobody.json()).toMatchObject({
        error: { data: [{ reason: 'FLEETGATE_AGENT_UNKNOWN' }] },
      });

      const restWrong = await fetch(`${gw.url}/a2a/ops/rest/tasks/x`, {
        headers: { authorization: 'Bearer wrong-token-0123456789abcdef', 'A2A-Version': '1.0' },
      });
      expect(restWrong.status).toBe(401);
      expect(await restWrong.json()).toMatchObject({
        error: { code: 401, status: 'UNAUTHENTICATED' },
      });

      expect(agent.received.length).toBe(before);
    });
  });
  describe('push notifications to clients', () => {
    it('stores the config and delivers the terminal state once, with the client token', async () => {
      const received: {
        headers: IncomingHttpHeaders;
        body: { task?: { id: string; status?: { state: string } } };
      }[] = [];
      const server = createServer((req, res) => {
        let text = '';
        req.on('data', (chunk: Buffer) => (text += chunk.toString()));
        req.on('end', () => {
          received.push({ headers: req.headers, body: JSON.parse(text) });
          res.writeHead(200).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const callback = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      try {
        const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
        const held = (await client.sendMessage({
          tenant: '',
          message: userMessage('push me', { 'x-effect-domain-skill': 'bulk_migration' }),
          configuration: undefined,
          metadata: undefined,
        })) as Task;
        const config = {
          tenant: '',
          id: 'cb-1',
          taskId: held.id,
          url: callback,
          token: 'client-secret-token',
          authentication: undefined,
        };
        expect(await client.createTaskPushNotificationConfig(config)).toMatchObject({
          id: 'cb-1',
          url: callback,
        });
        expect(
          await client.getTaskPushNotificationConfig({ tenant: '', taskId: held.id, id: 'cb-1' }),
        ).toMatchObject({
          url: callback,
          token: 'client-secret-token',
        });
        const listed = await client.listTaskPushNotificationConfig({
          tenant: '',
          taskId: held.id,
          pageSize: 0,
          pageToken: '',
        });
        expect(listed.configs.map((c) => c.id)).toEqual(['cb-1']);

        await api(gw.url, `/api/approvals/${approvalIdOf(held)}/approve`, {
          token: ADMIN,
          body: {},
        });
        const terminal = await eventually(() => {
          const done = received.filter(
            (r) => r.body.task?.status?.state === 'TASK_STATE_COMPLETED',
          );
          return done.length > 0 ? done : undefined;
        });
        await new Promise((resolve) => setTimeout(resolve, 1500));
        expect(
          received.filter((r) => r.body.task?.status?.state === 'TASK_STATE_COMPLETED'),
        ).toHaveLength(1);
        expect(terminal[0]!.body.task!.id).toBe(held.id);
        expect(terminal[0]!.headers['x-a2a-notification-token']).toBe('client-secret-token');

        await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: held.id, id: 'cb-1' });
        const after = await client.listTaskPushNotificationConfig({
          tenant: '',
          taskId: held.id,
          pageSize: 0,
          pageToken: '',
        });
        expect(after.configs).toEqual([]);
      } finally {
        server.close();
      }
    });

    it('gives up after the configured tries and records the delivery dead', async () => {
      const client = await sdkClient(`${gw.url}/a2a/ops`, { token: OPERATOR });
      const task = (await client.sendMessage({
        tenant: '',
        message: userMessage('nobody listens', { 'x-effect-domain-skill': 'sitrep' }),
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      // A port nothing listens on: every try fails.
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      await client.createTaskPushNotificationConfig({
        tenant: '',
        id: 'dead-1',
        taskId: task.id,
        url: `http://127.0.0.1:${port}/gone`,
        token: 'x',
        authentication: undefined,
      });
      const dead = await eventually(async () => {
        const { body } = await api<string>(gw.url, '/metrics', { token: OPERATOR });
        const line = /a2a_proxy_push_deliveries_total\{outcome="dead"\} (\d+)/.exec(body);
        return line !== null && Number(line[1]) >= 1 ? line : undefined;
      });
      expect(Number(dead[1])).toBe(1);
    });
  });

  describe('metrics', () => {
    it('counts requests by agent, method and outcome, task states, stream first bytes and held calls', async () => {
      const { body } = await api<string>(gw.url, '/metrics', { token: OPERATOR });
      expect(body).toMatch(
        /a2a_proxy_requests_total\{agent="ops",method="SendMessage",status="ok"\} \d+/,
      );
      expect(body).toMatch(
        /a2a_proxy_requests_total\{agent="ops",method="GetTask",status="ok"\} \d+/,
      );
      expect(body).toMatch(
        /a2a_proxy_requests_total\{agent="ops",method="unknown",status="auth_invalid"\} \d+/,
      );
      expect(body).toMatch(/a2a_proxy_task_states_total\{agent="ops",state="completed"\} \d+/);
      expect(body).toMatch(/a2a_proxy_task_states_total\{agent="ops",state="rejected"\} \d+/);
      expect(body).toMatch(
        /a2a_proxy_stream_first_byte_seconds_count\{agent="ops",method="SendStreamingMessage"\} [1-9]/,
      );
      expect(body).toMatch(/a2a_proxy_held_for_approval\{agent="ops"\} 0/);
    });
  });
});
