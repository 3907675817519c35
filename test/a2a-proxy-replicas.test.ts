/**
 * The A2A proxy on two `fleetgate start` replicas sharing PostgreSQL and NATS JetStream: a call
 * held on one replica is approved through the other's API and completes — the client sees it on
 * either replica, the agent is called once, and the same message id sent to the other replica
 * finds the same task.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState, type Task } from '@a2a-js/sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { sdkClient, userMessage } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';
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

const ADMIN = 'proxy-admin-0123456789abcdef';
const OPERATOR = 'proxy-operator-0123456789ab';

describe.skipIf(!pgUp || !natsUp)('the A2A proxy on two replicas (PostgreSQL + JetStream)', () => {
  const name = uniqueName('pxy');
  const stream = name.toUpperCase();
  let dir: string;
  let agent: RunningAgent;
  const replicas: ServiceProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-proxy-replicas-'));
    agent = await startOpsAgent();
    const file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: ${PG_URL}?schema=${name}`,
        `bus: ${NATS_URL}?stream=${stream}&prefix=${name}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'policy: { sweepInterval: 200ms }',
        'proxy: { holdFor: 1s }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: P_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: P_OPERATOR, roles: [operator] }',
      ].join('\n'),
    );
    const env = { P_ADMIN: ADMIN, P_OPERATOR: OPERATOR };
    replicas.push(await startServiceProcess({ args: ['--config', file], env }));
    replicas.push(await startServiceProcess({ args: ['--config', file], env }));
  }, 90_000);

  afterAll(async () => {
    for (const r of replicas) await r.stop('SIGKILL');
    await agent?.close();
    await deleteNatsStream(stream).catch(() => undefined);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`drop schema if exists ${name} cascade`);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('completes a call held on one replica once it is approved through the other', async () => {
    const [a, b] = replicas as [ServiceProcess, ServiceProcess];
    const onA = await sdkClient(`${a.url}/a2a/ops`, { token: OPERATOR });
    const onB = await sdkClient(`${b.url}/a2a/ops`, { token: OPERATOR });
    const message = userMessage('migrate across replicas', {
      'x-effect-domain-skill': 'bulk_migration',
    });
    const held = (await onA.sendMessage({
      tenant: '',
      message,
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    expect(held.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const approvalId = (held.status?.message?.metadata?.['fleetgate'] as { approvalId: string })
      .approvalId;

    // The same message id on the other replica: the same task, no second call.
    const again = (await onB.sendMessage({
      tenant: '',
      message,
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    expect(again.id).toBe(held.id);

    const approved = await api(b.url, `/api/approvals/${approvalId}/approve`, {
      token: ADMIN,
      body: { reason: 'go' },
    });
    expect(approved.status).toBe(200);

    for (const client of [onA, onB]) {
      const done = await eventually(async () => {
        const task = await client.getTask({ tenant: '', id: held.id });
        return task.status?.state === TaskState.TASK_STATE_COMPLETED ? task : undefined;
      });
      expect(done.artifacts.length).toBeGreaterThan(0);
    }
    expect(agent.received.filter((c) => c.skill === 'bulk_migration')).toHaveLength(1);
  });
});
