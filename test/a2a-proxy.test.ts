/**
 * The A2A proxy as an unmodified A2A client meets it: `fleetgate start --config` in its own
 * process, a real `@a2a-js/sdk` agent behind it, and the SDK's own client pointed at
 * `/a2a/<agent>` — the rewritten card, JSON-RPC and HTTP+JSON, v1.0 and v0.3, raw JSON-RPC; every
 * assertion on what the client got and on what the agent actually received.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { AgentCard, TaskState, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import {
  BLAST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  FLEETGATE_GATEWAY_V1_URI,
} from '../src/protocol/index.js';
import { sdkClient, userMessage } from './support/a2a-client.js';
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
        'proxy: { holdFor: 1500ms }',
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

    it('needs the operator role', async () => {
      const path = '/a2a/ops/.well-known/agent-card.json';
      expect((await api(gw.url, path)).status).toBe(401);
      expect((await api(gw.url, path, { token: VIEWER })).status).toBe(403);
      expect((await api(gw.url, path, { token: 'wrong-token-0123456789abcdef' })).status).toBe(401);
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
  });
});
