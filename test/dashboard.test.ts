/**
 * The dashboard in real Chromium (playwright-core driving the system binary) against
 * `fleetgate start` as a child process.
 * - The demo as `npm start` runs it: the fleet in colour, the waiting deploy, live effects.
 * - A gateway over the demo fleet's agents with named tokens (an operator, two approvers, a
 *   viewer, an admin) and one agent whose card the test changes: radius colours from the shared
 *   palette, a gated dispatch that reaches the inbox live and completes once approved (delta row,
 *   world value), a second approver's 409, a rejection with its reason, a narrowing acknowledged
 *   from the page, controls hidden from roles that may not use them.
 * Screenshots of every view go to `test-results/dashboard/`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startDemoAgents } from '../examples/demo/index.js';
import { contrastRatio, RADIUS_PALETTE, type BlastRadius } from '../src/protocol/index.js';
import {
  ensureDashboardBuilt,
  launchBrowser,
  signIn,
  type RunningBrowser,
} from './support/browser.js';
import { cardWith, startCardServer, type CardServer } from './support/card-server.js';
import { getJson } from './support/api-json.js';
import { startServiceProcess, type ServiceProcess } from './support/gateway-service.js';

const SHOTS = join(import.meta.dirname, '..', 'test-results', 'dashboard');
const TOKENS = {
  root: 'root-admin-token-0123456789',
  olive: 'olive-operator-token-012345',
  alice: 'alice-approver-token-012345',
  bob: 'bob-approver-token-01234567',
  vera: 'vera-viewer-token-012345678',
} as const;
const ROLES: Record<keyof typeof TOKENS, string> = {
  root: 'admin',
  olive: 'operator',
  alice: 'approver',
  bob: 'approver',
  vera: 'viewer',
};

/** `#rrggbb` as the computed style writes it. */
function rgb(hex: string): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgb(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255})`;
}

interface AgentsAnswer {
  agents: {
    name: string;
    skills: {
      id: string;
      effectiveRadius: BlastRadius | null;
      pendingRadius: BlastRadius | null;
    }[];
  }[];
}
interface WorldAnswer {
  domains: Record<string, { state: { data: Record<string, unknown> } }>;
}

async function dispatchFromPage(
  page: Page,
  agent: string,
  skill: string,
  text: string,
): Promise<string> {
  await page.click('a[data-view=dispatches]');
  await page.selectOption('select[name=agent]', agent);
  await page.selectOption('select[name=skill]', skill);
  await page.fill('input[name=text]', text);
  // Before sending, the form shows what the gate would decide.
  const preview = page.locator(`[data-preview="${agent}"] [data-preview-decision]`);
  expect(await preview.getAttribute('data-preview-decision')).toBe('gated');
  expect(await preview.textContent()).toBe('waits for 1 approver');
  await page.click('form.dispatch-form button[type=submit]');
  const decision = page.locator('.decision');
  await decision.waitFor();
  expect(await decision.getAttribute('data-decision')).toBe('hold');
  return (await decision.getAttribute('data-dispatch-id'))!;
}

describe('the demo as npm start runs it', () => {
  let dir: string;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  const token = 'demo-admin-token-0123456789ab';

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-demo-'));
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--port', '0'],
      env: { FLEETGATE_TOKEN: token },
    });
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop('SIGTERM');
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('shows the demo fleet in colour, the deploy waiting and the effects of the first calls', async () => {
    expect(gw.stdout()).toContain(`Dashboard    ${gw.url}/`);
    // The URL as a generated-token demo prints it: the token rides in the fragment.
    const { page } = await browser.open(`${gw.url}/#token=${token}`);
    await page.waitForSelector('header.top');
    expect(await page.evaluate(() => location.hash)).toBe('#/fleet');
    for (const agent of ['ci', 'board', 'deployer']) {
      await page.locator(`tr[data-agent=${agent}] li.skill .radius`).first().waitFor();
    }
    const deploy = page.locator(
      'li.skill[data-agent=deployer][data-skill=production_deploy] .radius',
    );
    expect(await deploy.textContent()).toBe('public');
    expect(await deploy.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe(
      rgb(RADIUS_PALETTE.public.bg),
    );
    await page.locator('[data-pending-count]').waitFor();
    await page.click('a[data-view=effects]');
    // The demo's first CI re-run reported its deltas before the page opened: replayed on connect.
    await page.locator('tr.effect.delta', { hasText: 'data.reruns' }).first().waitFor();
    expect(await page.locator('[data-stream]').textContent()).toBe('live');
    await page.screenshot({ path: join(SHOTS, 'demo-effects.png'), fullPage: true });
  });
});

describe('dashboard in Chromium over the demo agents, with named tokens', () => {
  let dir: string;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  let page: Page;
  let agents: RunningAgent[];
  let cards: CardServer;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-'));
    agents = await startDemoAgents();
    cards = await startCardServer();
    cards.set('quinn', {
      type: 'card',
      card: cardWith(
        'quinn',
        { sitrep: 'self', deploy: 'public' },
        { hitl: { deploy: { mode: 'gated' } } },
      ),
    });
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        ...agents.map((a) => `  - { name: ${a.name}, url: ${a.url} }`),
        `  - { name: quinn, url: ${cards.urlOf('quinn')} }`,
        'policy:',
        '  approvalAtOrAbove: public',
        '  vetoAtOrAbove: fleet',
        '  vetoWindow: 30s',
        '  approvers: { fleet: 1, public: 1 }',
        '  sweepInterval: 1s',
        'auth:',
        '  tokens:',
        ...Object.keys(TOKENS).map(
          (name) =>
            `    - { name: ${name}, tokenEnv: DASH_${name.toUpperCase()}, roles: [${ROLES[name as keyof typeof TOKENS]}] }`,
        ),
      ].join('\n'),
    );
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--config', config],
      env: Object.fromEntries(
        Object.entries(TOKENS).map(([name, t]) => [`DASH_${name.toUpperCase()}`, t]),
      ),
    });
    browser = await launchBrowser();
    ({ page } = await browser.open(`${gw.url}/`));
    await signIn(page, TOKENS.olive);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop('SIGTERM');
    await Promise.all((agents ?? []).map((a) => a.close()));
    await cards?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('shows every demo skill with its radius as text in the palette the CLI uses', async () => {
    const { agents } = await getJson<AgentsAnswer>(gw.url, '/api/agents', TOKENS.root);
    const skills = agents.flatMap((a) => a.skills.map((s) => ({ agent: a.name, ...s })));
    expect(skills.length).toBeGreaterThanOrEqual(6);
    await page.waitForSelector('li.skill');
    for (const s of skills) {
      const badge = page.locator(`li.skill[data-agent="${s.agent}"][data-skill="${s.id}"] .radius`);
      const radius = s.effectiveRadius!;
      expect(radius).not.toBeNull();
      expect(await badge.textContent()).toBe(radius);
      const style = await badge.evaluate((el) => {
        const cs = getComputedStyle(el);
        return { bg: cs.backgroundColor, fg: cs.color };
      });
      expect(style).toEqual({
        bg: rgb(RADIUS_PALETTE[radius].bg),
        fg: rgb(RADIUS_PALETTE[radius].fg),
      });
      expect(
        contrastRatio(RADIUS_PALETTE[radius].fg, RADIUS_PALETTE[radius].bg),
      ).toBeGreaterThanOrEqual(4.5);
    }
    // The radius filter keeps only skills at or above the chosen radius.
    await page.selectOption('section select', 'fleet');
    const shown = await page.locator('li.skill .radius').allTextContents();
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.every((r) => r === 'fleet' || r === 'public')).toBe(true);
    await page.selectOption('section select', 'all');
    await page.screenshot({ path: join(SHOTS, 'fleet.png'), fullPage: true });
  });

  it('takes a gated dispatch from the page to the inbox live, completes it once approved, and tells a second approver it was decided', async () => {
    // Alice's inbox is open before the call exists: the request must arrive without a reload.
    const { context: aliceContext, page: alice } = await browser.open(`${gw.url}/`);
    await signIn(alice, TOKENS.alice);
    await alice.click('a[data-view=approvals]');
    await alice.locator('[data-stream=live]').waitFor();

    const before = await getJson<WorldAnswer>(gw.url, '/api/world', TOKENS.root);
    const deploys = (before.domains.deploy?.state.data.deploys as number | undefined) ?? 0;
    const id = await dispatchFromPage(page, 'deployer', 'production_deploy', 'ship 2.0.0');
    expect(await page.locator('.decision').textContent()).toContain('held for approval');
    await page.screenshot({ path: join(SHOTS, 'dispatch-form.png'), fullPage: true });

    const request = alice.locator(`li.request[data-dispatch="${id}"]`);
    await request.waitFor();
    expect(await request.locator('.radius').textContent()).toBe('public');
    expect(await request.locator('.countdown').textContent()).toMatch(/expires in (\d+h )?\d+m/);
    expect(await request.textContent()).toContain('ship 2.0.0');
    expect(
      Number(await alice.locator('[data-pending-count]').textContent()),
    ).toBeGreaterThanOrEqual(1);
    await alice.screenshot({ path: join(SHOTS, 'approvals.png'), fullPage: true });

    // Bob's page loaded the request but hears nothing live (its event stream never connects).
    const bobContext = await browser.browser.newContext();
    bobContext.setDefaultTimeout(10_000);
    const bob = await bobContext.newPage();
    await bob.route('**/api/events**', () => undefined);
    await bob.goto(`${gw.url}/`);
    await signIn(bob, TOKENS.bob);
    await bob.click('a[data-view=approvals]');
    await bob.locator(`li.request[data-dispatch="${id}"]`).waitFor();

    await request.locator('button.approve').click();
    await request.waitFor({ state: 'detached' });

    // The operator's page, never reloaded, follows the dispatch to its end.
    await page.click('a[data-view=dispatches]');
    const item = page.locator(`li.dispatch[data-dispatch="${id}"]`);
    await page.locator(`li.dispatch[data-dispatch="${id}"][data-status=completed]`).waitFor();
    await item.locator('summary').click();
    await item.locator('.timeline [data-step=deltas]').waitFor();
    const steps = await item.locator('.timeline .step').allTextContents();
    for (const step of ['gated', 'approved', 'started', 'deltas', 'completed'])
      expect(steps).toContain(step);
    await page.screenshot({ path: join(SHOTS, 'dispatches.png'), fullPage: true });

    await page.click('a[data-view=effects]');
    await page
      .locator('tr.effect.delta', { hasText: 'data.version' })
      .filter({ hasText: '2.0.0' })
      .first()
      .waitFor();
    await page.screenshot({ path: join(SHOTS, 'effects.png'), fullPage: true });

    await page.click('a[data-view=world]');
    const domain = page.locator('article.domain[data-domain=deploy]');
    const value = (path: string) => domain.locator(`tr[data-path="${path}"] .value`).textContent();
    await expect.poll(() => value('data.version'), { timeout: 10_000 }).toBe('2.0.0');
    await expect.poll(() => value('data.deploys'), { timeout: 10_000 }).toBe(String(deploys + 1));
    await domain.locator('.chart canvas').first().waitFor();
    await page.screenshot({ path: join(SHOTS, 'world.png'), fullPage: true });

    await bob.locator(`li.request[data-dispatch="${id}"] button.approve`).click();
    const said = bob.locator(`li.request[data-dispatch="${id}"] .error`);
    await said.waitFor();
    expect(await said.textContent()).toBe('Already decided by alice.');
    await bobContext.close();
    await aliceContext.close();
  }, 60_000);

  it('rejects with a reason: the dispatch shows it and the agent got no task', async () => {
    const before = await getJson<WorldAnswer>(gw.url, '/api/world', TOKENS.root);
    const id = await dispatchFromPage(page, 'deployer', 'production_deploy', 'ship 9.9.9');
    const { context, page: alice } = await browser.open(`${gw.url}/`);
    await signIn(alice, TOKENS.alice);
    await alice.click('a[data-view=approvals]');
    const request = alice.locator(`li.request[data-dispatch="${id}"]`);
    await request.locator('button.reject').click();
    await request.locator('input.reason').fill('freeze until Monday');
    await request.locator('button.reject').click();
    await request.waitFor({ state: 'detached' });

    // The operator's page shows the outcome and the reason.
    await page.click('a[data-view=dispatches]');
    const item = page.locator(`li.dispatch[data-dispatch="${id}"][data-status=rejected]`);
    await item.waitFor();
    expect(await item.locator('.reason').textContent()).toContain('freeze until Monday');
    const record = await getJson<{ status: string; taskId: string | null }>(
      gw.url,
      `/api/dispatches/${id}`,
      TOKENS.root,
    );
    // No task: no message reached the agent, and its domain did not move.
    expect(record).toMatchObject({ status: 'rejected', taskId: null });
    const after = await getJson<WorldAnswer>(gw.url, '/api/world', TOKENS.root);
    expect(after.domains.deploy?.state.data).toEqual(before.domains.deploy?.state.data);

    await alice.click('button[role=tab]:has-text("History")');
    const history = alice.locator('table.history tr', { hasText: 'freeze until Monday' });
    await history.waitFor();
    expect(await history.locator('.badge.outcome-rejected').textContent()).toBe(
      'rejected by alice',
    );
    expect(await history.textContent()).toContain('alice');
    await alice.screenshot({ path: join(SHOTS, 'approvals-history.png'), fullPage: true });
    await context.close();
  }, 60_000);

  it('shows a narrowing waiting for acknowledgement, and the Acknowledge button clears it', async () => {
    cards.set('quinn', {
      type: 'card',
      card: cardWith(
        'quinn',
        { sitrep: 'self', deploy: 'self' },
        { hitl: { deploy: { mode: 'gated' } } },
      ),
    });
    const { context, page: root } = await browser.open(`${gw.url}/`);
    await signIn(root, TOKENS.root);
    await getJson(gw.url, '/api/agents/quinn/refresh', TOKENS.root, {});
    const skill = root.locator('li.skill[data-agent=quinn][data-skill=deploy]');
    // The page hears of the refresh live.
    await skill.locator('.badge.ack').waitFor();
    expect(await skill.locator('.radius').textContent()).toBe('public');
    expect(await skill.locator('.badge.ack').textContent()).toContain('narrowed to self');
    await root.screenshot({ path: join(SHOTS, 'fleet-narrowing.png'), fullPage: true });
    await skill.locator('button', { hasText: 'Acknowledge' }).click();
    await skill.locator('.badge.ack').waitFor({ state: 'detached' });
    expect(await skill.locator('.radius').textContent()).toBe('self');
    const { agents } = await getJson<AgentsAnswer>(gw.url, '/api/agents', TOKENS.root);
    const deploy = agents.find((a) => a.name === 'quinn')!.skills.find((s) => s.id === 'deploy')!;
    expect(deploy).toMatchObject({ effectiveRadius: 'self', pendingRadius: null });
    await context.close();
  }, 60_000);

  it('snoozes a request out of the inbox without rejecting it', async () => {
    const record = await getJson<{ id: string }>(gw.url, '/api/dispatch', TOKENS.olive, {
      agent: 'deployer',
      skill: 'production_deploy',
      text: 'ship 4.0.0',
    });
    const { context, page: alice } = await browser.open(`${gw.url}/#/approvals`);
    await signIn(alice, TOKENS.alice);
    const request = alice.locator(`li.request[data-dispatch="${record.id}"]`);
    await request.locator('button', { hasText: 'Snooze' }).click();
    await request.waitFor({ state: 'detached' });
    await alice.locator('label', { hasText: 'show snoozed' }).locator('input').check();
    expect(await request.locator('.badge', { hasText: 'snoozed until' }).count()).toBe(1);
    const dispatch = await getJson<{ status: string }>(
      gw.url,
      `/api/dispatches/${record.id}`,
      TOKENS.root,
    );
    expect(dispatch.status).toBe('awaiting-approval');
    await context.close();
  });

  it('reconnects the live stream with Last-Event-ID and shows what happened while it was cut', async () => {
    // The page reaches the gateway through a TCP proxy the test can cut.
    const target = new URL(gw.url);
    const sockets = new Set<Socket>();
    let refusing = false;
    const proxy = createServer((client) => {
      if (refusing) return void client.destroy();
      const upstream = connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const via = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const { context, page: watcher } = await browser.open(`${via}/#/effects`);
    const asked: (string | undefined)[] = [];
    watcher.on('request', (r) => {
      if (r.url().includes('/api/events')) asked.push(r.headers()['last-event-id']);
    });
    await signIn(watcher, TOKENS.vera);
    await watcher.locator('[data-stream=live]').waitFor();
    // One event seen live gives the page a position to resume from.
    await getJson(gw.url, '/api/dispatch?wait=10s', TOKENS.olive, {
      agent: 'ci',
      skill: 'rerun_checks',
      text: 'PR 4241',
    });
    await watcher
      .locator('tr.effect.delta', { hasText: 'data.lastRun' })
      .filter({ hasText: '4241' })
      .first()
      .waitFor();
    refusing = true;
    for (const s of sockets) s.destroy();
    await watcher.locator('[data-stream=reconnecting]').waitFor();
    // Happens while the page is cut off.
    const record = await getJson<{ taskId: string }>(
      gw.url,
      '/api/dispatch?wait=10s',
      TOKENS.olive,
      {
        agent: 'ci',
        skill: 'rerun_checks',
        text: 'PR 4242',
      },
    );
    refusing = false;
    await watcher.locator('[data-stream=live]').waitFor();
    const row = watcher
      .locator('tr.effect.delta', { hasText: 'data.lastRun' })
      .filter({ hasText: '4242' });
    await row.first().waitFor();
    expect(await row.first().locator('a').getAttribute('href')).toContain(record.taskId);
    // The first request asked for the retained window; the reconnect resumed from a position.
    expect(asked[0]).toBe('window');
    expect(asked.length).toBeGreaterThanOrEqual(2);
    expect(asked.at(-1)).toMatch(/^[0-9a-f]{8}-\d+-\d+$/);
    await context.close();
    proxy.close();
    for (const s of sockets) s.destroy();
  }, 60_000);

  it('hides the controls a role may not use', async () => {
    const { context, page: vera } = await browser.open(`${gw.url}/`);
    await signIn(vera, TOKENS.vera);
    await vera.locator('li.skill').first().waitFor();
    expect(await vera.locator('header .who').textContent()).toContain('vera (viewer)');
    await getJson(gw.url, '/api/dispatch', TOKENS.olive, {
      agent: 'deployer',
      skill: 'production_deploy',
      text: 'ship 3.0.0',
    });
    await vera.click('a[data-view=approvals]');
    await vera.locator('li.request').first().waitFor();
    expect(await vera.locator('button.approve').count()).toBe(0);
    await vera.click('a[data-view=dispatches]');
    expect(await vera.locator('form.dispatch-form').count()).toBe(0);
    // The operator dispatches but may not approve; a wrong token is refused at login.
    await page.click('a[data-view=approvals]');
    await page.locator('li.request').first().waitFor();
    expect(await page.locator('button.approve').count()).toBe(0);
    const { context: other, page: stranger } = await browser.open(`${gw.url}/`);
    await stranger.fill('#token', 'not-a-token-of-this-gateway');
    await stranger.click('button[type=submit]');
    await stranger.locator('.login .error').waitFor();
    await other.close();
    await context.close();
  });

  it("reloads a signed-in tab as the same user and reads each view's snapshot once", async () => {
    // The earlier tests' calls have all reached the world: a change that lands during the reload
    // would be news, rightly read again.
    let before = '';
    for (let quiet = 0, end = Date.now() + 20_000; quiet < 2 && Date.now() < end;) {
      const world = await getJson<{ domains: Record<string, { version: number }> }>(
        gw.url,
        '/api/world',
        TOKENS.vera,
      );
      const now = JSON.stringify(Object.entries(world.domains).map(([d, v]) => [d, v.version]));
      quiet = now === before ? quiet + 1 : 0;
      before = now;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const { context, page: tab } = await browser.open(`${gw.url}/`);
    await signIn(tab, TOKENS.vera);
    await tab.locator('li.skill').first().waitFor();
    const asked: string[] = [];
    tab.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/api/')) asked.push(url.pathname);
    });
    // The world snapshot answers after the stream's replay came (as on a loaded machine): events
    // that came before it are compared with it once it is in, not taken as news.
    await tab.route('**/api/world', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 700));
      await route.continue();
    });
    await tab.reload();
    await tab.locator('li.skill').first().waitFor();
    expect(await tab.locator('header .who').textContent()).toContain('vera (viewer)');
    await tab.locator('[data-stream=live]').waitFor();
    // The stream's first connection replays recent events after a gap notice: that replay is
    // history the snapshots already hold, not a reason to read them again. Give a reload it
    // would start (150 ms after the events) time to show.
    await tab.waitForTimeout(1500);
    // (Fleet events replayed here may be newer than the fleet's snapshot: those reload it.)
    expect(asked.filter((p) => p === '/api/world')).toEqual(['/api/world']);
    expect(asked.filter((p) => p === '/api/session')).toEqual(['/api/session']);
    await context.close();
  });

  it('fits a phone screen', async () => {
    const { context, page: phone } = await browser.open(`${gw.url}/`, { width: 390, height: 844 });
    await signIn(phone, TOKENS.root);
    await phone.waitForSelector('li.skill');
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await phone.screenshot({ path: join(SHOTS, 'fleet-phone.png'), fullPage: true });
    await context.close();
  });
});
