/**
 * The gateway's doors against an attacker, black box (`fleetgate start` as a child process):
 * failed-auth limiting that never locks out a valid token (per client address, behind trusted
 * proxies by `X-Forwarded-For`); the Host allow-list and same-origin rule that keep a web page
 * (DNS rebinding, cross-site forms) away from a tokenless gateway; a body trickled in is cut; a
 * push URL naming the gateway's own network is refused when it is registered.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { sdkClient, userMessage } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'hardening-admin-0123456789abcdef';
const VIEWER = 'hardening-viewer-0123456789abcde';

interface Answer {
  status: number;
  code: string | undefined;
}

/** A request with headers `fetch` will not send as given (`Host`). */
function raw(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Answer> {
  const url = new URL(base);
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: url.port,
        method,
        path,
        headers: {
          ...(text === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }),
          ...headers,
        },
      },
      (res) => {
        let data = '';
        res.on('data', (d: Buffer) => (data += d.toString()));
        res.on('end', () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(data) as { error?: { code?: string } }).error?.code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode ?? 0, code });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

describe('gateway hardening', () => {
  let dir: string;
  let agent: RunningAgent;
  /** Loopback, no tokens: every local caller is an admin, so Host and Origin are the guard. */
  let open: ServiceProcess;
  /** Every address, tokens, behind a trusted proxy at 127.0.0.1. */
  let wide: ServiceProcess;
  let openUrl: string;
  let wideUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-hardening-'));
    agent = await startOpsAgent();
    const openFile = join(dir, 'open.yaml');
    writeFileSync(
      openFile,
      [
        'listen:',
        '  host: 127.0.0.1',
        '  port: 0',
        '  allowedHosts: [gateway.test, .fleet.test]',
        '  timeouts: { headers: 5s, body: 1s, request: 10s }',
        `store: sqlite:${join(dir, 'open.db')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
      ].join('\n'),
    );
    const wideFile = join(dir, 'wide.yaml');
    writeFileSync(
      wideFile,
      [
        'listen: { host: 0.0.0.0, port: 0, trustProxy: [127.0.0.1] }',
        `store: sqlite:${join(dir, 'wide.db')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'policy: { unknownRadius: proceed, approvalAtOrAbove: public }',
        'auth:',
        '  maxFailuresPerMinute: 3',
        '  tokens:',
        '    - { name: admin, tokenEnv: HARD_ADMIN, roles: [admin] }',
        '    - { name: viewer, tokenEnv: HARD_VIEWER, roles: [viewer] }',
      ].join('\n'),
    );
    [open, wide] = await Promise.all([
      startServiceProcess({ args: ['--config', openFile], timeoutMs: 60_000 }),
      startServiceProcess({
        args: ['--config', wideFile],
        env: { HARD_ADMIN: ADMIN, HARD_VIEWER: VIEWER },
        timeoutMs: 60_000,
      }),
    ]);
    openUrl = open.url;
    wideUrl = `http://127.0.0.1:${new URL(wide.url).port}`;
  }, 90_000);

  afterAll(async () => {
    await Promise.all([open?.stop('SIGKILL'), wide?.stop('SIGKILL')]);
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('failed-auth limiting', () => {
    const from = (address: string, token?: string): Record<string, string> => ({
      'x-forwarded-for': address,
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    });

    it('never refuses a valid token for the failures of others at the same address', async () => {
      const answers: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        answers.push(
          (await raw(wideUrl, 'GET', '/api/agents', from('203.0.113.7', 'wrong-token-0123456789')))
            .status,
        );
      }
      expect(answers).toEqual([401, 401, 401, 429, 429]);
      // The same address with a valid token: answered, every time.
      for (let i = 0; i < 3; i += 1) {
        expect(await raw(wideUrl, 'GET', '/api/agents', from('203.0.113.7', VIEWER))).toEqual({
          status: 200,
          code: undefined,
        });
      }
      expect(
        await raw(wideUrl, 'GET', '/api/agents', from('203.0.113.7', 'wrong-token-0123456789')),
      ).toEqual({ status: 429, code: 'FLEETGATE_AUTH_RATE_LIMITED' });
    });

    it('counts by the client X-Forwarded-For names behind a trusted proxy, and not requests without a token', async () => {
      for (let i = 0; i < 4; i += 1) {
        expect((await raw(wideUrl, 'GET', '/api/agents', from('203.0.113.8'))).code).toBe(
          'FLEETGATE_AUTH_REQUIRED',
        );
      }
      // Four tokenless requests were no guesses: three wrong tokens still get 401.
      const answers: number[] = [];
      for (let i = 0; i < 3; i += 1) {
        answers.push(
          (await raw(wideUrl, 'GET', '/api/agents', from('203.0.113.8', 'wrong-token-0123456789')))
            .status,
        );
      }
      expect(answers).toEqual([401, 401, 401]);
      // Another client behind the same proxy is not limited by this one's failures.
      expect(
        (await raw(wideUrl, 'GET', '/api/agents', from('203.0.113.9', 'wrong-token-0123456789')))
          .status,
      ).toBe(401);
    });
  });

  describe('Host and Origin', () => {
    const port = (): string => new URL(openUrl).port;

    it('refuses a request that names another host (DNS rebinding), on every route', async () => {
      for (const [method, path, body] of [
        ['GET', '/api/agents', undefined],
        ['POST', '/api/dispatch', { agent: 'ops', skill: 'sitrep' }],
        ['GET', '/healthz', undefined],
        ['GET', '/a2a/ops/.well-known/agent-card.json', undefined],
      ] as const) {
        expect(
          await raw(openUrl, method, path, { host: `rebind.attacker.example:${port()}` }, body),
        ).toEqual({ status: 421, code: 'FLEETGATE_HTTP_HOST_NOT_ALLOWED' });
      }
    });

    it('answers the loopback names, listen.host and listen.allowedHosts', async () => {
      for (const host of [
        `127.0.0.1:${port()}`,
        `localhost:${port()}`,
        `[::1]:${port()}`,
        'gateway.test',
        `ui.fleet.test:${port()}`,
      ]) {
        expect((await raw(openUrl, 'GET', '/api/agents', { host })).status, host).toBe(200);
      }
    });

    it('refuses a state-changing request from a page of another origin, and takes its own', async () => {
      const host = `127.0.0.1:${port()}`;
      const dispatch = { agent: 'ops', skill: 'sitrep' };
      for (const origin of [
        'http://rebind.attacker.example',
        'null',
        `http://localhost:${port()}`,
      ]) {
        expect(await raw(openUrl, 'POST', '/api/dispatch', { host, origin }, dispatch)).toEqual({
          status: 403,
          code: 'FLEETGATE_HTTP_ORIGIN_NOT_ALLOWED',
        });
      }
      // Reads are not refused by Origin (the browser keeps their answers from the page).
      expect(
        (await raw(openUrl, 'GET', '/api/agents', { host, origin: 'http://elsewhere.example' }))
          .status,
      ).toBe(200);
      // The gateway's own dashboard, and clients that send no Origin.
      expect(
        (
          await raw(
            openUrl,
            'POST',
            '/api/dispatch?wait=5s',
            { host, origin: `http://${host}` },
            dispatch,
          )
        ).status,
      ).toBe(200);
      expect((await raw(openUrl, 'POST', '/api/dispatch?wait=5s', { host }, dispatch)).status).toBe(
        200,
      );
    }, 30_000);
  });

  it('cuts a request whose body trickles in past listen.timeouts.body', async () => {
    const socket = connect(Number(new URL(openUrl).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const closed = new Promise<number>((resolve) =>
      socket.once('close', () => resolve(Date.now())),
    );
    const started = Date.now();
    socket.write(
      `POST /api/dispatch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
    );
    // One byte every 300 ms: the connection is never idle, the body never ends.
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write('{');
    }, 300);
    try {
      const at = await closed;
      expect(at - started).toBeLessThan(6000);
    } finally {
      clearInterval(drip);
    }
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(received).toContain('FLEETGATE_HTTP_REQUEST_TIMEOUT');
  }, 20_000);

  it('warns at start that without tokens a radius needing two approvers can never be approved', () => {
    expect(open.stderr()).toContain(
      'without auth.tokens every caller is one approver (anonymous), so public calls (policy.approvers.public: 2) can never be approved: configure auth.tokens for the approvers, or set policy.approvers.public: 1',
    );
    expect(wide.stderr()).not.toContain('can never be approved');
  });

  it('refuses a dispatch whose data nests past the input depth limit, naming body.data, recording nothing', async () => {
    const list = async (): Promise<unknown[]> => {
      const res = await fetch(`${openUrl}/api/dispatches?limit=200`);
      return ((await res.json()) as { dispatches: unknown[] }).dispatches;
    };
    const before = (await list()).length;
    const res = await fetch(`${openUrl}/api/dispatch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"agent":"ops","skill":"pr_review","data":${'['.repeat(3000)}${']'.repeat(3000)}}`,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as {
      error: { code: string; details: { issues: { path: string; message: string }[] } };
    };
    expect(body.error.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    expect(body.error.details.issues).toEqual([
      { path: 'body.data', message: `nests deeper than 64 levels (at data${'[0]'.repeat(64)})` },
    ]);
    expect((await list()).length).toBe(before);
  });

  it('reports the bytes the live-event feed holds and the clients it cut', async () => {
    const metrics = await fetch(`${openUrl}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/^fleetgate_events_retained_bytes \d+$/m);
    expect(metrics).toMatch(/^fleetgate_events_queued_bytes \d+$/m);
    expect(metrics).toMatch(/^fleetgate_events_clients_cut \d+$/m);
    // Events were published by the dispatches above: the window holds their bytes.
    expect(Number(/^fleetgate_events_retained_bytes (\d+)$/m.exec(metrics)![1])).toBeGreaterThan(0);
  });

  describe('push URLs', () => {
    it('refuses loopback, link-local, private and own addresses on a gateway beyond loopback', async () => {
      const client = await sdkClient(`${wideUrl}/a2a/ops`, { token: ADMIN });
      const task = (await client.sendMessage({
        tenant: '',
        message: userMessage('status?', { 'x-effect-domain-skill': 'sitrep' }),
        configuration: undefined,
        metadata: undefined,
      })) as Task;
      for (const url of [
        'http://127.0.0.1:9/hook',
        'http://localhost:9/hook',
        'http://169.254.169.254/latest/meta-data/',
        'http://10.1.2.3/hook',
        'http://[::1]:9/hook',
        'http://[::ffff:127.0.0.1]:9/hook',
        'file:///etc/passwd',
      ]) {
        const refused = await client
          .createTaskPushNotificationConfig({
            tenant: '',
            id: 'hook',
            taskId: task.id,
            url,
            token: 't',
            authentication: undefined,
          })
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        expect(refused, url).toBeInstanceOf(Error);
        expect(String((refused as Error).message), url).toContain('FLEETGATE_PUSH_URL_REFUSED');
      }
      // Nothing was registered.
      const listed = await client.listTaskPushNotificationConfig({
        tenant: '',
        taskId: task.id,
        pageSize: 0,
        pageToken: '',
      });
      expect(listed.configs).toEqual([]);

      // A configuration sent with the message is checked the same way; the agent is not called.
      const before = agent.received.length;
      const refused = await client
        .sendMessage({
          tenant: '',
          message: userMessage('status?', { 'x-effect-domain-skill': 'sitrep' }),
          configuration: {
            acceptedOutputModes: [],
            returnImmediately: false,
            taskPushNotificationConfig: {
              tenant: '',
              id: 'with-the-message',
              taskId: '',
              url: 'http://169.254.169.254/latest/meta-data/',
              token: 't',
              authentication: undefined,
            },
          },
          metadata: undefined,
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(String((refused as Error).message)).toContain('FLEETGATE_PUSH_URL_REFUSED');
      expect(agent.received.length).toBe(before);
    }, 30_000);
  });
});
