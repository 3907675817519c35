/**
 * Real process crashes: a gateway process (`createGateway`, support/gateway-process.ts) is killed
 * with SIGKILL at the worst moments and a new gateway on the same SQLite file finishes the job —
 * one world.state.delta per task.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope } from '../src/protocol/index.js';
import { createStoreTaskRecords } from '../src/tasks/index.js';
import type { World } from './support/gateway.js';
import { gateway, until, world } from './support/gateway.js';
import { openGatewayStore } from '../src/service/index.js';

const SCRIPT = fileURLToPath(new URL('support/gateway-process.ts', import.meta.url));

/** Runs the gateway process until it reports, then kills it with SIGKILL. */
async function runAndKill(
  agentUrl: string,
  file: string,
  scenario: string,
): Promise<{ taskId: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, agentUrl, file, scenario], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`gateway process exited early with ${code}`)));
    createInterface({ input: child.stdout }).once('line', resolve);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return JSON.parse(line) as { taskId: string };
}

describe('gateway process killed', () => {
  let w: World;
  let file: string;
  beforeAll(async () => {
    w = await world(150);
    file = w.store.url.replace(/^sqlite:/, '');
  });
  afterAll(() => w.close());

  const deltasOf = (taskId: string): EventEnvelope[] =>
    w.deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);

  it('after the agent finished but before the tracker saw it: recovery completes the task once', async () => {
    const { taskId } = await runAndKill(w.agent.url, file, 'tracked');
    await new Promise((r) => setTimeout(r, 250)); // the agent finishes while no gateway watches
    const next = await gateway(w, { polling: { intervalMs: 20 } });
    try {
      await until(() => deltasOf(taskId).length > 0);
      await new Promise((r) => setTimeout(r, 100));
      expect(deltasOf(taskId)).toHaveLength(1);
      // Its start reloaded the task the dead process was following.
      expect(next.tracker.claims().recovery).toBe(1);
      expect(await createStoreTaskRecords(w.store.db).get('ops', taskId)).toMatchObject({
        state: 'completed',
        terminalVia: 'recovery',
      });
    } finally {
      await next.stop();
    }
  });

  it('between the claim and the bus publish: the outbox relay delivers the event after restart, once', async () => {
    const { taskId } = await runAndKill(w.agent.url, file, 'committed');
    // The claim and the events were committed by the dead process.
    const store = await openGatewayStore(`sqlite:${file}`);
    try {
      expect(await createStoreTaskRecords(store.db).get('ops', taskId)).toMatchObject({
        terminalVia: 'reply',
      });
    } finally {
      await store.close();
    }
    expect(deltasOf(taskId)).toHaveLength(0);
    const next = await gateway(w);
    try {
      await until(() => deltasOf(taskId).length > 0);
      await new Promise((r) => setTimeout(r, 100));
      expect(deltasOf(taskId)).toHaveLength(1);
    } finally {
      await next.stop();
    }
  });
});
