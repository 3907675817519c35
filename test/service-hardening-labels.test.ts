/**
 * What a caller sends cannot grow the gateway's state or come back at length, black box
 * (`fleetgate start` as a child process): made-up agent names in `/a2a/<name>` are counted under
 * one `agent="(unknown)"` series, whichever way they are refused (unknown agent, body too large,
 * foreign Origin); a long path is echoed cut in the not-found answer; a body of JSON `null` is
 * named as such.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'labels-admin-0123456789abcdef01';
const BODY_LIMIT = 1024;

interface ErrorBody {
  error?: { code?: string; message?: string; details?: { issues?: unknown[] } };
}

/** A name no agent has, as long as the router takes (a valid agent name is at most 63). */
function madeUpName(): string {
  return `x${randomBytes(255).toString('hex')}`;
}

describe('bounded labels and echoes', () => {
  let dir: string;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-labels-'));
    const file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        `listen: { host: 127.0.0.1, port: 0, bodyLimit: ${BODY_LIMIT} }`,
        `store: sqlite:${join(dir, 'gateway.db')}`,
        // Never called: the tests only need a configured agent name.
        'agents: [{ name: ops, url: http://127.0.0.1:9 }]',
        'auth:',
        '  tokens:',
        '    - { name: admin, tokenEnv: LABELS_ADMIN, roles: [admin] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', file],
      env: { LABELS_ADMIN: ADMIN },
      timeoutMs: 60_000,
    });
  }, 90_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts requests for agents it does not know under agent="(unknown)", never by the name sent', async () => {
    const names = [madeUpName(), madeUpName(), madeUpName(), madeUpName()];
    expect(names[0]).toHaveLength(511);
    const [first = '', second = '', third = '', fourth = ''] = names;
    // Unknown agent, without a token: the agent is checked before the caller.
    for (const path of [`/a2a/${first}/`, `/a2a/${second}`, `/a2a/${second}/rest/tasks`]) {
      const answer = await api<unknown>(gw.url, path);
      expect([path.length, answer.status]).toEqual([path.length, 404]);
      expect(JSON.stringify(answer.body)).toContain('FLEETGATE_AGENT_UNKNOWN');
    }
    // A body over listen.bodyLimit: refused before the handler looks at the agent.
    const large = await fetch(`${gw.url}/a2a/${third}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT * 2) }),
    });
    expect(large.status).toBe(413);
    // A page of another origin: refused by the app's guard, before the handler too.
    const foreign = await fetch(`${gw.url}/a2a/${fourth}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://evil.test' },
      body: '{}',
    });
    expect(foreign.status).toBe(403);

    const { status, body: text } = await api<string>(gw.url, '/metrics', { token: ADMIN });
    expect(status).toBe(200);
    expect(names.filter((name) => text.includes(name.slice(0, 40)))).toEqual([]);
    const series = text.split('\n').filter((line) => line.startsWith('a2a_proxy_requests_total{'));
    expect(series.filter((line) => line.includes('agent="(unknown)"'))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/status="agent_unknown"\} 3$/),
        expect.stringMatching(/status="body_too_large"\} 1$/),
        expect.stringMatching(/status="http_origin_not_allowed"\} 1$/),
      ]),
    );
    // Every series names a configured agent or the one fixed value.
    for (const line of series)
      expect(line).toMatch(/^a2a_proxy_requests_total\{agent="(ops|\(unknown\))"/);
    expect(text).toMatch(/^# HELP a2a_proxy_requests_total .*\(unknown\)/m);
  });

  it('answers a path of several KB not found with the path cut to its first 200 characters', async () => {
    const path = `/api/${'p'.repeat(8000)}`;
    const { status, body } = await api<ErrorBody>(gw.url, path, { token: ADMIN });
    expect(status).toBe(404);
    expect(body.error?.code).toBe('FLEETGATE_HTTP_ROUTE_NOT_FOUND');
    const message = body.error?.message ?? '';
    expect(message).toContain(`GET ${path.slice(0, 200)}…`);
    expect(message).not.toContain(path.slice(0, 201));
    expect(message.length).toBeLessThan(300);
  });

  it('says a body of JSON null must be an object, naming body', async () => {
    const res = await fetch(`${gw.url}/api/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: 'null',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body.error?.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    expect(body.error?.message).toBe('Invalid request body: body: must be a JSON object, got null');
    expect(body.error?.details?.issues).toEqual([
      { path: 'body', message: 'must be a JSON object, got null' },
    ]);
  });
});
