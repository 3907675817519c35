/**
 * The dashboard's layout with the values agents really send, in real Chromium against
 * `fleetgate start` run as a child process: the demo fleet plus an agent with a 128-character skill
 * id whose calls report a 3,000-character string, a long object and a long answer.
 * - every view keeps the window's width: long values wrap or scroll inside their card, cell or
 *   column (world domains do not overlap; the call page's story does not grow past the window);
 * - the long skill id is shown whole, and a toast about it keeps its dismiss button on screen;
 * - a phone (375 px) fits the call page and the approval page of the demo's ordinary calls.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, textPart, type RunningAgent } from '../examples/agents/index.js';
import { startDemoAgents } from '../examples/demo/index.js';
import { declare, skillList, type DemoSkill } from '../examples/demo/declare.js';
import { getJson } from './support/api-json.js';
import {
  ensureDashboardBuilt,
  launchBrowser,
  signIn,
  type RunningBrowser,
} from './support/browser.js';
import { startServiceProcess, type ServiceProcess } from './support/gateway-service.js';

const SHOTS = join(import.meta.dirname, '..', 'test-results', 'dashboard');
const TOKEN = 'root-admin-token-0123456789';
/** A skill id as long as a card may make it. */
const LONG_SKILL = `very_long_skill_name_${'abcdefghij'.repeat(10)}abcdefg`;
const LONG_VALUE = 'L'.repeat(3000);

const WIDE_SKILLS: Readonly<Record<string, DemoSkill>> = {
  [LONG_SKILL]: { radius: 'self', mode: 'autonomous', domains: [], description: 'a long id' },
  report: {
    radius: 'repo',
    mode: 'notification',
    domains: ['wide'],
    description: 'reports long values',
  },
};

interface Dispatched {
  id: string;
  status: string;
}

/**
 * How far the page is wider than the window (0 when it fits), and the first elements that stick
 * out past its right edge (outside a box that scrolls), for the failure's message.
 */
async function overflow(page: Page): Promise<{ by: number; culprits: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const culprits = Array.from(document.querySelectorAll('body *'))
      .filter(
        (e) => e.getBoundingClientRect().right > width + 1 && e.closest('.table-wrap') === null,
      )
      .slice(0, 5)
      .map(
        (e) =>
          `${e.tagName.toLowerCase()}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`,
      );
    return { by: document.documentElement.scrollWidth - width, culprits };
  });
}

describe('the dashboard with long values', () => {
  let dir: string;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  let agents: RunningAgent[];
  let report: Dispatched;
  let rerun: Dispatched;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-layout-'));
    const wide = await startAgent({
      name: 'wide',
      description: `An agent with long values. ${'lorem ipsum '.repeat(30)}`,
      skills: skillList(WIDE_SKILLS),
      declare: declare(WIDE_SKILLS),
      behaviour: (call) => ({
        delayMs: 50,
        artifacts: [[textPart(`Answer for ${call.text}: ${'x'.repeat(600)}`)]],
        ...(call.skill === 'report'
          ? {
              deltas: [
                { domain: 'wide', path: 'data.long', op: 'set', value: LONG_VALUE },
                {
                  domain: 'wide',
                  path: 'data.object',
                  op: 'set',
                  value: { [`key_${'k'.repeat(200)}`]: 'v'.repeat(400), list: [LONG_VALUE] },
                },
                { domain: 'wide', path: 'data.count', op: 'inc', value: 1 },
              ],
            }
          : {}),
      }),
    });
    agents = [...(await startDemoAgents()), wide];
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
        '  approvers: { public: 1 }',
        'auth:',
        '  tokens:',
        '    - { name: root, tokenEnv: DASH_ROOT, roles: [admin] }',
      ].join('\n'),
    );
    gw = await startServiceProcess({
      cwd: dir,
      args: ['--config', config],
      env: { DASH_ROOT: TOKEN },
    });
    browser = await launchBrowser();
    report = await getJson<Dispatched>(gw.url, '/api/dispatch?wait=10s', TOKEN, {
      agent: 'wide',
      skill: 'report',
      text: `report ${'y'.repeat(500)}`,
    });
    expect(report.status).toBe('completed');
    rerun = await getJson<Dispatched>(gw.url, '/api/dispatch?wait=10s', TOKEN, {
      agent: 'ci',
      skill: 'rerun_checks',
      text: 'PR 219',
    });
    expect(rerun.status).toBe('completed');
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop('SIGTERM');
    await Promise.all((agents ?? []).map((a) => a.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the world view as wide as the window, each domain in its own box', async () => {
    const { context, page } = await browser.open(`${gw.url}/#/world`);
    await signIn(page, TOKEN);
    const domain = page.locator('article.domain[data-domain=wide]');
    await domain.locator('tr[data-path="data.long"] .value').waitFor();
    expect(await overflow(page)).toEqual({ by: 0, culprits: [] });
    const boxes = await page
      .locator('article.domain')
      .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON() as DOMRect));
    expect(boxes.length).toBeGreaterThanOrEqual(2);
    for (const b of boxes) expect(b.right).toBeLessThanOrEqual(1280);
    // No two domains overlap.
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const apart =
          a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
        expect(apart).toBe(true);
      }
    }
    // The long value wraps inside its cell: all of it is there.
    expect(await domain.locator('tr[data-path="data.long"] .value').textContent()).toBe(LONG_VALUE);
    await page.screenshot({ path: join(SHOTS, 'layout-world.png') });
    await context.close();
  });

  it("keeps a call's story as wide as the window; wide tables scroll in their own box", async () => {
    for (const width of [1280, 375]) {
      const { context, page } = await browser.open(`${gw.url}/#/calls/${report.id}`, {
        width,
        height: 800,
      });
      await signIn(page, TOKEN);
      await page.locator('[data-step=world] tr[data-path="data.long"]').waitFor();
      expect(await overflow(page), `call page at ${width} px`).toEqual({ by: 0, culprits: [] });
      const story = await page
        .locator('ol.story')
        .evaluate((el) => el.getBoundingClientRect().right);
      expect(story).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(SHOTS, `layout-call-${width}.png`) });
      await context.close();
    }
  });

  it('shows a 128-character skill id whole, and a toast about it keeps its dismiss button on screen', async () => {
    const { context, page } = await browser.open(`${gw.url}/`);
    await signIn(page, TOKEN);
    const id = page.locator(`li.skill[data-skill="${LONG_SKILL}"] .skill-id`);
    await id.waitFor();
    // Not cut off by the table's box: wrapped inside it.
    const fits = await id.evaluate((el) => {
      const wrap = el.closest('.table-wrap')!.getBoundingClientRect();
      const r = el.getBoundingClientRect();
      return r.right <= wrap.right && el.scrollWidth <= el.clientWidth;
    });
    expect(fits).toBe(true);
    expect(await overflow(page)).toEqual({ by: 0, culprits: [] });
    await page.locator('[data-stream=live]').waitFor();
    await getJson(gw.url, '/api/dispatch?wait=10s', TOKEN, {
      agent: 'wide',
      skill: LONG_SKILL,
      text: 'hello',
    });
    const toast = page.locator('.toast', { hasText: LONG_SKILL }).first();
    await toast.waitFor();
    const dismiss = await toast
      .locator('button[aria-label=Dismiss]')
      .evaluate((el) => el.getBoundingClientRect().toJSON() as DOMRect);
    expect(dismiss.left).toBeGreaterThanOrEqual(0);
    expect(dismiss.right).toBeLessThanOrEqual(1280);
    await toast.locator('button[aria-label=Dismiss]').click();
    await toast.waitFor({ state: 'detached' });
    await context.close();
  });

  it("fits a 375 px phone on every view and on the demo's call and approval pages", async () => {
    const held = await getJson<Dispatched>(gw.url, '/api/dispatch', TOKEN, {
      agent: 'deployer',
      skill: 'production_deploy',
      text: 'ship 5.0.0',
    });
    const { approvals } = await getJson<{ approvals: { id: string; dispatchId: string }[] }>(
      gw.url,
      '/api/approvals?status=pending',
      TOKEN,
    );
    const approval = approvals.find((a) => a.dispatchId === held.id)!.id;
    const { context, page } = await browser.open(`${gw.url}/`, { width: 375, height: 740 });
    await signIn(page, TOKEN);
    const pages: [string, string][] = [
      ['#/fleet', 'li.skill'],
      ['#/approvals', 'li.request'],
      ['#/effects', 'section'],
      ['#/world', 'article.domain'],
      ['#/dispatches', 'section'],
      [`#/calls/${rerun.id}`, '[data-step=world] table'],
      [`#/calls/${report.id}`, '[data-step=world] table'],
      [`#/approvals/${approval}`, 'section.approval-detail'],
    ];
    for (const [hash, ready] of pages) {
      await page.evaluate((h) => (location.hash = h), hash);
      await page.locator(ready).first().waitFor();
      expect(await overflow(page), `${hash} at 375 px`).toEqual({ by: 0, culprits: [] });
    }
    await page.evaluate((h) => (location.hash = h), `#/calls/${rerun.id}`);
    await page.locator('[data-step=world] table').waitFor();
    await page.screenshot({ path: join(SHOTS, 'layout-call-phone.png'), fullPage: true });
    await context.close();
  });
});
