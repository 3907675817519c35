/**
 * The approvals inbox as a link and a count, in real Chromium against `fleetgate start` run as a
 * child process over the demo fleet's agents, with named tokens and two approvers per public call:
 * - the link the A2A proxy used to give (`#/approvals?id=<id>`) lands on its request (in view,
 *   focused, highlighted), snoozed or not, through sign-in; an unknown or decided one is said so,
 *   on the inbox and on the approval's own page (`#/approvals/<id>`, the link it gives now);
 * - the Approvals count, the tab's title and the metrics strip count what the inbox counts as
 *   pending (not snoozed requests);
 * - an approver who said yes to a request that needs two is not offered Approve again, and a
 *   second yes from a stale page is worded as such, not as "already decided".
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startDemoAgents } from '../examples/demo/index.js';
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
  root: 'root-admin-token-0123456789',
  olive: 'olive-operator-token-012345',
  alice: 'alice-approver-token-012345',
  bob: 'bob-approver-token-01234567',
} as const;
const ROLES: Record<keyof typeof TOKENS, string> = {
  root: 'admin',
  olive: 'operator',
  alice: 'approver',
  bob: 'approver',
};

interface Pending {
  id: string;
  dispatchId: string;
  snoozedUntil: number | null;
}

/** Whether the element's box is inside the viewport. */
function inView(page: Page, selector: string): Promise<boolean> {
  return page.locator(selector).evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= innerHeight;
  });
}

describe('approval links and counts in the dashboard', () => {
  let dir: string;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  let agents: RunningAgent[];

  /** Holds a production deploy (public: two approvers) and returns its approval id. */
  async function hold(text: string, token: string = TOKENS.olive): Promise<string> {
    const call = await getJson<{ id: string; status: string }>(gw.url, '/api/dispatch', token, {
      agent: 'deployer',
      skill: 'production_deploy',
      text,
    });
    expect(call.status).toBe('awaiting-approval');
    const { approvals } = await getJson<{ approvals: Pending[] }>(
      gw.url,
      '/api/approvals?status=pending&snoozed=true',
      TOKENS.root,
    );
    return approvals.find((a) => a.dispatchId === call.id)!.id;
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-links-'));
    agents = await startDemoAgents();
    const config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${join(dir, 'fleetgate.db')}`,
        'agents:',
        ...agents.map((a) => `  - { name: ${a.name}, url: ${a.url} }`),
        'policy:',
        '  approvalAtOrAbove: public',
        '  vetoAtOrAbove: fleet',
        '  vetoWindow: 30s',
        '  approvers: { fleet: 1, public: 2 }',
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
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop('SIGTERM');
    await Promise.all((agents ?? []).map((a) => a.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("lands on the request of the proxy's link through sign-in: in view, focused, highlighted, snoozed or not", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1) ids.push(await hold(`ship 7.0.${i}`));
    // The inbox is oldest first: the last one is far below the fold of a 600 px window.
    const target = ids.at(-1)!;
    const snoozed = ids.at(-2)!;
    await getJson(gw.url, `/api/approvals/${snoozed}/snooze`, TOKENS.alice, { for: '30m' });

    // A tab that is not signed in follows the link, signs in, and is where the link pointed.
    const { context, page } = await browser.open(`${gw.url}/#/approvals?id=${target}`, {
      height: 600,
    });
    await signIn(page, TOKENS.alice);
    expect(await page.evaluate(() => location.hash)).toBe(`#/approvals?id=${target}`);
    const card = `li.request[data-approval="${target}"]`;
    await page.locator(`${card}[data-focused]`).waitFor();
    expect(await page.locator(card).getAttribute('class')).toContain('focused');
    await expect.poll(() => inView(page, card)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-approval'))).toBe(
      target,
    );
    expect(await page.locator(card).evaluate((el) => getComputedStyle(el).borderTopColor)).toBe(
      'rgb(29, 78, 216)',
    );
    await page.screenshot({ path: join(SHOTS, 'approvals-link.png') });

    // A snoozed request is hidden from the inbox, but not from a link to it.
    await page.evaluate((id) => (location.hash = `#/approvals?id=${id}`), snoozed);
    const hidden = page.locator(`li.request[data-approval="${snoozed}"][data-focused]`);
    await hidden.waitFor();
    expect(await hidden.locator('.badge', { hasText: 'snoozed until' }).count()).toBe(1);
    await expect.poll(() => inView(page, `li.request[data-approval="${snoozed}"]`)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-approval'))).toBe(
      snoozed,
    );
    await context.close();

    // The link the proxy gives now (the approval's own page) is kept through sign-in too.
    const other = await browser.open(`${gw.url}/#/approvals/${target}`);
    await signIn(other.page, TOKENS.bob);
    await other.page.locator(`section.approval-detail[data-approval="${target}"]`).waitFor();
    expect(await other.page.evaluate(() => location.hash)).toBe(`#/approvals/${target}`);
    await other.context.close();
  }, 90_000);

  it('says so when the link names an unknown or an already decided request, on the inbox and on its page', async () => {
    const decided = await hold('ship 7.1.0');
    await getJson(gw.url, `/api/approvals/${decided}/reject`, TOKENS.bob, {
      reason: 'not on a Friday',
    });
    const unknown = '01900000-0000-7000-8000-000000000000';
    const { context, page } = await browser.open(`${gw.url}/`);
    await signIn(page, TOKENS.alice);

    await page.evaluate((id) => (location.hash = `#/approvals?id=${id}`), unknown);
    const missing = page.locator('[data-target=missing]');
    await missing.waitFor();
    expect(await missing.textContent()).toContain(`No approval request ${unknown} on this gateway`);

    await page.evaluate((id) => (location.hash = `#/approvals?id=${id}`), decided);
    const said = page.locator('[data-target=decided]');
    await said.waitFor();
    expect(await said.textContent()).toContain('is already decided');
    expect(await said.locator('.badge').textContent()).toBe('rejected by bob');

    // The approval's own page, the link the proxy gives now.
    await page.evaluate((id) => (location.hash = `#/approvals/${id}`), unknown);
    await page.locator('section.approval-detail [data-target=missing]').waitFor();
    await page.evaluate((id) => (location.hash = `#/approvals/${id}`), decided);
    const decidedPage = page.locator(`section.approval-detail[data-approval="${decided}"]`);
    await decidedPage.locator('[data-target=decided]').waitFor();
    expect(await decidedPage.locator('[data-target=decided]').textContent()).toContain(
      'Already decided: rejected by bob',
    );
    await context.close();
  }, 60_000);

  it('counts in the Approvals badge, the title and the strip what the inbox counts as pending', async () => {
    await hold('ship 7.2.0');
    await hold('ship 7.2.1');
    const snoozed = await hold('ship 7.2.2');
    await getJson(gw.url, `/api/approvals/${snoozed}/snooze`, TOKENS.alice, { for: '30m' });
    const { context, page } = await browser.open(`${gw.url}/#/approvals`);
    await signIn(page, TOKENS.alice);
    await page.locator('[data-stream=live]').waitFor();
    await page.locator('li.request').first().waitFor();

    const counts = async (): Promise<{
      inbox: number;
      shown: number;
      badge: number;
      title: number;
      strip: number;
    }> =>
      page.evaluate(() => {
        const tab = document.querySelector('button[role=tab]')?.textContent ?? '';
        const strip = Array.from(document.querySelectorAll('.pending-radii .radius'))
          .map((b) => Number(/(\d+)$/.exec(b.textContent ?? '')?.[1] ?? 0))
          .reduce((x, y) => x + y, 0);
        return {
          inbox: Number(/\((\d+)\)/.exec(tab)?.[1] ?? -1),
          shown: document.querySelectorAll('ul.inbox > li.request').length,
          badge: Number(document.querySelector('[data-pending-count]')?.textContent ?? 0),
          title: Number(/^\((\d+)\)/.exec(document.title)?.[1] ?? 0),
          strip,
        };
      });
    const { approvals } = await getJson<{ approvals: Pending[] }>(
      gw.url,
      '/api/approvals?status=pending&snoozed=true',
      TOKENS.root,
    );
    const awake = approvals.filter((a) => (a.snoozedUntil ?? 0) <= Date.now()).length;
    expect(approvals.length).toBeGreaterThan(awake);
    const n = awake;
    await expect.poll(counts).toEqual({ inbox: n, shown: n, badge: n, title: n, strip: n });

    // Snoozing one from the page takes it out of every count at once.
    await page.locator('li.request button', { hasText: 'Snooze' }).first().click();
    await expect
      .poll(counts)
      .toEqual({ inbox: n - 1, shown: n - 1, badge: n - 1, title: n - 1, strip: n - 1 });
    await context.close();
  }, 60_000);

  it('does not offer Approve again to an approver who said yes, and words a second yes as such', async () => {
    const id = await hold('ship 7.3.0');
    // Alice's second tab loaded the request but hears nothing live (its stream never connects).
    const stale = await browser.browser.newContext();
    stale.setDefaultTimeout(10_000);
    const old = await stale.newPage();
    await old.route('**/api/events**', () => undefined);
    await old.goto(`${gw.url}/#/approvals`);
    await signIn(old, TOKENS.alice);
    await old.locator(`li.request[data-approval="${id}"] button.approve`).waitFor();

    const { context, page } = await browser.open(`${gw.url}/#/approvals`);
    await signIn(page, TOKENS.alice);
    const card = page.locator(`li.request[data-approval="${id}"]`);
    await card.locator('button.approve').click();
    await card.locator('[data-voted]').waitFor();
    expect(await card.locator('[data-voted]').textContent()).toBe(
      'You approved; it waits for 1 more approver.',
    );
    expect(await card.locator('button.approve').count()).toBe(0);
    expect(await card.locator('.badge', { hasText: 'approvals' }).textContent()).toBe(
      '1/2 approvals',
    );
    // Nothing is decided yet: the stale tab's yes is refused as a second yes, not as a decision.
    await old.locator(`li.request[data-approval="${id}"] button.approve`).click();
    const said = old.locator(`li.request[data-approval="${id}"] .error`);
    await said.waitFor();
    expect(await said.textContent()).toMatch(/^You already approved this request\./);
    expect(await said.textContent()).not.toContain('Already decided');
    await stale.close();

    // Bob still may, and his yes decides it.
    const { context: bobs, page: bob } = await browser.open(`${gw.url}/#/approvals?id=${id}`);
    await signIn(bob, TOKENS.bob);
    await bob.locator(`li.request[data-approval="${id}"] button.approve`).click();
    await bob.locator('[data-target=decided]').waitFor();
    await bobs.close();

    // The one who asked for a call is not offered Approve either (the gateway refuses it).
    const own = await hold('ship 7.3.1', TOKENS.root);
    const { context: roots, page: root } = await browser.open(`${gw.url}/#/approvals?id=${own}`);
    await signIn(root, TOKENS.root);
    const mine = root.locator(`li.request[data-approval="${own}"]`);
    await mine.locator('[data-own-call]').waitFor();
    expect(await mine.locator('button.approve').count()).toBe(0);
    await roots.close();
    await context.close();
  }, 60_000);
});
