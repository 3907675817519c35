/**
 * v1.0 HTTP+JSON at `/a2a/<agent>/rest` is answered on the gateway's own route (no express app in
 * between) as the SDK's express handler answered it — its routes with and without a tenant, its
 * statuses and error bodies, SSE streams, the content-type guard and the version check — and with
 * the gateway's own response headers (`x-request-id`), which the express path dropped. v0.3
 * HTTP+JSON still goes to the SDK's v0.3 transport. A real `fleetgate start` and a real
 * `@a2a-js/sdk` agent, plain HTTP on the wire.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { FLEETGATE_GATEWAY_V1_URI } from '../src/protocol/index.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { framesOf, startOpsProxy, type OpsProxy } from './support/ops-proxy.js';

/** A v1.0 `SendMessageRequest` for the autonomous `sitrep` skill. */
function sendBody(text: string): Record<string, unknown> {
  return {
    message: {
      messageId: randomUUID(),
      role: 'ROLE_USER',
      parts: [{ text }],
      metadata: { 'x-effect-domain-skill': 'sitrep' },
    },
  };
}

describe('v1.0 HTTP+JSON on the proxy route', () => {
  let fixture: OpsProxy;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    fixture = await startOpsProxy('rest');
    ({ agent, gw } = fixture);
  }, 60_000);

  afterAll(() => fixture?.close());

  /** Calls `/a2a/ops/rest<path>` with the operator's token, v1.0 unless `headers` say otherwise. */
  function call(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    return fetch(`${gw.url}/a2a/ops/rest${path}`, {
      method,
      headers: {
        authorization: `Bearer ${fixture.token}`,
        'a2a-version': '1.0',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  it('answers SendMessage and GetTask (with and without a tenant) with the gateway request id', async () => {
    const before = agent.received.length;
    const sent = await call('POST', '/message:send', sendBody('rest blocking'), {
      'x-request-id': 'rest-blocking-1',
      'a2a-extensions': `${FLEETGATE_GATEWAY_V1_URI}, urn:not-declared`,
    });
    expect(sent.status).toBe(200);
    expect(sent.headers.get('content-type')).toMatch(/^application\/a2a\+json/);
    // Only the route's own answer carries it: the express app wrote past fastify's headers.
    expect(sent.headers.get('x-request-id')).toBe('rest-blocking-1');
    const extensions = sent.headers.get('a2a-extensions') ?? '';
    expect(extensions).toContain(FLEETGATE_GATEWAY_V1_URI);
    expect(extensions).not.toContain('urn:not-declared');
    const { task } = (await sent.json()) as { task: { id: string; status: { state: string } } };
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(agent.received.length).toBe(before + 1);
    expect(agent.received.at(-1)!.text).toBe('rest blocking');

    for (const path of [`/tasks/${task.id}`, `/acme/tasks/${task.id}`]) {
      const got = await call('GET', `${path}?historyLength=1`);
      expect(got.status).toBe(200);
      const read = (await got.json()) as { id: string; history?: unknown[] };
      expect(read.id).toBe(task.id);
      expect(read.history ?? []).toHaveLength(1);
    }
    const listed = await call('GET', '/tasks?pageSize=1&includeArtifacts=true');
    expect(listed.status).toBe(200);
    const page = (await listed.json()) as { tasks: { artifacts?: unknown }[]; pageSize: number };
    expect(page.pageSize).toBe(1);
    expect(page.tasks).toHaveLength(1);
    expect(page.tasks[0]!.artifacts).toBeDefined();
  });

  it('streams SendStreamingMessage as SSE to its end, with the request id', async () => {
    const response = await call('POST', '/message:stream', sendBody('rest stream'), {
      'x-request-id': 'rest-stream-1',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('x-request-id')).toBe('rest-stream-1');
    const frames = framesOf(await response.text());
    expect(frames.length).toBeGreaterThanOrEqual(2);
    for (const frame of frames) expect(frame.event).toBeUndefined();
    expect(Object.keys(frames[0]!.data)).toEqual(['task']);
    expect(frames.at(-1)!.data).toMatchObject({
      statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } },
    });
  });

  it("answers the client's mistakes with the SDK's statuses and error bodies, without calling the agent", async () => {
    const before = agent.received.length;
    const unknown = await call('GET', `/tasks/${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      error: { code: 404, status: 'NOT_FOUND', details: [{ reason: 'TASK_NOT_FOUND' }] },
    });

    const subscribe = await call('POST', `/tasks/${randomUUID()}:subscribe`);
    expect(subscribe.status).toBe(404);
    expect(subscribe.headers.get('content-type')).toMatch(/^application\/a2a\+json/);

    const negative = await call('GET', `/tasks/${randomUUID()}?historyLength=-1`);
    expect(negative.status).toBe(400);
    expect(await negative.json()).toMatchObject({ error: { status: 'INVALID_ARGUMENT' } });

    const wrongType = await call('POST', '/message:send', sendBody('wrong type'), {
      'content-type': 'text/plain',
    });
    expect(wrongType.status).toBe(400);
    expect(await wrongType.json()).toMatchObject({
      error: { details: [{ reason: 'CONTENT_TYPE_NOT_SUPPORTED' }] },
    });

    const noMessage = await call('POST', '/message:send', {});
    expect(noMessage.status).toBe(400);
    expect(((await noMessage.json()) as { error: { message: string } }).error.message).toBe(
      'message is required',
    );

    const badVersion = await call('POST', '/message:send', sendBody('bad version'), {
      'a2a-version': '2.0',
    });
    expect(badVersion.status).toBe(400);
    expect(await badVersion.json()).toMatchObject({
      error: { details: [{ reason: 'VERSION_NOT_SUPPORTED' }] },
    });

    const nowhere = await call('GET', '/no/such/route');
    expect(nowhere.status).toBe(404);
    expect(await nowhere.json()).toMatchObject({
      error: { details: [{ reason: 'FLEETGATE_HTTP_ROUTE_NOT_FOUND' }] },
    });
    // A path of several KB is named cut to its first 200 characters, not echoed whole.
    const long = `/no/${'r'.repeat(8000)}`;
    const far = await call('GET', long);
    expect(far.status).toBe(404);
    const message = ((await far.json()) as { error: { message: string } }).error.message;
    expect(message).toBe(`No A2A method at GET ${`/rest${long}`.slice(0, 200)}…`);
    expect(agent.received.length).toBe(before);
  });

  it('registers, reads, lists and deletes a push configuration', async () => {
    const sent = await call('POST', '/message:send', sendBody('rest push'));
    const { task } = (await sent.json()) as { task: { id: string } };
    const created = await call('POST', `/tasks/${task.id}/pushNotificationConfigs`, {
      id: 'hook-1',
      url: 'http://127.0.0.1:9/hook',
      token: 'client-token',
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ id: 'hook-1', taskId: task.id });
    const one = await call('GET', `/tasks/${task.id}/pushNotificationConfigs/hook-1`);
    expect(await one.json()).toMatchObject({ id: 'hook-1', url: 'http://127.0.0.1:9/hook' });
    const all = await call('GET', `/tasks/${task.id}/pushNotificationConfigs`);
    expect(((await all.json()) as { configs: unknown[] }).configs).toHaveLength(1);
    const deleted = await call('DELETE', `/tasks/${task.id}/pushNotificationConfigs/hook-1`);
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    const gone = await call('GET', `/tasks/${task.id}/pushNotificationConfigs`);
    expect(((await gone.json()) as { configs?: unknown[] }).configs ?? []).toHaveLength(0);
  });

  it('still answers v0.3 HTTP+JSON (no A2A-Version) in the v0.3 shape', async () => {
    const response = await fetch(`${gw.url}/a2a/ops/rest/v1/message:send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fixture.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        message: {
          messageId: randomUUID(),
          role: 'ROLE_USER',
          content: [{ text: 'rest legacy' }],
          metadata: { 'x-effect-domain-skill': 'sitrep' },
        },
      }),
    });
    expect(response.status).toBe(201);
    // v0.3 HTTP+JSON: `content` parts, created (201), the task's state in the v0.3 proto names.
    expect(await response.json()).toMatchObject({
      task: { status: { state: 'TASK_STATE_COMPLETED', message: { content: [{ text: 'done' }] } } },
    });
    expect(agent.received.at(-1)!.text).toBe('rest legacy');
  });
});
