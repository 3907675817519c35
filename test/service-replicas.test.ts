/**
 * Two `fleetgate start` processes sharing one fleet through the machine's NATS JetStream and
 * PostgreSQL: one holds the card-refresh lease, an approval given on one releases a dispatch held
 * on the other, the delta event appears once on the live stream of each, and when the lease
 * holder is killed (SIGKILL) the other takes the lease over and the refresh goes on.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import type { ServiceProcess, SseFrame } from './support/gateway-service.js';
import { api, eventually, readEvents, startServiceProcess } from './support/gateway-service.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';

const pgUp = await requirePostgres();
const natsUp = await requireNats();

const ADMIN = 'replica-admin-0123456789abcdef';
const OPERATOR = 'replica-operator-0123456789ab';
const LEASE_TTL_MS = 2000;

/** A proxy in front of the agent that counts card fetches. */
async function countingProxy(
  target: string,
): Promise<{ url: string; cards: () => number; server: Server }> {
  let cards = 0;
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/.well-known/')) cards += 1;
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cards: () => cards,
    server,
  };
}

interface Ready {
  cardRefresh: string;
}

describe.skipIf(!pgUp || !natsUp)('two fleetgate start replicas on PostgreSQL + JetStream', () => {
  const name = uniqueName('svc');
  const stream = name.toUpperCase();
  let dir: string;
  let agent: RunningAgent;
  let proxy: Awaited<ReturnType<typeof countingProxy>>;
  const replicas: ServiceProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-replicas-'));
    agent = await startOpsAgent();
    proxy = await countingProxy(agent.url);
    const file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: ${PG_URL}?schema=${name}`,
        `bus: ${NATS_URL}?stream=${stream}&prefix=${name}`,
        `agents: [{ name: ops, url: ${proxy.url} }]`,
        'cards: { refreshInterval: 1s }',
        `replicas: { leaseTtl: ${LEASE_TTL_MS}ms }`,
        'policy: { sweepInterval: 200ms }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: R_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: R_OPERATOR, roles: [operator] }',
      ].join('\n'),
    );
    const env = { R_ADMIN: ADMIN, R_OPERATOR: OPERATOR };
    // One after the other: the first creates the schema and the stream.
    replicas.push(await startServiceProcess({ args: ['--config', file], env }));
    replicas.push(await startServiceProcess({ args: ['--config', file], env }));
  }, 90_000);

  afterAll(async () => {
    for (const r of replicas) await r.stop('SIGKILL');
    await agent?.close();
    proxy?.server.close();
    await deleteNatsStream(stream).catch(() => undefined);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`drop schema if exists ${name} cascade`);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('has exactly one card-refresh lease holder', async () => {
    const states = await eventually(
      async () => {
        const answers = await Promise.all(replicas.map((r) => api<Ready>(r.url, '/readyz')));
        const roles = answers.map((a) => a.body.cardRefresh).sort();
        return roles.join() === 'follower,lease-holder' ? roles : undefined;
      },
      10_000,
      'one holder and one follower',
    );
    expect(states).toEqual(['follower', 'lease-holder']);
    // Only the holder fetches: about one card per refresh interval (1 s), not one per replica.
    const before = proxy.cards();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const fetched = proxy.cards() - before;
    expect(fetched).toBeGreaterThanOrEqual(1);
    expect(fetched).toBeLessThanOrEqual(4);
  });

  it('releases on one replica a dispatch held on the other; the delta appears once on both streams', async () => {
    const [a, b] = replicas as [ServiceProcess, ServiceProcess];
    const controller = new AbortController();
    const onA: SseFrame[] = [];
    const onB: SseFrame[] = [];
    const streams = await Promise.all([
      readEvents(
        a.url,
        '/api/events?topics=world.state.delta',
        { token: OPERATOR, signal: controller.signal },
        onA,
      ),
      readEvents(
        b.url,
        '/api/events?topics=world.state.delta',
        { token: OPERATOR, signal: controller.signal },
        onB,
      ),
    ]);
    expect(streams.map((s) => s.status)).toEqual([200, 200]);

    const held = await api<{ id: string; status: string; decision: { approvalId: string } }>(
      a.url,
      '/api/dispatch',
      {
        token: OPERATOR,
        body: { agent: 'ops', skill: 'bulk_migration', text: 'migrate' },
      },
    );
    expect(held.body.status).toBe('awaiting-approval');
    const approved = await api(b.url, `/api/approvals/${held.body.decision.approvalId}/approve`, {
      token: ADMIN,
      body: {},
    });
    expect(approved.status).toBe(200);
    const done = await eventually(
      async () => {
        const d = await api<{ status: string; taskId: string }>(
          a.url,
          `/api/dispatches/${held.body.id}`,
          { token: OPERATOR },
        );
        return d.body.status === 'completed' ? d.body : undefined;
      },
      15_000,
      'the dispatch to complete',
    );
    expect(agent.received.filter((c) => c.skill === 'bulk_migration')).toHaveLength(1);

    const mine = (frames: SseFrame[]): SseFrame[] =>
      frames.filter((f) => f.data?.payload?.taskId === done.taskId);
    await eventually(
      () => (mine(onA).length > 0 && mine(onB).length > 0 ? true : undefined),
      15_000,
      'the delta on both streams',
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(mine(onA)).toHaveLength(1);
    expect(mine(onB)).toHaveLength(1);
    // Both name it by the same position in the stream: a client may resume on either replica.
    expect(mine(onA)[0]!.id).toBe(mine(onB)[0]!.id);
    const world = await api(b.url, '/api/world/github_issues', { token: OPERATOR });
    expect(world.body).toMatchObject({ version: 1, state: { data: { migrated: ['repo-a'] } } });
    controller.abort();
    await Promise.all(streams.map((s) => s.done));
  }, 60_000);

  it('hands the lease over when its holder is killed, and the card refresh goes on', async () => {
    const roles = await Promise.all(replicas.map((r) => api<Ready>(r.url, '/readyz')));
    const holder = replicas[roles.findIndex((r) => r.body.cardRefresh === 'lease-holder')]!;
    const survivor = replicas.find((r) => r !== holder)!;
    expect(await holder.stop('SIGKILL')).toBeNull();
    const killedAt = Date.now();
    await eventually(
      async () => {
        const r = await api<Ready>(survivor.url, '/readyz');
        return r.body.cardRefresh === 'lease-holder' ? true : undefined;
      },
      3 * LEASE_TTL_MS + 2000,
      'the survivor to take the lease',
    );
    expect(Date.now() - killedAt).toBeLessThan(3 * LEASE_TTL_MS + 2000);
    const before = proxy.cards();
    await eventually(
      () => (proxy.cards() >= before + 2 ? true : undefined),
      10_000,
      'card fetches by the new holder',
    );
    const agents = await api(survivor.url, '/api/agents', { token: OPERATOR });
    expect(agents.body).toMatchObject({ agents: [{ name: 'ops', status: 'fresh' }] });
  }, 60_000);
});
