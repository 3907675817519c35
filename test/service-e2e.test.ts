/**
 * `fleetgate start --config` as a user runs it, against a real `@a2a-js/sdk` agent: the fleet
 * view, a gated dispatch that waits, its approval through the API, the completed task, the delta
 * in the world state and on the live-event stream, `Last-Event-ID` resume with nothing missed,
 * the W3C trace context carried to the agent, and a graceful stop.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import type { ServiceProcess, SseFrame } from './support/gateway-service.js';
import { api, eventually, readEvents, startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'admin-token-0123456789abcdef';
const OPERATOR = 'operator-token-0123456789abc';

interface Dispatch {
  id: string;
  status: string;
  taskId: string | null;
  decision: { action: string; approvalId?: string; mode?: string };
}

describe('fleetgate start --config', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-service-'));
    agent = await startOpsAgent();
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: ops, url: ${agent.url} }`,
        'policy: { sweepInterval: 200ms }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: E2E_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: E2E_OPERATOR, roles: [operator] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      args: ['--config', config, '--log-level', 'debug'],
      env: { E2E_ADMIN: ADMIN, E2E_OPERATOR: OPERATOR },
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the fleet with effective radius, hitl mode and domains per skill', async () => {
    const { status, body } = await api(gw.url, '/api/agents', { token: OPERATOR });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      agents: [
        {
          name: 'ops',
          status: 'fresh',
          skills: expect.arrayContaining([
            expect.objectContaining({
              id: 'sitrep',
              effectiveRadius: 'self',
              hitlMode: 'autonomous',
            }),
            expect.objectContaining({
              id: 'bulk_migration',
              declaredRadius: 'fleet',
              effectiveRadius: 'fleet',
              hitlMode: 'gated',
              domains: ['github_issues'],
            }),
          ]),
        },
      ],
    });
  });

  it('holds a gated dispatch, releases it on approval, and lands its delta in the world and on SSE', async () => {
    const controller = new AbortController();
    const frames: SseFrame[] = [];
    const stream = await readEvents(
      gw.url,
      '/api/events?topics=world.state.delta,hitl.approval.>',
      { token: OPERATOR, signal: controller.signal },
      frames,
    );
    expect(stream.status).toBe(200);

    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const held = await api<Dispatch>(gw.url, '/api/dispatch', {
      token: OPERATOR,
      body: { agent: 'ops', skill: 'bulk_migration', text: 'migrate the org' },
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({
      status: 'awaiting-approval',
      decision: { action: 'hold', mode: 'gated' },
    });
    const approvalId = held.body.decision.approvalId!;

    const pending = await api(gw.url, '/api/approvals', { token: OPERATOR });
    expect(pending.body).toMatchObject({
      approvals: [
        expect.objectContaining({
          id: approvalId,
          agent: 'ops',
          skill: 'bulk_migration',
          radius: 'fleet',
          requestedBy: 'bob',
        }),
      ],
    });
    // The operator may not approve; the admin may, under the token's name.
    const refused = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
      token: OPERATOR,
      body: {},
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: 'FLEETGATE_AUTH_FORBIDDEN' } });
    expect(agent.received.filter((c) => c.skill === 'bulk_migration')).toHaveLength(0);

    const approved = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
      token: ADMIN,
      body: { reason: 'planned' },
    });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({
      approval: { id: approvalId, decidedBy: 'alice' },
      dispatch: { id: held.body.id, status: 'completed' },
    });
    const again = await api(gw.url, `/api/approvals/${approvalId}/approve`, {
      token: ADMIN,
      body: {},
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      error: { code: 'FLEETGATE_APPROVAL_ALREADY_DECIDED', details: { decidedBy: 'alice' } },
    });

    const record = await api<Dispatch>(gw.url, `/api/dispatches/${held.body.id}`, {
      token: OPERATOR,
    });
    expect(record.body).toMatchObject({
      status: 'completed',
      agent: 'ops',
      skill: 'bulk_migration',
    });
    const world = await api(gw.url, '/api/world/github_issues', { token: OPERATOR });
    expect(world.body).toMatchObject({
      name: 'github_issues',
      version: 1,
      state: { data: { migrated: ['repo-a'] } },
    });

    const delta = await eventually(
      () => frames.find((f) => f.data?.topic === 'world.state.delta'),
      10_000,
      'the delta on SSE',
    );
    expect(delta.data?.payload).toMatchObject({
      source: 'ops',
      skill: 'bulk_migration',
      taskId: record.body.taskId,
    });
    expect(frames.filter((f) => f.data?.topic === 'world.state.delta')).toHaveLength(1);
    expect(frames.some((f) => f.data?.topic === 'hitl.approval.decided')).toBe(true);

    // The call carried the caller's trace: same trace id, the gateway's span as parent.
    const call = agent.received.find((c) => c.skill === 'bulk_migration')!;
    expect(call.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    controller.abort();
    await stream.done;
  });

  it('resumes a live stream after a disconnect from Last-Event-ID with nothing missed or repeated', async () => {
    const first = new AbortController();
    const before: SseFrame[] = [];
    const a = await readEvents(
      gw.url,
      '/api/events?topics=world.state.delta',
      { token: OPERATOR, signal: first.signal },
      before,
    );
    expect(a.status).toBe(200);
    const one = await api<Dispatch>(gw.url, '/api/dispatch?wait=10s', {
      token: OPERATOR,
      body: { agent: 'ops', skill: 'sitrep' },
    });
    expect(one.body.status).toBe('completed');
    const seen = await eventually(
      () => before.find((f) => f.data?.payload?.taskId === one.body.taskId),
      10_000,
      'first delta',
    );
    first.abort();
    await a.done;

    // While disconnected: two more tasks, each with a delta.
    const missed: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const r = await api<Dispatch>(gw.url, '/api/dispatch?wait=10s', {
        token: OPERATOR,
        body: { agent: 'ops', skill: 'sitrep', text: `run ${i}` },
      });
      expect(r.body.status).toBe('completed');
      missed.push(r.body.taskId!);
    }

    const second = new AbortController();
    const after: SseFrame[] = [];
    const b = await readEvents(
      gw.url,
      '/api/events?topics=world.state.delta',
      { token: OPERATOR, lastEventId: seen.id!, signal: second.signal },
      after,
    );
    expect(b.status).toBe(200);
    await eventually(() => (after.length >= 2 ? true : undefined), 10_000, 'the missed deltas');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(after.map((f) => f.data?.payload?.taskId)).toEqual(missed);
    second.abort();
    await b.done;
  });

  it('answers unknown agents and skills, bad JSON and bad topic filters with coded 4xx errors', async () => {
    const noAgent = await api(gw.url, '/api/dispatch', {
      token: OPERATOR,
      body: { agent: 'nobody', skill: 'sitrep' },
    });
    expect([noAgent.status, noAgent.body]).toMatchObject([
      404,
      { error: { code: 'FLEETGATE_AGENT_UNKNOWN' } },
    ]);
    const noSkill = await api(gw.url, '/api/dispatch', {
      token: OPERATOR,
      body: { agent: 'ops', skill: 'fly' },
    });
    expect([noSkill.status, noSkill.body]).toMatchObject([
      404,
      { error: { code: 'FLEETGATE_SKILL_UNKNOWN' } },
    ]);
    const unrouted = await api(gw.url, '/api/dispatch', {
      token: OPERATOR,
      body: { skill: 'fly' },
    });
    expect([unrouted.status, unrouted.body]).toMatchObject([
      404,
      { error: { code: 'FLEETGATE_SKILL_UNKNOWN' } },
    ]);
    const badBody = await api(gw.url, '/api/dispatch', { token: OPERATOR, body: { agent: 'ops' } });
    expect([badBody.status, badBody.body]).toMatchObject([
      400,
      {
        error: {
          code: 'FLEETGATE_HTTP_REQUEST_INVALID',
          details: { issues: [{ path: 'body.skill' }] },
        },
      },
    ]);
    const response = await fetch(`${gw.url}/api/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: '{"skill": ',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'FLEETGATE_HTTP_JSON_INVALID' } });
    const huge = await fetch(`${gw.url}/api/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ error: { code: 'FLEETGATE_HTTP_BODY_TOO_LARGE' } });
    const badTopic = await api(gw.url, '/api/events?topics=world.>.delta', { token: OPERATOR });
    expect([badTopic.status, badTopic.body]).toMatchObject([
      400,
      { error: { code: 'FLEETGATE_TOPIC_INVALID' } },
    ]);
    const noDomain = await api(gw.url, '/api/world/nowhere', { token: OPERATOR });
    expect([noDomain.status, noDomain.body]).toMatchObject([
      404,
      { error: { code: 'FLEETGATE_WORLD_DOMAIN_UNKNOWN' } },
    ]);
    const noRoute = await api(gw.url, '/api/nothing', { token: OPERATOR });
    expect([noRoute.status, noRoute.body]).toMatchObject([
      404,
      { error: { code: 'FLEETGATE_HTTP_ROUTE_NOT_FOUND' } },
    ]);
    // A route a typo away, or taken with another method, is named.
    const singular = await api(gw.url, '/api/dispatch', { token: OPERATOR });
    expect([singular.status, singular.body]).toMatchObject([
      404,
      {
        error: {
          code: 'FLEETGATE_HTTP_ROUTE_NOT_FOUND',
          message:
            'No route GET /api/dispatch (did you mean GET /api/dispatches, or POST /api/dispatch?); see /api/openapi.json.',
        },
      },
    ]);
  });

  it('answers every oversized body with its 413, not a broken connection, declared or streamed', async () => {
    const oversized = JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'x'.repeat(3 << 20) });
    const post = (path: string, body: BodyInit, extra: Record<string, string> = {}) =>
      fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${OPERATOR}`,
          'content-type': 'application/json',
          ...extra,
        },
        body,
        duplex: 'half',
      } as RequestInit);
    const streamed = () =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
          for (let i = 0; i < 40; i += 1) controller.enqueue(chunk);
          controller.close();
        },
      });
    // The client is still writing when the size is known: each answer must still reach it.
    for (let round = 0; round < 8; round += 1) {
      for (const [path, body] of [
        ['/api/dispatch', oversized],
        ['/api/dispatch', streamed()],
        ['/a2a/ops/', oversized],
      ] as const) {
        const response = await post(path, body);
        expect([path, response.status]).toEqual([path, 413]);
        const text = await response.text();
        expect(text).toContain('FLEETGATE_HTTP_BODY_TOO_LARGE');
      }
    }
    const declared = await post('/api/dispatch', oversized);
    expect(await declared.json()).toMatchObject({
      error: {
        message: expect.stringContaining('listen.bodyLimit'),
        details: { limit: 1024 * 1024, size: Buffer.byteLength(oversized) },
      },
    });
    // The connection that carried a 413 still answers the next call.
    const after = await api(gw.url, '/api/agents', { token: OPERATOR });
    expect(after.status).toBe(200);
    // Push callbacks keep their own limit (limits.pushBodyBytes, 4 MiB), above listen.bodyLimit:
    // a 2 MiB push is the receiver's to judge (here: no such task), not refused as too large.
    const status = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer.split('\r\n', 1)[0]!));
      socket.on('error', (error: NodeJS.ErrnoException) => {
        if (answer === '') reject(error);
      });
      socket.write(
        `POST /callbacks/a2a/nobody HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
          `content-length: ${2 << 20}\r\nconnection: close\r\n\r\n`,
      );
      // The receiver answers an unauthenticated push without reading its body; a gateway that
      // waited for the body would get it after a while, and answer then.
      setTimeout(() => {
        if (answer === '' && !socket.destroyed) socket.end(Buffer.alloc(2 << 20, ' '));
      }, 1000);
    });
    expect(status).toBe('HTTP/1.1 401 Unauthorized');
  });

  it('routes a skill without an agent and says why', async () => {
    const routed = await api(gw.url, '/api/dispatch?wait=10s', {
      token: OPERATOR,
      body: { skill: 'sitrep' },
    });
    expect(routed.status).toBe(200);
    expect(routed.body).toMatchObject({
      agent: 'ops',
      status: 'completed',
      routing: { agent: 'ops', reasons: ['ops is the only agent offering sitrep'] },
    });
  });

  it('serves an OpenAPI document with a schema for every route, and Prometheus metrics', async () => {
    const doc = await api<{
      paths: Record<string, Record<string, { parameters: unknown[]; responses: object }>>;
    }>(gw.url, '/api/openapi.json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/api/agents/{name}',
        '/api/dispatch',
        '/api/approvals/{id}/approve',
        '/api/world/{domain}/history',
        '/api/events',
        '/callbacks/a2a/{taskId}',
        '/metrics',
      ]),
    );
    expect(doc.body.paths['/api/dispatch']!.post).toMatchObject({
      requestBody: {
        content: {
          'application/json': {
            schema: { properties: { skill: { type: 'string' } }, required: ['skill'] },
          },
        },
      },
    });
    const metrics = await api<string>(gw.url, '/metrics', { token: OPERATOR });
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(
      /fleetgate_dispatches_total\{agent="ops",skill="bulk_migration",radius="fleet",status="completed"\} 1/,
    );
    expect(metrics.body).toMatch(/fleetgate_gate_decisions_total\{mode="gated"\} 1/);
    expect(metrics.body).toMatch(
      /fleetgate_approval_decision_seconds_count\{radius="fleet",outcome="approved"\} 1/,
    );
    expect(metrics.body).toMatch(/fleetgate_deltas_published_total\{agent="ops"\} \d+/);
    expect(metrics.body).toMatch(/fleetgate_card_refresh_lease_held 1/);
    // The events of the gateway's start are counted too: its first refresh of the card.
    expect(metrics.body).toMatch(
      /fleetgate_card_refreshes_total\{agent="ops",outcome="refreshed"\} [1-9]\d*/,
    );
  });

  it('stops on SIGTERM with exit code 0 and never logs a token', async () => {
    expect(await gw.stop('SIGTERM')).toBe(0);
    expect(gw.stderr()).toContain('"msg":"gateway stopped"');
    expect(gw.stderr()).not.toContain(ADMIN);
    expect(gw.stderr()).not.toContain(OPERATOR);
  });
});
