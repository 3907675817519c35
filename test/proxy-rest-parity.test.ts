/**
 * v1.0 HTTP+JSON through the proxy answers what a plain `@a2a-js/sdk` agent answers on its own
 * (the SDK's express `restHandler`): the same requests — good ones and the mistakes a client makes
 * — sent to the agent and to `/a2a/<agent>/rest` on a real `fleetgate start` get the same status,
 * the same error status and reason, and answers of the same shape. Ids differ (the proxy's are
 * the gateway's), messages may say more and a task carries the proxy's metadata besides; what a
 * client branches on does not differ.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceProcess } from './support/gateway-service.js';
import { eventually, startServiceProcess } from './support/gateway-service.js';
import { startPlainSdkAgent, type PlainAgent } from './support/plain-sdk-agent.js';

const TOKEN = 'parity-operator-0123456789abcdef';

/** What a client branches on in an answer: its status, error status and reason, body keys. */
interface Outcome {
  status: number;
  error?: { status: unknown; reason: unknown };
  keys?: string[];
}

async function outcomeOf(response: Response): Promise<Outcome> {
  const text = await response.text();
  const body = text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
  const error = body?.['error'] as
    { status?: unknown; details?: { reason?: unknown }[] } | undefined;
  if (error !== undefined) {
    return {
      status: response.status,
      error: { status: error.status, reason: error.details?.[0]?.reason },
    };
  }
  return {
    status: response.status,
    // The proxy adds its own `metadata.fleetgate` to a task, by design: the rest is the agent's.
    ...(body === undefined
      ? {}
      : {
          keys: Object.keys(body)
            .filter((k) => k !== 'metadata')
            .sort(),
        }),
  };
}

/** A v1.0 `SendMessageRequest` with a message of `text`. */
function send(text: string, message: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    message: {
      messageId: randomUUID(),
      role: 'ROLE_USER',
      parts: [{ text }],
      metadata: { 'x-effect-domain-skill': 'work' },
      ...message,
    },
  };
}

describe('v1.0 HTTP+JSON parity between a plain SDK agent and the proxy in front of it', () => {
  let dir: string;
  let agent: PlainAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-rest-parity-'));
    agent = await startPlainSdkAgent();
    const file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: plain, url: ${agent.url} }]`,
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: PARITY_TOKEN, roles: [operator] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({ args: ['--config', file], env: { PARITY_TOKEN: TOKEN } });
    await eventually(async () => {
      const r = await fetch(`${gw.url}/a2a/plain/.well-known/agent-card.json`, {
        headers: { 'a2a-version': '1.0' },
      });
      return r.status === 200 ? true : undefined;
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Sends one request to the agent's REST base and to the proxy's; resolves both outcomes. */
  async function both(
    method: string,
    path: (side: 'direct' | 'proxy') => string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ direct: Outcome; proxy: Outcome }> {
    const call = async (side: 'direct' | 'proxy'): Promise<Outcome> => {
      const base = side === 'direct' ? `${agent.url}/rest` : `${gw.url}/a2a/plain/rest`;
      return outcomeOf(
        await fetch(`${base}${path(side)}`, {
          method,
          headers: {
            'a2a-version': '1.0',
            ...(side === 'proxy' ? { authorization: `Bearer ${TOKEN}` } : {}),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      );
    };
    return { direct: await call('direct'), proxy: await call('proxy') };
  }

  const nobody = randomUUID();
  const mistakes: [string, string, string, unknown?, Record<string, string>?][] = [
    ['an unknown task', 'GET', `/tasks/${nobody}`],
    ['an unknown task under a tenant', 'GET', `/acme/tasks/${nobody}`],
    ['a list under a tenant with a bad page size', 'GET', '/acme/tasks?pageSize=0'],
    ['a negative historyLength', 'GET', `/tasks/${nobody}?historyLength=-1`],
    ['a historyLength that is no number', 'GET', `/tasks/${nobody}?historyLength=many`],
    ['a page size of 0', 'GET', '/tasks?pageSize=0'],
    ['a page size over 100', 'GET', '/tasks?pageSize=101'],
    ['a page size that is no integer', 'GET', '/tasks?pageSize=1.5'],
    ['a send without a message', 'POST', '/message:send', {}],
    ['a message without an id', 'POST', '/message:send', send('hi', { messageId: '' })],
    ['a stream without a message', 'POST', '/message:stream', {}],
    [
      'a body that is not JSON by its type',
      'POST',
      '/message:send',
      send('hi'),
      { 'content-type': 'text/plain' },
    ],
    [
      'a version the card does not list',
      'POST',
      '/message:send',
      send('hi'),
      { 'a2a-version': '2.0' },
    ],
    ['cancelling an unknown task', 'POST', `/tasks/${nobody}:cancel`],
    ['subscribing to an unknown task', 'POST', `/tasks/${nobody}:subscribe`],
    ['an unknown push configuration', 'GET', `/tasks/${nobody}/pushNotificationConfigs/x`],
    ['push configurations of an unknown task', 'GET', `/tasks/${nobody}/pushNotificationConfigs`],
  ];
  for (const [what, method, path, body, headers] of mistakes) {
    it(`answers ${what} as the agent does`, async () => {
      const { direct, proxy } = await both(method, () => path, body, headers);
      expect(direct.status).toBeGreaterThanOrEqual(400);
      expect(proxy).toEqual(direct);
    });
  }

  it('answers a send, a read, a list and the push configurations of a task in the same shapes', async () => {
    const ids: Record<'direct' | 'proxy', string> = { direct: '', proxy: '' };
    for (const side of ['direct', 'proxy'] as const) {
      const base = side === 'direct' ? `${agent.url}/rest` : `${gw.url}/a2a/plain/rest`;
      const response = await fetch(`${base}/message:send`, {
        method: 'POST',
        headers: {
          'a2a-version': '1.0',
          'content-type': 'application/json',
          ...(side === 'proxy' ? { authorization: `Bearer ${TOKEN}` } : {}),
        },
        body: JSON.stringify(send('hello')),
      });
      expect(response.status).toBe(200);
      ids[side] = ((await response.json()) as { task: { id: string } }).task.id;
    }
    const task = (side: 'direct' | 'proxy'): string => ids[side];
    const read = await both('GET', (s) => `/tasks/${task(s)}?historyLength=1`);
    expect(read.proxy).toEqual(read.direct);
    const listed = await both('GET', () => '/tasks?pageSize=1&includeArtifacts=true');
    expect(listed.proxy).toEqual(listed.direct);
    const config = { id: 'hook', url: 'http://127.0.0.1:9/hook', token: 't' };
    const created = await both('POST', (s) => `/tasks/${task(s)}/pushNotificationConfigs`, config);
    expect(created.direct.status).toBe(201);
    expect(created.proxy).toEqual(created.direct);
    const got = await both('GET', (s) => `/tasks/${task(s)}/pushNotificationConfigs/hook`);
    expect(got.proxy).toEqual(got.direct);
    const all = await both('GET', (s) => `/tasks/${task(s)}/pushNotificationConfigs`);
    expect(all.proxy).toEqual(all.direct);
    const deleted = await both('DELETE', (s) => `/tasks/${task(s)}/pushNotificationConfigs/hook`);
    expect(deleted.direct.status).toBe(204);
    expect(deleted.proxy).toEqual(deleted.direct);
  });
});
