/**
 * A vote on an approval that needs two approvers reaches every open page live, in real Chromium
 * against `fleetgate start --config` run as a child process: alice approves on one page, and
 * within seconds, without a reload, her second tab shows "1/2 approvals", her vote, and no
 * Approve button; bob's inbox shows the count with his Approve still offered; the call's page
 * shows her yes in its story.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { getJson } from './support/api-json.js';
import {
  ensureDashboardBuilt,
  launchBrowser,
  signIn,
  type RunningBrowser,
} from './support/browser.js';
import { startServiceProcess, type ServiceProcess } from './support/gateway-service.js';

const SHOTS = join(import.meta.dirname, '..', 'test-results', 'dashboard');
const TOKENS = {
  root: 'live-votes-root-admin-token-01',
  alice: 'live-votes-alice-approver-tok',
  bob: 'live-votes-bob-approver-token',
} as const;
const ROLES = { root: 'admin', alice: 'approver', bob: 'approver' } as const;

/** "Within a few seconds". */
const LIVE = { timeout: 5000, interval: 100 };

describe('votes on an approval in the dashboard, live', () => {
  let dir: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-votes-'));
    agent = await startOpsAgent();
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        `  - { name: ops, url: ${agent.url} }`,
        'policy:',
        '  approvers: { fleet: 2, public: 2 }',
        '  sweepInterval: 1s',
        'auth:',
        '  tokens:',
        ...Object.entries(ROLES).map(
          ([name, role]) =>
            `    - { name: ${name}, tokenEnv: LIVE_${name.toUpperCase()}, roles: [${role}] }`,
        ),
      ].join('\n'),
    );
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--config', config],
      env: Object.fromEntries(
        Object.entries(TOKENS).map(([name, t]) => [`LIVE_${name.toUpperCase()}`, t]),
      ),
    });
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await gw?.stop('SIGTERM');
    await agent?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** A signed-in page at `hash`, its live stream connected, marked to tell a reload. */
  async function open(token: string, hash: string): Promise<Page> {
    const { context, page } = await browser.open(`${gw.url}/${hash}`);
    contexts.push(context);
    await signIn(page, token);
    await page.locator('[data-stream=live]').waitFor();
    await page.evaluate(() => ((window as unknown as { loadedOnce: boolean }).loadedOnce = true));
    return page;
  }

  const notReloaded = (page: Page): Promise<boolean> =>
    page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce === true);

  it("shows alice's vote on every open page without a reload: count, who, her buttons", async () => {
    const held = await getJson<{ id: string; status: string; decision: { approvalId: string } }>(
      gw.url,
      '/api/dispatch',
      TOKENS.root,
      { agent: 'ops', skill: 'bulk_migration', text: 'migrate the org' },
    );
    expect(held.status).toBe('awaiting-approval');
    const id = held.decision.approvalId;

    const voting = await open(TOKENS.alice, `#/approvals/${id}`);
    const second = await open(TOKENS.alice, `#/approvals/${id}`);
    const bobs = await open(TOKENS.bob, '#/approvals');
    const call = await open(TOKENS.bob, `#/calls/${held.id}`);

    const detail = second.locator(`section.approval-detail[data-approval="${id}"]`);
    const badge = detail.locator('li.request .badge', { hasText: 'approvals' });
    expect(await badge.textContent()).toBe('0/2 approvals');
    await detail.locator('button.approve').waitFor();
    const inbox = bobs.locator(`li.request[data-approval="${id}"]`);
    expect(await inbox.locator('.badge', { hasText: 'approvals' }).textContent()).toBe(
      '0/2 approvals',
    );
    await call.locator(`section.call[data-call="${held.id}"] [data-step=held]`).waitFor();
    expect(await call.locator('[data-step=approved-by]').count()).toBe(0);

    await voting.locator(`section.approval-detail[data-approval="${id}"] button.approve`).click();

    // Her other tab: the count, her vote in the decisions, and no Approve for her.
    await expect.poll(() => badge.textContent(), LIVE).toBe('1/2 approvals');
    await expect.poll(() => detail.locator('[data-vote="alice"]').count(), LIVE).toBe(1);
    expect(await detail.locator('[data-voted]').textContent()).toBe(
      'You approved; it waits for 1 more approver.',
    );
    expect(await detail.locator('button.approve').count()).toBe(0);
    // Bob's inbox: the count, and his own Approve still there.
    await expect
      .poll(() => inbox.locator('.badge', { hasText: 'approvals' }).textContent(), LIVE)
      .toBe('1/2 approvals');
    expect(await inbox.locator('button.approve').count()).toBe(1);
    // The call's story: her yes.
    await expect
      .poll(() => call.locator('[data-step=approved-by]').allTextContents(), LIVE)
      .toEqual([expect.stringContaining('approved by alice')]);
    for (const page of [second, bobs, call]) expect(await notReloaded(page)).toBe(true);
    await second.screenshot({ path: join(SHOTS, 'approval-vote-live.png') });

    // Bob's yes is the second: the call goes, and alice's other tab says it is decided.
    await inbox.locator('button.approve').click();
    await second
      .locator(`section.approval-detail[data-approval="${id}"] [data-target=decided]`)
      .waitFor();
    expect(await notReloaded(second)).toBe(true);
  }, 90_000);
});
