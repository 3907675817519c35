/**
 * v1.0 JSON-RPC at `/a2a/<agent>` is answered on the gateway's own route (no express app in
 * between) exactly as the SDK's express handler answered it: blocking calls, SSE streams with
 * `A2A-Extensions`, errors before a stream, the content-type guard and the version check — and
 * with the gateway's own response headers (`x-request-id`), which the express path dropped.
 * v0.3 JSON-RPC still goes to the SDK's v0.3 transport. A real `fleetgate start` and a real
 * `@a2a-js/sdk` agent, plain HTTP on the wire.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { FLEETGATE_GATEWAY_V1_URI } from '../src/protocol/index.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { framesOf, startOpsProxy, type OpsProxy } from './support/ops-proxy.js';

/**
 * A `SendMessage` / `SendStreamingMessage` body (v1.0), or with `legacy` a `message/send` /
 * `message/stream` one (v0.3: `kind`s, lowercase role), for the autonomous `sitrep` skill.
 */
function sendBody(
  method: string,
  id: unknown,
  text: string,
  legacy = false,
): Record<string, unknown> {
  const message = legacy
    ? { kind: 'message', role: 'user', parts: [{ kind: 'text', text }] }
    : { role: 'ROLE_USER', parts: [{ text }] };
  return {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      message: {
        ...message,
        messageId: randomUUID(),
        metadata: { 'x-effect-domain-skill': 'sitrep' },
      },
    },
  };
}

describe('v1.0 JSON-RPC on the proxy route', () => {
  let fixture: OpsProxy;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let OPERATOR: string;

  beforeAll(async () => {
    fixture = await startOpsProxy('jrpc');
    ({ agent, gw, token: OPERATOR } = fixture);
  }, 60_000);

  afterAll(() => fixture?.close());

  /** POSTs `body` to `/a2a/ops` with the operator's token, v1.0 unless `headers` say otherwise. */
  function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${gw.url}/a2a/ops`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${OPERATOR}`,
        'content-type': 'application/json',
        'a2a-version': '1.0',
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  it('answers a blocking SendMessage as JSON, with the gateway request id and the activated extensions', async () => {
    const before = agent.received.length;
    const response = await post(sendBody('SendMessage', 'blocking', 'jrpc blocking'), {
      'x-request-id': 'jrpc-blocking-1',
      'a2a-extensions': `${FLEETGATE_GATEWAY_V1_URI}, urn:not-declared`,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    // Only the route's own answer carries it: the express app wrote past fastify's headers.
    expect(response.headers.get('x-request-id')).toBe('jrpc-blocking-1');
    const extensions = response.headers.get('a2a-extensions') ?? '';
    expect(extensions).toContain(FLEETGATE_GATEWAY_V1_URI);
    expect(extensions).not.toContain('urn:not-declared');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      jsonrpc: '2.0',
      id: 'blocking',
      result: { task: { status: { state: 'TASK_STATE_COMPLETED' } } },
    });
    expect(agent.received.length).toBe(before + 1);
    expect(agent.received.at(-1)!.text).toBe('jrpc blocking');
  });

  it('streams SendStreamingMessage as SSE to its end, A2A-Extensions and request id in the headers', async () => {
    const response = await post(sendBody('SendStreamingMessage', 9, 'jrpc stream'), {
      'x-request-id': 'jrpc-stream-1',
      'a2a-extensions': FLEETGATE_GATEWAY_V1_URI,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('a2a-extensions')).toContain(FLEETGATE_GATEWAY_V1_URI);
    expect(response.headers.get('x-request-id')).toBe('jrpc-stream-1');
    const frames = framesOf(await response.text());
    expect(frames.length).toBeGreaterThanOrEqual(2);
    for (const frame of frames) {
      expect(frame.event).toBeUndefined();
      expect(frame.data).toMatchObject({ jsonrpc: '2.0', id: 9 });
    }
    expect(frames[0]!.data).toMatchObject({ result: { task: {} } });
    expect(frames.at(-1)!.data).toMatchObject({
      result: { statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } },
    });
  });

  it('answers an error before the first event of a stream as a plain JSON-RPC error', async () => {
    const response = await post({
      jsonrpc: '2.0',
      id: 'sub',
      method: 'SubscribeToTask',
      params: { id: randomUUID() },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as { id: unknown; error: { code: number } };
    expect(body.id).toBe('sub');
    expect(body.error.code).toBe(-32001); // TaskNotFoundError
  });

  it('refuses a body that is not application/json, and a version the card does not list, without calling the agent', async () => {
    const before = agent.received.length;
    const wrongType = await post(sendBody('SendMessage', 1, 'wrong type'), {
      'content-type': 'text/plain',
    });
    expect(wrongType.status).toBe(200);
    expect(await wrongType.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32005, data: [{ reason: 'CONTENT_TYPE_NOT_SUPPORTED' }] },
    });

    const badVersion = await post(sendBody('SendMessage', 2, 'bad version'), {
      'a2a-version': '2.0',
    });
    expect(badVersion.status).toBe(200);
    const refused = (await badVersion.json()) as { id: unknown; error: { message: string } };
    expect(refused).toMatchObject({
      id: 2,
      error: { code: -32009, data: [{ reason: 'VERSION_NOT_SUPPORTED' }] },
    });
    expect(refused.error.message).toContain("'2.0'");
    expect(agent.received.length).toBe(before);
  });

  /** POSTs a v0.3 body (no `A2A-Version`) to `/a2a/ops`. */
  function postLegacy(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${gw.url}/a2a/ops`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${OPERATOR}`,
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify(body),
    });
  }

  it('answers v0.3 JSON-RPC (no A2A-Version) on the route too, in the v0.3 shape', async () => {
    const response = await postLegacy(sendBody('message/send', 'v03', 'jrpc legacy', true), {
      'x-request-id': 'jrpc-legacy-1',
      'x-a2a-extensions': FLEETGATE_GATEWAY_V1_URI,
    });
    expect(response.status).toBe(200);
    // The route's own answer: the express app wrote past fastify's headers.
    expect(response.headers.get('x-request-id')).toBe('jrpc-legacy-1');
    expect(response.headers.get('x-a2a-extensions')).toContain(FLEETGATE_GATEWAY_V1_URI);
    expect(await response.json()).toMatchObject({
      id: 'v03',
      result: { kind: 'task', status: { state: 'completed' } },
    });
    expect(agent.received.at(-1)!.text).toBe('jrpc legacy');
  });

  it('streams v0.3 message/stream, and answers v0.3 errors in the v0.3 shape', async () => {
    const streamed = await postLegacy(
      sendBody('message/stream', 's03', 'jrpc legacy stream', true),
    );
    expect(streamed.headers.get('content-type')).toBe('text/event-stream');
    const frames = framesOf(await streamed.text());
    expect(frames[0]!.data).toMatchObject({ id: 's03', result: { kind: 'task' } });
    expect(frames.at(-1)!.data).toMatchObject({
      result: { kind: 'status-update', status: { state: 'completed' }, final: true },
    });

    const unknown = await postLegacy({
      jsonrpc: '2.0',
      id: 'g03',
      method: 'tasks/get',
      params: { id: randomUUID() },
    });
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toMatchObject({ id: 'g03', error: { code: -32001 } });

    // v0.3 `tasks/resubscribe` answers SSE at once; a task it cannot follow is an error event.
    const resubscribed = await postLegacy({
      jsonrpc: '2.0',
      id: 'r03',
      method: 'tasks/resubscribe',
      params: { id: randomUUID() },
    });
    expect(resubscribed.headers.get('content-type')).toBe('text/event-stream');
    const [failed] = framesOf(await resubscribed.text());
    expect(failed).toMatchObject({ event: 'error', data: { id: 'r03', error: { code: -32001 } } });
  });
});
