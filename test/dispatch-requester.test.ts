/**
 * Who asked for a call is kept with its dispatch record, whatever door it came through and whether
 * or not it waited for an approval: `fleetgate start` as a child process with named tokens, a call
 * the gate lets go at once asked through the HTTP API and one through the A2A proxy. The API's
 * dispatch views name the token that asked and the door the call came through, and the dashboard's
 * call page (real Chromium) says both.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { sdkClient, userMessage } from './support/a2a-client.js';
import { getJson } from './support/api-json.js';
import {
  ensureDashboardBuilt,
  launchBrowser,
  signIn,
  type RunningBrowser,
} from './support/browser.js';
import { startServiceProcess, type ServiceProcess } from './support/gateway-service.js';

const TOKENS = {
  alice: 'alice-operator-token-0123456789',
  vera: 'vera-viewer-token-0123456789ab',
} as const;

interface DispatchView {
  id: string;
  status: string;
  requestedBy: string | null;
  door: string | null;
  decision?: { action: string };
}

describe('who asked for a call that ran at once', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let browser: RunningBrowser | undefined;

  beforeAll(async () => {
    ensureDashboardBuilt();
    agent = await startOpsAgent();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-requester-'));
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'bus: memory',
        `agents: [{ name: ops, url: ${agent.url} }]`,
        'auth:',
        '  tokens:',
        '    - { name: alice, tokenEnv: REQ_ALICE, roles: [operator] }',
        '    - { name: vera, tokenEnv: REQ_VERA, roles: [viewer] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--config', config],
      env: { REQ_ALICE: TOKENS.alice, REQ_VERA: TOKENS.vera },
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop('SIGTERM');
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the token that asked in every dispatch view of the API', async () => {
    const answer = await getJson<DispatchView>(gw.url, '/api/dispatch?wait=30s', TOKENS.alice, {
      agent: 'ops',
      skill: 'sitrep',
      text: 'status please',
    });
    // No approval was asked: the gate let the call go at once.
    expect(answer).toMatchObject({ status: 'completed', decision: { action: 'allow' } });
    expect(answer.requestedBy).toBe('alice');
    expect(answer.door).toBe('api');

    const one = await getJson<DispatchView>(gw.url, `/api/dispatches/${answer.id}`, TOKENS.vera);
    expect(one).toMatchObject({
      id: answer.id,
      status: 'completed',
      requestedBy: 'alice',
      door: 'api',
    });
    const page = await getJson<{ dispatches: DispatchView[] }>(
      gw.url,
      '/api/dispatches?agent=ops&limit=10',
      TOKENS.vera,
    );
    expect(page.dispatches.find((d) => d.id === answer.id)?.requestedBy).toBe('alice');
    const story = await getJson<{ dispatch: DispatchView; approvals: unknown[] }>(
      gw.url,
      `/api/dispatches/${answer.id}/story`,
      TOKENS.vera,
    );
    expect(story.approvals).toEqual([]);
    expect(story.dispatch.requestedBy).toBe('alice');
  });

  it('names the A2A proxy caller on the dispatch its message made', async () => {
    const client = await sdkClient(`${gw.url}/a2a/ops`, { token: TOKENS.alice });
    const task = (await client.sendMessage({
      tenant: '',
      message: userMessage('status please', { 'x-effect-domain-skill': 'sitrep' }),
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    // The proxy's task id is its dispatch's id.
    const dispatch = await getJson<DispatchView>(gw.url, `/api/dispatches/${task.id}`, TOKENS.vera);
    expect(dispatch).toMatchObject({
      status: 'completed',
      requestedBy: 'alice',
      door: 'a2a-proxy',
    });
  });

  it('says who asked on the call page', async () => {
    const answer = await getJson<DispatchView>(gw.url, '/api/dispatch?wait=30s', TOKENS.alice, {
      agent: 'ops',
      skill: 'sitrep',
      text: 'for the page',
    });
    expect(answer.status).toBe('completed');
    browser = await launchBrowser();
    const { page } = await browser.open(`${gw.url}/`);
    // A viewer reads the page: who asked is someone else.
    await signIn(page, TOKENS.vera);
    await page.evaluate((id) => (location.hash = `#/calls/${id}`), answer.id);
    await page.locator(`section.call[data-call="${answer.id}"][data-status=completed]`).waitFor();
    expect(await page.locator('[data-asked-by]').textContent()).toBe('asked by alice');
    expect(await page.locator('[data-door]').textContent()).toBe('through the HTTP API');
    expect(await page.locator('[data-step=requested] strong').textContent()).toBe(
      'requested: ops / sitrep by alice',
    );
  }, 60_000);
});
