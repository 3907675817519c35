/**
 * Push delivery to an A2A client survives the gateway: the gateway process is killed (SIGKILL)
 * while the delivery of a task's terminal state waits for its next try, started again on the same
 * store, and the client's callback receives the terminal state — once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { sdkClient, userMessage } from './support/a2a-client.js';
import type { ServiceProcess } from './support/gateway-service.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';

const ADMIN = 'push-admin-0123456789abcdef';
const OPERATOR = 'push-operator-0123456789ab';

interface Receipt {
  taskId: string | undefined;
  state: string | undefined;
  answered: number;
}

describe('push delivery across a gateway crash', () => {
  let dir: string;
  let file: string;
  let agent: RunningAgent;
  let gw: ServiceProcess | undefined;
  let server: Server;
  let callback: string;
  const receipts: Receipt[] = [];
  const env = { PR_ADMIN: ADMIN, PR_OPERATOR: OPERATOR };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-proxy-push-'));
    agent = await startOpsAgent();
    // The callback refuses the first delivery of a terminal state, accepts everything else.
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        const body = JSON.parse(text) as { task?: { id?: string; status?: { state?: string } } };
        const state = body.task?.status?.state;
        const refuse =
          state === 'TASK_STATE_COMPLETED' &&
          !receipts.some((r) => r.state === 'TASK_STATE_COMPLETED');
        const answered = refuse ? 503 : 200;
        receipts.push({ taskId: body.task?.id, state, answered });
        res.writeHead(answered).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    callback = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    file = join(dir, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'policy: { sweepInterval: 200ms }',
        // The next try waits long enough for the gateway to be killed in between.
        'proxy: { holdFor: 300ms, push: { attempts: 4, backoff: 3s, timeout: 1s, sweepInterval: 200ms } }',
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: PR_ADMIN, roles: [admin] }',
        '    - { name: bob, tokenEnv: PR_OPERATOR, roles: [operator] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({ args: ['--config', file], env });
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await agent?.close();
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers the terminal state once after the gateway was killed between tries', async () => {
    const client = await sdkClient(`${gw!.url}/a2a/ops`, { token: OPERATOR });
    const held = (await client.sendMessage({
      tenant: '',
      message: userMessage('push across a crash', { 'x-effect-domain-skill': 'bulk_migration' }),
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    expect(held.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'crash-1',
      taskId: held.id,
      url: callback,
      token: 'client-token',
      authentication: undefined,
    });
    const approvalId = (
      held.status?.message?.metadata?.['fleetgate'] as { approvalId?: string } | undefined
    )?.approvalId;
    expect(approvalId).toBeDefined();
    await api(gw!.url, `/api/approvals/${approvalId}/approve`, { token: ADMIN, body: {} });

    // The first try of the terminal state is refused; the gateway dies before the next one.
    await eventually(() =>
      receipts.some((r) => r.state === 'TASK_STATE_COMPLETED' && r.answered === 503)
        ? true
        : undefined,
    );
    await gw!.stop('SIGKILL');
    gw = undefined;
    gw = await startServiceProcess({ args: ['--config', file], env });

    const accepted = (): Receipt[] =>
      receipts.filter((r) => r.state === 'TASK_STATE_COMPLETED' && r.answered === 200);
    await eventually(
      () => (accepted().length > 0 ? true : undefined),
      20_000,
      'the accepted delivery',
    );
    // Sweeps go on: nothing sends it again.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(accepted()).toHaveLength(1);
    expect(accepted()[0]!.taskId).toBe(held.id);
    expect(receipts.filter((r) => r.state === 'TASK_STATE_COMPLETED')).toHaveLength(2);
  }, 60_000);
});
