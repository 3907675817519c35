/**
 * The auth matrix of the HTTP API, black box: every route of `/api/openapi.json` × no token, a
 * wrong token and each role → answered, or 401 / 403 with a code; wrong tokens rate-limited per
 * address (a valid token never); a gateway beyond loopback without tokens refuses to start; no token in the logs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { runCli } from './support/cli.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, startServiceProcess } from './support/gateway-service.js';

const ROLES = ['viewer', 'operator', 'approver', 'admin'] as const;
const RANK: Record<string, number> = { viewer: 0, operator: 1, approver: 2, admin: 3 };
const TOKENS: Record<(typeof ROLES)[number], string> = {
  viewer: 'viewer-secret-0123456789abcdef',
  operator: 'operator-secret-0123456789abcd',
  approver: 'approver-secret-0123456789abcd',
  admin: 'admin-secret-0123456789abcdefgh',
};
const ENV = Object.fromEntries(ROLES.map((r) => [`AUTH_${r.toUpperCase()}`, TOKENS[r]]));

interface Operation {
  'x-fleetgate-access': string;
}

function config(dir: string, agentUrl: string, extra: string[] = []): string {
  const file = join(dir, `fleetgate-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    file,
    [
      'listen: { host: 127.0.0.1, port: 0 }',
      `store: sqlite:${join(dir, `${Math.random().toString(36).slice(2)}.db`)}`,
      `agents: [{ name: ops, url: ${agentUrl} }]`,
      'auth:',
      '  tokens:',
      ...ROLES.map(
        (r) => `    - { name: ${r}-user, tokenEnv: AUTH_${r.toUpperCase()}, roles: [${r}] }`,
      ),
      ...extra,
    ].join('\n'),
  );
  return file;
}

/** A concrete path for a route template. */
function concrete(path: string): string {
  return path
    .replace('{name}', 'ops')
    .replace('{id}', 'no-such-id')
    .replace('{domain}', 'nowhere')
    .replace('{taskId}', 'no-such-task');
}

async function call(
  base: string,
  method: string,
  path: string,
  token?: string,
): Promise<{ status: number; code?: string }> {
  const controller = new AbortController();
  const response = await fetch(`${base}${path}${path === '/api/dispatch' ? '?wait=5s' : ''}`, {
    method: method.toUpperCase(),
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(method === 'post' ? { 'content-type': 'application/json' } : {}),
    },
    ...(method === 'post'
      ? {
          body: JSON.stringify(
            path === '/api/dispatch'
              ? { agent: 'ops', skill: 'sitrep' }
              : path.endsWith('/ack')
                ? { skill: 'sitrep' }
                : path.endsWith('/answer')
                  ? { text: 'x' }
                  : {},
          ),
        }
      : {}),
    signal: controller.signal,
  });
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    controller.abort();
    return { status: response.status };
  }
  const text = await response.text();
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  return { status: response.status, ...(code === undefined ? {} : { code }) };
}

describe('HTTP API auth', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-auth-'));
    agent = await startOpsAgent();
    gw = await startServiceProcess({
      args: [
        '--config',
        config(dir, agent.url, ['  maxFailuresPerMinute: 10000']),
        '--log-level',
        'debug',
      ],
      env: ENV,
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers every route for each role at or above its own, 403 below it, 401 without a valid token', async () => {
    const doc = await api<{ paths: Record<string, Record<string, Operation>> }>(
      gw.url,
      '/api/openapi.json',
    );
    const routes = Object.entries(doc.body.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({
        method,
        path: concrete(path),
        access: op['x-fleetgate-access'],
      })),
    );
    expect(routes.length).toBeGreaterThanOrEqual(20);
    const table: string[] = [];
    for (const route of routes) {
      const row = [`${route.method.toUpperCase()} ${route.path} (${route.access})`];
      for (const caller of ['none', 'wrong', ...ROLES] as const) {
        const token =
          caller === 'none'
            ? undefined
            : caller === 'wrong'
              ? 'not-a-token-at-all-xyz'
              : TOKENS[caller];
        const { status, code } = await call(gw.url, route.method, route.path, token);
        row.push(`${caller}=${status}${code === undefined ? '' : `:${code}`}`);
        if (route.access === 'public' || route.access === 'push') {
          // Open routes ignore API tokens (the push receiver checks its task's own secret).
          expect(code ?? '', `${row[0]} as ${caller}`).not.toMatch(/^FLEETGATE_AUTH_/);
        } else if (caller === 'none') {
          expect([status, code], `${row[0]} without a token`).toEqual([
            401,
            'FLEETGATE_AUTH_REQUIRED',
          ]);
        } else if (caller === 'wrong') {
          expect([status, code], `${row[0]} with a wrong token`).toEqual([
            401,
            'FLEETGATE_AUTH_INVALID',
          ]);
        } else if (RANK[caller]! < RANK[route.access]!) {
          expect([status, code], `${row[0]} as ${caller}`).toEqual([
            403,
            'FLEETGATE_AUTH_FORBIDDEN',
          ]);
        } else {
          expect([401, 403], `${row[0]} as ${caller} (${status} ${code ?? ''})`).not.toContain(
            status,
          );
          expect(code ?? '', `${row[0]} as ${caller}`).not.toMatch(/^FLEETGATE_AUTH_/);
        }
      }
      table.push(row.join('  '));
    }
    // The push receiver answers by the task's own secret, never by API tokens; an unknown task
    // gets the same 401 as a wrong secret, so task ids cannot be probed.
    const push = await call(gw.url, 'post', '/callbacks/a2a/no-such-task', TOKENS.admin);
    expect(push).toEqual({ status: 401, code: 'FLEETGATE_PUSH_UNAUTHORIZED' });
    expect(table.length).toBe(routes.length);
  }, 120_000);

  it('answers a push without its secret before reading the body, and closes instead of draining', async () => {
    // A body that never ends: the answer must come from the headers alone.
    const { request } = await import('node:http');
    const url = new URL('/callbacks/a2a/no-such-task', gw.url);
    const answer = await new Promise<{ status: number; connection: string | undefined }>(
      (resolve, reject) => {
        const req = request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        });
        req.on('response', (res) => {
          resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
          res.resume();
          req.destroy();
        });
        req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
        req.write(`{"kind":"task","padding":"${'x'.repeat(64 * 1024)}`);
        // …and nothing more: the request stays open.
      },
    );
    expect(answer).toEqual({ status: 401, connection: 'close' });
  });

  it('takes the approver from the token, never from the body', async () => {
    const held = await api<{ decision: { approvalId: string } }>(gw.url, '/api/dispatch', {
      token: TOKENS.operator,
      body: { agent: 'ops', skill: 'bulk_migration', text: 'all of it' },
    });
    const rejected = await api(gw.url, `/api/approvals/${held.body.decision.approvalId}/reject`, {
      token: TOKENS.approver,
      body: { reason: 'not today', by: 'someone-else' },
    });
    // `by` is not part of the body's schema: refused, so nobody can speak for another.
    expect(rejected).toMatchObject({
      status: 400,
      body: { error: { code: 'FLEETGATE_HTTP_REQUEST_INVALID' } },
    });
    const ok = await api(gw.url, `/api/approvals/${held.body.decision.approvalId}/reject`, {
      token: TOKENS.approver,
      body: { reason: 'not today' },
    });
    expect(ok.body).toMatchObject({
      approval: { status: 'rejected', decidedBy: 'approver-user' },
      dispatch: { status: 'rejected' },
    });
  });

  it('never writes a token to its log, even at debug level', () => {
    for (const token of Object.values(TOKENS)) expect(gw.stderr()).not.toContain(token);
    expect(gw.stderr()).toContain('"caller":"admin-user"');
  });

  it('rate-limits wrong tokens per address, never a valid one', async () => {
    const limited = await startServiceProcess({
      args: ['--config', config(dir, agent.url, ['  maxFailuresPerMinute: 3'])],
      env: ENV,
    });
    try {
      const answers: number[] = [];
      for (let i = 0; i < 5; i += 1)
        answers.push(
          (await call(limited.url, 'get', '/api/agents', 'wrong-token-0123456789')).status,
        );
      expect(answers).toEqual([401, 401, 401, 429, 429]);
      // Others' failures never lock out a valid token from the same address.
      expect((await call(limited.url, 'get', '/api/agents', TOKENS.viewer)).status).toBe(200);
      expect(await call(limited.url, 'get', '/api/agents', 'wrong-token-0123456789')).toEqual({
        status: 429,
        code: 'FLEETGATE_AUTH_RATE_LIMITED',
      });
      expect((await call(limited.url, 'get', '/healthz')).status).toBe(200);
    } finally {
      await limited.stop('SIGKILL');
    }
  }, 60_000);

  it('refuses to listen beyond loopback without a token', async () => {
    const file = join(dir, 'open.yaml');
    writeFileSync(
      file,
      `listen: { host: 0.0.0.0, port: 0 }\nstore: sqlite:${join(dir, 'open.db')}\n`,
    );
    const run = await runCli(['start', '--config', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('FLEETGATE_LISTEN_UNSAFE');
  }, 30_000);
});
