/**
 * The dashboard when things are out of reach, in real Chromium against `fleetgate start` run as
 * a child process over the demo fleet's agents:
 * - the world view's code (a chunk loaded when first shown) fails to load: the view says so with
 *   a Retry button, and loads on retry or on the next visit instead of staying blank;
 * - the gateway goes away (a TCP proxy in front of it cuts every connection): a decision says the
 *   gateway cannot be reached, the strip stops counting uptime and, after a while, says offline;
 *   the page reconnects by itself once the gateway is back;
 * - the sign-in page asks the gateway who the tab is only with a token, or when the gateway may
 *   have none (loopback, not known to want one): no 401 on every visit; a gateway without tokens
 *   still signs the page in by itself.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startDemoAgents } from '../examples/demo/index.js';
import { getJson } from './support/api-json.js';
import {
  chromiumPath,
  ensureDashboardBuilt,
  launchBrowser,
  signIn,
  type RunningBrowser,
} from './support/browser.js';
import { startServiceProcess, type ServiceProcess } from './support/gateway-service.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

const SHOTS = join(import.meta.dirname, '..', 'test-results', 'dashboard');
const TOKENS = {
  root: 'root-admin-token-0123456789',
  olive: 'olive-operator-token-012345',
  alice: 'alice-approver-token-012345',
} as const;
const ROLES: Record<keyof typeof TOKENS, string> = {
  root: 'admin',
  olive: 'operator',
  alice: 'approver',
};
/** A name that is not loopback, which the test's Chromium resolves to 127.0.0.1. */
const HOST = 'gateway.fleet.test';

/** Writes a configuration over `agents` (with the tokens unless `tokenless`) and starts it. */
async function startGateway(
  dir: string,
  agents: readonly RunningAgent[],
  tokenless = false,
): Promise<ServiceProcess> {
  const config = join(dir, 'fleetgate.yaml');
  writeFileSync(
    config,
    [
      `listen: { host: 127.0.0.1, port: 0, allowedHosts: [${HOST}] }`,
      `store: sqlite:${join(dir, 'fleetgate.db')}`,
      'agents:',
      ...agents.map((a) => `  - { name: ${a.name}, url: ${a.url} }`),
      'policy:',
      '  approvalAtOrAbove: public',
      '  vetoAtOrAbove: fleet',
      '  vetoWindow: 30s',
      '  approvers: { fleet: 1, public: 1 }',
      ...(tokenless
        ? []
        : [
            'auth:',
            '  tokens:',
            ...Object.keys(TOKENS).map(
              (name) =>
                `    - { name: ${name}, tokenEnv: DASH_${name.toUpperCase()}, roles: [${ROLES[name as keyof typeof TOKENS]}] }`,
            ),
          ]),
    ].join('\n'),
  );
  return startServiceProcess({
    cwd: dir,
    args: ['--config', config],
    env: Object.fromEntries(
      Object.entries(TOKENS).map(([name, t]) => [`DASH_${name.toUpperCase()}`, t]),
    ),
  });
}

/** Records the page's `/api/session` requests and its console errors. */
function watch(page: Page): { sessions: string[]; errors: string[] } {
  const seen = { sessions: [] as string[], errors: [] as string[] };
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/api/session')
      seen.sessions.push(r.headers().authorization === undefined ? 'no token' : 'token');
  });
  page.on('console', (m) => {
    if (m.type() === 'error') seen.errors.push(m.text());
  });
  return seen;
}

describe('the dashboard when the gateway or its code is out of reach', () => {
  let dir: string;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  let agents: RunningAgent[];
  let proxy: TcpProxy | undefined;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-reach-'));
    agents = await startDemoAgents();
    gw = await startGateway(dir, agents);
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await proxy?.close();
    await browser?.close();
    await gw?.stop('SIGTERM');
    await Promise.all((agents ?? []).map((a) => a.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('says the world view failed to load with a Retry, and loads it on retry and on the next visit', async () => {
    const { context, page } = await browser.open(`${gw.url}/`);
    await signIn(page, TOKENS.alice);
    await page.locator('li.skill').first().waitFor();
    // The view's code does not arrive (a deploy replaced it, the network dropped).
    let refuse = true;
    await page.route('**/assets/world-*.js', (route) =>
      refuse ? route.abort('connectionreset') : route.continue(),
    );
    await page.click('a[data-view=world]');
    const failed = page.locator('[data-load-failed]');
    await failed.waitFor();
    expect(await failed.textContent()).toContain('This view could not be loaded');
    await page.screenshot({ path: join(SHOTS, 'world-load-failed.png') });

    // The next visit asks again (and fails again while it is refused).
    await page.click('a[data-view=fleet]');
    await page.click('a[data-view=world]');
    await failed.waitFor();
    refuse = false;
    await page.click('a[data-view=fleet]');
    await page.click('a[data-view=world]');
    await page.locator('#world-title').waitFor();
    // Once in, the code is kept: the view comes back at once, without asking again.
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    refuse = true;
    await page.click('a[data-view=fleet]');
    await page.click('a[data-view=world]');
    await page.locator('#world-title').waitFor();
    expect(errors).toEqual([]);
    await context.close();

    // A Retry in place does the same.
    const second = await browser.open(`${gw.url}/`);
    await signIn(second.page, TOKENS.alice);
    refuse = true;
    await second.page.route('**/assets/world-*.js', (route) =>
      refuse ? route.abort('connectionreset') : route.continue(),
    );
    await second.page.click('a[data-view=world]');
    await second.page.locator('[data-load-failed]').waitFor();
    refuse = false;
    await second.page.locator('[data-load-failed] button', { hasText: 'Retry' }).click();
    await second.page.locator('#world-title').waitFor();
    expect(await second.page.locator('[data-load-failed]').count()).toBe(0);
    await second.context.close();
  }, 60_000);

  it('says the gateway cannot be reached, stops counting its uptime, goes offline after a while, and comes back', async () => {
    const target = new URL(gw.url);
    proxy = await startTcpProxy(target.hostname, Number(target.port));
    const via = `http://127.0.0.1:${proxy.port}`;
    const call = await getJson<{ id: string; status: string }>(
      gw.url,
      '/api/dispatch',
      TOKENS.olive,
      { agent: 'deployer', skill: 'production_deploy', text: 'ship 6.0.0' },
    );
    expect(call.status).toBe('awaiting-approval');
    const context = await browser.browser.newContext();
    context.setDefaultTimeout(10_000);
    // The page's clock is the test's: minutes pass in a call.
    await context.clock.install();
    const page = await context.newPage();
    await page.goto(`${via}/#/approvals`);
    await signIn(page, TOKENS.alice);
    await page.locator('[data-stream=live]').waitFor();
    const card = page.locator(`li.request[data-dispatch="${call.id}"]`);
    await card.waitFor();
    const uptime = page.locator('[data-gateway-version]');
    await expect.poll(() => uptime.textContent()).toMatch(/^0\.1\.0 · up \d+s$/);

    proxy.cut();
    await page.locator('[data-stream=reconnecting]').waitFor();
    // The strip no longer counts the uptime of a gateway it cannot hear.
    await expect.poll(() => uptime.textContent()).toMatch(/^0\.1\.0 · not heard from since /);
    const frozen = await uptime.textContent();

    await card.locator('button.approve').click();
    const said = card.locator('.error');
    await said.waitFor();
    expect(await said.textContent()).toMatch(/^The gateway cannot be reached/);
    expect(await said.textContent()).not.toContain('TypeError');

    // A while later it says offline, and why; the uptime still does not count on.
    await page.clock.fastForward(20_000);
    await page.clock.fastForward(3_000);
    await page.locator('[data-stream=offline]').waitFor();
    expect(await page.locator('[data-stream-detail]').textContent()).toMatch(
      /^the gateway cannot be reached since .+; still trying every 2 s$/,
    );
    await page.clock.fastForward(10_000);
    expect(await uptime.textContent()).toBe(frozen);
    await page.screenshot({ path: join(SHOTS, 'offline.png') });

    // Back: the page reconnects by itself (it kept trying) and the decision goes through.
    proxy.pass();
    await page.clock.fastForward(3_000);
    await page.locator('[data-stream=live]').waitFor();
    await expect.poll(() => uptime.textContent()).toMatch(/^0\.1\.0 · up \d+/);
    await card.locator('button.approve').click();
    await card.waitFor({ state: 'detached' });
    await context.close();
  }, 60_000);

  it('shows the sign-in form without a 401 once the gateway is known to want a token', async () => {
    const { context, page } = await browser.open(`${gw.url}/`);
    await signIn(page, TOKENS.alice);
    await page.locator('li.skill').first().waitFor();
    // Signing out reloads the page at the sign-in form: nothing to ask the gateway.
    const seen = watch(page);
    await page.locator('header .who button', { hasText: 'Sign out' }).click();
    await page.locator('#token').waitFor();
    // A new tab of the same browser (no token in its session) neither.
    const tab = await context.newPage();
    const seenInTab = watch(tab);
    await tab.goto(`${gw.url}/#/approvals`);
    await tab.locator('#token').waitFor();
    await tab.waitForTimeout(500);
    expect(seen).toEqual({ sessions: [], errors: [] });
    expect(seenInTab).toEqual({ sessions: [], errors: [] });
    // Signing in asks, with the token.
    await signIn(tab, TOKENS.alice);
    expect(seenInTab.sessions).toEqual(['token']);
    await context.close();
  });

  it('shows the sign-in form at once on a host that is not loopback: a gateway there has tokens', async () => {
    const port = new URL(gw.url).port;
    const own: Browser = await chromium.launch({
      executablePath: chromiumPath()!,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', `--host-resolver-rules=MAP ${HOST} 127.0.0.1`],
    });
    try {
      const page = await own.newPage();
      page.setDefaultTimeout(10_000);
      const seen = watch(page);
      await page.goto(`http://${HOST}:${port}/`);
      await page.locator('#token').waitFor();
      await page.waitForTimeout(500);
      expect(seen).toEqual({ sessions: [], errors: [] });
      await signIn(page, TOKENS.alice);
      expect(await page.locator('header .who').textContent()).toContain('alice (approver)');
    } finally {
      await own.close();
    }
  });
});

describe('the dashboard of a gateway without tokens', () => {
  let dir: string;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  let agents: RunningAgent[];

  beforeAll(async () => {
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-open-'));
    agents = await startDemoAgents();
    gw = await startGateway(dir, agents, true);
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop('SIGTERM');
    await Promise.all((agents ?? []).map((a) => a.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('signs the page in by itself as the anonymous admin, on loopback', async () => {
    const { context, page } = await browser.open(`${gw.url}/`);
    const seen = watch(page);
    await page.locator('header.top').waitFor();
    expect(await page.locator('header .who').textContent()).toContain('anonymous (admin)');
    await page.locator('li.skill').first().waitFor();
    expect(seen.errors).toEqual([]);
    // Signed out, it signs in again by itself: there is nobody else to be.
    await page.locator('header .who button', { hasText: 'Sign out' }).click();
    await page.locator('header.top').waitFor();
    expect(await page.locator('header .who').textContent()).toContain('anonymous (admin)');
    await context.close();
  });
});
