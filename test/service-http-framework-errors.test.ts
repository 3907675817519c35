/**
 * What the HTTP framework and Node's parser refuse, answered the gateway's way, black box
 * (`fleetgate start` as a child process): path parameters as long as the route schemas take are
 * routed; longer ones, malformed paths, headers that trickle in past `listen.timeouts.headers`
 * and requests that are not HTTP get `{ error: { code: 'FLEETGATE_…' } }`, never fastify's body.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'framework-admin-0123456789abcdef';

interface ErrorBody {
  error?: { code?: string; message?: string; details?: { issues?: { path: string }[] } };
}

/** What came back on a raw connection: the status line, the body, and when the socket closed. */
interface RawAnswer {
  status: number;
  body: ErrorBody;
  closedAfterMs: number;
}

/**
 * Sends `head` on a raw connection (then `drip` every 200 ms, if given) and reads until the
 * gateway closes it.
 */
async function rawExchange(port: number, head: string, drip?: string): Promise<RawAnswer> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', () => undefined);
  const started = Date.now();
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  socket.write(head);
  const timer =
    drip === undefined
      ? undefined
      : setInterval(() => {
          if (!socket.destroyed) socket.write(drip);
        }, 200);
  try {
    const at = await closed;
    const [statusLine = '', ...rest] = received.split('\r\n');
    const text = rest.join('\r\n').split('\r\n\r\n').slice(1).join('\r\n\r\n');
    let body: ErrorBody = {};
    try {
      body = JSON.parse(text) as ErrorBody;
    } catch {
      body = {};
    }
    return {
      status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]),
      body,
      closedAfterMs: at - started,
    };
  } finally {
    clearInterval(timer);
  }
}

describe('framework and client errors', () => {
  let dir: string;
  let gw: ServiceProcess;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-framework-errors-'));
    const file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        'listen:',
        '  host: 127.0.0.1',
        '  port: 0',
        // The shortest header timeout the config takes, so the trickle test is quick.
        '  timeouts: { headers: 1s, body: 1s, request: 10s }',
        `store: sqlite:${join(dir, 'gateway.db')}`,
        // Never called: the tests only need a configured agent name.
        'agents: [{ name: ops, url: http://127.0.0.1:9 }]',
        'auth:',
        '  tokens:',
        '    - { name: admin, tokenEnv: FRAMEWORK_ADMIN, roles: [admin] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', file],
      env: { FRAMEWORK_ADMIN: ADMIN },
      timeoutMs: 60_000,
    });
    port = Number(new URL(gw.url).port);
  }, 90_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('names a query parameter given twice, instead of the number a list is not', async () => {
    const { status, body } = await api<{
      error: { code: string; details: { issues: unknown[] } };
    }>(gw.url, '/api/dispatches?limit=2&limit=3&agent=ops', { token: ADMIN });
    expect(status).toBe(400);
    expect(body.error.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    expect(body.error.details.issues).toEqual([
      { path: 'query.limit', message: 'is given 2 times; give it once' },
    ]);
  });

  it('says a body refused for its "__proto__" key may be valid JSON', async () => {
    const res = await fetch(`${gw.url}/api/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: '{"skill":"sitrep","__proto__":{"admin":true}}',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('FLEETGATE_HTTP_JSON_INVALID');
    expect(body.error.message).toContain('"__proto__"');
  });

  describe('path parameters', () => {
    it('routes ids as long as the route schemas take to the route (404 with its own code)', async () => {
      for (const length of [100, 101, 200]) {
        const id = 'a'.repeat(length);
        const dispatch = await api<ErrorBody>(gw.url, `/api/dispatches/${id}`, { token: ADMIN });
        expect([length, dispatch.status, dispatch.body.error?.code]).toEqual([
          length,
          404,
          'FLEETGATE_DISPATCH_NOT_FOUND',
        ]);
      }
      const agent = await api<ErrorBody>(gw.url, `/a2a/${'a'.repeat(151)}`, { token: ADMIN });
      expect(agent.status).toBe(404);
      expect(JSON.stringify(agent.body)).toContain('FLEETGATE_AGENT_UNKNOWN');
      // The push receiver takes task ids up to 500 characters.
      const push = await api<ErrorBody>(gw.url, `/callbacks/a2a/${'t'.repeat(500)}`, {
        body: {},
      });
      expect(push.body.error?.code).toMatch(/^FLEETGATE_PUSH_/);
    });

    it("answers an id longer than its schema with the schema's 400 naming the parameter", async () => {
      const { status, body } = await api<ErrorBody>(gw.url, `/api/dispatches/${'a'.repeat(201)}`, {
        token: ADMIN,
      });
      expect(status).toBe(400);
      expect(body.error?.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
      expect(body.error?.details?.issues?.map((i) => i.path)).toEqual(['params.id']);
    });

    it('answers a parameter beyond what the router takes in the Fleetgate shape, without echoing the path', async () => {
      for (const path of [`/api/dispatches/${'a'.repeat(5000)}`, `/a2a/${'a'.repeat(5000)}`]) {
        const { status, body, headers } = await api<ErrorBody>(gw.url, path, { token: ADMIN });
        expect([path.slice(0, 10), status, body.error?.code]).toEqual([
          path.slice(0, 10),
          414,
          'FLEETGATE_HTTP_REQUEST_INVALID',
        ]);
        expect(JSON.stringify(body)).not.toContain('aaaaaaaaaa');
        expect(headers.get('x-request-id')).toBeTruthy();
      }
    });

    it('answers a malformed percent-encoding in the path in the Fleetgate shape', async () => {
      const { status, body } = await api<ErrorBody>(gw.url, '/api/dispatches/%E0%A4%A', {
        token: ADMIN,
      });
      expect(status).toBe(400);
      expect(body.error?.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    });
  });

  describe('client errors', () => {
    it('answers headers trickled in past listen.timeouts.headers 408 FLEETGATE_HTTP_REQUEST_TIMEOUT and closes', async () => {
      // One header line every 200 ms: the connection is never idle, the headers never end.
      const answer = await rawExchange(
        port,
        'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n',
        'X-Slow: 1\r\n',
      );
      expect(answer.status).toBe(408);
      expect(answer.body.error?.code).toBe('FLEETGATE_HTTP_REQUEST_TIMEOUT');
      expect(answer.closedAfterMs).toBeLessThan(6000);
    }, 20_000);

    it('answers a request that is not HTTP 400 in the Fleetgate shape and closes', async () => {
      const answer = await rawExchange(port, 'NOT AN HTTP REQUEST\r\n\r\n');
      expect(answer.status).toBe(400);
      expect(answer.body.error?.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    });

    it('answers headers larger than Node takes 431 in the Fleetgate shape and closes', async () => {
      const answer = await rawExchange(
        port,
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(64 * 1024)}\r\n\r\n`,
      );
      expect(answer.status).toBe(431);
      expect(answer.body.error?.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    });
  });
});
