/**
 * `npm run docs:screenshots`: regenerates the screenshots `docs/dashboard.md` shows. Runs the demo
 * as `npm start` does (a child process, its own working directory), makes a few calls so every
 * view has something to show, and saves each view from headless Chromium into `docs/images/`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDashboardBuilt, launchBrowser, signIn } from './browser.js';
import { getJson } from './api-json.js';
import { startServiceProcess } from './gateway-service.js';

const OUT = fileURLToPath(new URL('../../docs/images/', import.meta.url));
const TOKEN = 'docs-admin-token-0123456789ab';

mkdirSync(OUT, { recursive: true });
ensureDashboardBuilt();
const dir = mkdtempSync(join(tmpdir(), 'fleetgate-docs-'));
const gw = await startServiceProcess({
  cwd: dir,
  args: ['--port', '0'],
  env: { FLEETGATE_TOKEN: TOKEN },
});
const browser = await launchBrowser();
try {
  const { page } = await browser.open(`${gw.url}/`, { width: 1280, height: 760 });
  await signIn(page, TOKEN);
  for (const [agent, skill, text] of [
    ['ci', 'rerun_checks', 'PR 128'],
    ['board', 'triage', 'new issues'],
    ['ci', 'rerun_checks', 'PR 131'],
    ['ci', 'sitrep', 'status'],
    ['board', 'triage', 'new issues'],
    ['ci', 'rerun_checks', 'PR 133'],
  ] as const) {
    await getJson(gw.url, '/api/dispatch?wait=10s', TOKEN, { agent, skill, text });
  }
  /** Notifications in the corner are dismissed before a picture is taken. */
  const quiet = async (): Promise<void> => {
    await page.evaluate(() => {
      const store = (window as unknown as { fleetgate: { toasts: unknown[]; changed(): void } })
        .fleetgate;
      store.toasts = [];
      store.changed();
    });
    await page.waitForTimeout(50);
  };
  const shot = async (view: string, name: string): Promise<void> => {
    await page.click(`a[data-view=${view}]`);
    await page.waitForTimeout(700);
    await quiet();
    await page.screenshot({ path: join(OUT, `dashboard-${name}.png`) });
    process.stderr.write(`docs/images/dashboard-${name}.png\n`);
  };
  // A veto window next to the waiting deploy in the inbox.
  await getJson(gw.url, '/api/dispatch', TOKEN, {
    agent: 'deployer',
    skill: 'rollback',
    text: 'roll back 1.5.0',
  });
  await shot('fleet', 'fleet');
  await shot('approvals', 'approvals');
  await shot('effects', 'effects');
  await shot('world', 'world');
  await page.click('a[data-view=dispatches]');
  await page.selectOption('select[name=agent]', 'deployer');
  await page.selectOption('select[name=skill]', 'production_deploy');
  await page.fill('input[name=text]', 'ship 1.6.0');
  await page.click('form.dispatch-form button[type=submit]');
  await page.locator('.decision').waitFor();
  await page.locator('li.dispatch').first().locator('summary').click();
  await shot('dispatches', 'dispatches');
  const at = async (hash: string, name: string, ready: string): Promise<void> => {
    await page.evaluate((h) => (location.hash = h), hash);
    await page.locator(ready).first().waitFor();
    await page.waitForTimeout(500);
    await quiet();
    await page.screenshot({ path: join(OUT, `dashboard-${name}.png`), fullPage: true });
    process.stderr.write(`docs/images/dashboard-${name}.png\n`);
  };
  // A call that ran to its end, on its own page.
  const done = await getJson<{ id: string }>(gw.url, '/api/dispatch?wait=10s', TOKEN, {
    agent: 'ci',
    skill: 'rerun_checks',
    text: 'PR 140',
  });
  await at(`#/calls/${done.id}`, 'call', 'section.call [data-step=world]');
  const { approvals } = await getJson<{ approvals: { id: string; kind: string }[] }>(
    gw.url,
    '/api/approvals?status=pending',
    TOKEN,
  );
  const gated = approvals.find((a) => a.kind === 'dispatch');
  if (gated !== undefined) {
    await at(`#/approvals/${gated.id}`, 'approval', 'section.approval-detail');
  }
  await at('#/world', 'world-chart', '.chart canvas');
  await page.click('a[data-view=effects]');
  await page.click('button[data-tab=search]');
  await page.locator('[data-search=effects] tr.row').first().waitFor();
  await page.waitForTimeout(300);
  await quiet();
  await page.screenshot({ path: join(OUT, 'dashboard-search.png') });
  process.stderr.write('docs/images/dashboard-search.png\n');
  const { page: phone } = await browser.open(`${gw.url}/`, { width: 390, height: 844 });
  await signIn(phone, TOKEN);
  await phone.locator('li.skill').first().waitFor();
  await phone.screenshot({ path: join(OUT, 'dashboard-phone.png') });
  process.stderr.write('docs/images/dashboard-phone.png\n');
} finally {
  await browser.close();
  await gw.stop('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
