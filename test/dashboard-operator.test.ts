/**
 * The dashboard as an operator's tool, in real Chromium against `fleetgate start` run as a child
 * process over the demo fleet's agents with named tokens:
 * - the call page follows a gated call live from request to world change (gate reasons, who
 *   approved, what was sent, the task, deltas, values before and after, cost), reached from a
 *   toast, a dispatch row, an approval and an effect row;
 * - a veto window worded and styled as a veto ("runs in … unless vetoed", a Veto button, no
 *   snooze), and approval history with who and when;
 * - server-side search and paging with counts;
 * - a refused token or a restarted gateway takes the page back to sign-in, saying why;
 * - world charts with a time range and a per-path history naming the call of each change.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentPlan, RunningAgent } from '../examples/agents/index.js';
import { opsBehaviour, startOpsAgent } from '../examples/agents/index.js';
import { startDemoAgents } from '../examples/demo/index.js';
import { getJson } from './support/api-json.js';
import {
  ensureDashboardBuilt,
  launchBrowser,
  signIn,
  type RunningBrowser,
} from './support/browser.js';
import { api, startServiceProcess, type ServiceProcess } from './support/gateway-service.js';

const SHOTS = join(import.meta.dirname, '..', 'test-results', 'dashboard');
const TOKENS = {
  root: 'root-admin-token-0123456789',
  olive: 'olive-operator-token-012345',
  alice: 'alice-approver-token-012345',
  vera: 'vera-viewer-token-012345678',
} as const;
const ROLES: Record<keyof typeof TOKENS, string> = {
  root: 'admin',
  olive: 'operator',
  alice: 'approver',
  vera: 'viewer',
};

interface Dispatched {
  id: string;
  status: string;
  taskId: string | null;
}

async function dispatch(
  base: string,
  agent: string,
  skill: string,
  text: string,
): Promise<Dispatched> {
  return getJson<Dispatched>(base, '/api/dispatch', TOKENS.olive, { agent, skill, text });
}

/** A port nobody listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function stepTitles(page: Page): Promise<string[]> {
  return page.locator('ol.story > li strong').allTextContents();
}

describe('the dashboard as an operator tool', () => {
  let dir: string;
  let config: string;
  let gw: ServiceProcess;
  let browser: RunningBrowser;
  let page: Page;
  let agents: RunningAgent[];
  /** Calls to `ops` whose text is `hold` keep working at the agent until the suite ends. */
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));

  const env = Object.fromEntries(
    Object.entries(TOKENS).map(([name, t]) => [`DASH_${name.toUpperCase()}`, t]),
  );

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-op-'));
    const ops = await startOpsAgent({
      behaviour: async (call): Promise<AgentPlan> => ({
        ...(await opsBehaviour(call)),
        ...(call.text === 'hold' ? { hold: held } : {}),
      }),
    });
    agents = [...(await startDemoAgents()), ops];
    config = join(dir, 'fleetgate.yaml');
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
    gw = await startServiceProcess({ cwd: dir, args: ['--config', config], env });
    browser = await launchBrowser();
    ({ page } = await browser.open(`${gw.url}/`));
    await signIn(page, TOKENS.olive);
    await page.locator('[data-stream=live]').waitFor();
  }, 90_000);

  afterAll(async () => {
    release();
    await browser?.close();
    await gw?.stop('SIGTERM');
    await Promise.all((agents ?? []).map((a) => a.close()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('follows a gated call live on its page, from the request to the world values it changed', async () => {
    const before = await getJson<{
      domains: Record<string, { state: { data: { deploys?: number } } }>;
    }>(gw.url, '/api/world', TOKENS.root);
    const deploys = before.domains.deploy?.state.data.deploys ?? 0;
    const call = await dispatch(gw.url, 'deployer', 'production_deploy', 'ship 3.1.0');
    expect(call.status).toBe('awaiting-approval');

    // The toast of the held call leads to its page.
    const toast = page.locator(`.toast a[data-dispatch="${call.id}"]`).first();
    await toast.waitFor();
    await toast.click();
    expect(await page.evaluate(() => location.hash)).toBe(`#/calls/${call.id}`);
    const story = page.locator(`section.call[data-call="${call.id}"]`);
    await story.waitFor();
    expect(await story.getAttribute('data-status')).toBe('awaiting-approval');
    const gate = story.locator('[data-step=gate]');
    expect(await gate.locator('strong').textContent()).toBe('gate: held (gated)');
    expect(await gate.locator('.radius').textContent()).toBe('public');
    const reasons = await gate.locator('.reasons li code').allTextContents();
    expect(reasons).toEqual(expect.arrayContaining(['declared-radius', 'threshold']));
    expect(await story.locator('[data-step=held] strong').textContent()).toBe(
      'held for approval: 1 approver needed',
    );
    expect(await story.locator('[data-step=sent]').count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'call-held.png'), fullPage: true });

    // Alice approves elsewhere: the page, never reloaded, follows the call to its end.
    const approvalId = (
      await getJson<{ approvals: { id: string; dispatchId: string }[] }>(
        gw.url,
        '/api/approvals?status=pending',
        TOKENS.alice,
      )
    ).approvals.find((a) => a.dispatchId === call.id)!.id;
    await getJson(gw.url, `/api/approvals/${approvalId}/approve`, TOKENS.alice, {
      reason: 'release train',
    });
    await page.locator(`section.call[data-call="${call.id}"][data-status=completed]`).waitFor();
    await story.locator('[data-step=world] table tr[data-path="data.deploys"]').waitFor();
    const titles = await stepTitles(page);
    const kinds = await story
      .locator('ol.story > li')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-step')));
    // In the order of the call's life.
    const order = [
      'requested',
      'gate',
      'held',
      'decided-consumed',
      'sent',
      'task',
      'deltas',
      'world',
    ];
    const at = order.map((k) => kinds.indexOf(k));
    expect(
      at.every((i) => i >= 0),
      `steps ${kinds.join(', ')}`,
    ).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(kinds).toContain('ended-completed');
    expect(titles).toContain('approved by alice');
    expect(titles.some((t) => /^approved \(decided by alice\) and used$/.test(t))).toBe(true);
    expect(titles).toContain('sent to deployer');
    expect(titles.some((t) => t.startsWith('task completed'))).toBe(true);
    const sent = story.locator('[data-step=sent] .stamps');
    expect(await sent.textContent()).toMatch(/messageId.+contextId.+by gateway/);
    const row = story.locator('[data-step=world] tr[data-path="data.deploys"]');
    expect(await row.locator('[data-before]').textContent()).toBe(
      deploys === 0 ? 'null' : String(deploys),
    );
    expect(await row.locator('[data-after]').textContent()).toBe(String(deploys + 1));
    const version = story.locator('[data-step=world] tr[data-path="data.version"] [data-after]');
    expect(await version.textContent()).toBe('"3.1.0"');
    await page.screenshot({ path: join(SHOTS, 'call.png'), fullPage: true });

    // The same page from a dispatch row, and from an effect row (which knows only the task).
    const record = await getJson<Dispatched>(gw.url, `/api/dispatches/${call.id}`, TOKENS.vera);
    await page.goto(`${gw.url}/#/effects`);
    await page
      .locator('tr.effect.delta', { hasText: 'data.version' })
      .filter({ hasText: '3.1.0' })
      .locator('a[data-call-link]')
      .first()
      .click();
    await page.waitForURL(`**/#/calls/${call.id}`);
    await page.locator(`section.call[data-call="${call.id}"]`).waitFor();
    expect(record.taskId).not.toBeNull();
  }, 60_000);

  it('cancels a held call from its page: a second click with a reason, the page follows it to rejected', async () => {
    const call = await dispatch(gw.url, 'deployer', 'production_deploy', 'ship 3.1.1');
    expect(call.status).toBe('awaiting-approval');
    await page.evaluate((id) => (location.hash = `#/calls/${id}`), call.id);
    const story = page.locator(
      `section.call[data-call="${call.id}"][data-status=awaiting-approval]`,
    );
    await story.waitFor();
    await story.locator('[data-cancel] button', { hasText: 'Cancel call…' }).click();
    expect(await story.locator('[data-cancel]').textContent()).toContain(
      'its approval is rejected and nothing reaches the agent',
    );
    await story.getByLabel('reason for cancelling').fill('wrong train');
    await story.locator('[data-cancel] button', { hasText: 'Cancel it' }).click();
    const ended = page.locator(`section.call[data-call="${call.id}"][data-status=rejected]`);
    await ended.waitFor();
    await ended.locator('[data-step=decided-rejected]').waitFor();
    expect(await ended.locator('[data-step=decided-rejected] strong').textContent()).toBe(
      'rejected by olive',
    );
    // Nothing is left to cancel on an ended call.
    expect(await ended.locator('[data-cancel]').count()).toBe(0);
  });

  it('cancels a call running at the agent from its page: who asked and why are on its story and its end', async () => {
    const call = await dispatch(gw.url, 'ops', 'sitrep', 'hold');
    expect(call.status).toBe('running');
    await page.evaluate((id) => (location.hash = `#/calls/${id}`), call.id);
    const story = page.locator(`section.call[data-call="${call.id}"][data-status=running]`);
    await story.waitFor();
    await story.locator('[data-cancel] button', { hasText: 'Cancel call…' }).click();
    await story.getByLabel('reason for cancelling').fill('wrong branch');
    await story.locator('[data-cancel] button', { hasText: 'Cancel it' }).click();
    const ended = page.locator(`section.call[data-call="${call.id}"][data-status=canceled]`);
    await ended.waitFor();
    const asked = ended.locator('[data-step=cancel-requested]');
    await asked.waitFor();
    expect(await asked.locator('strong').textContent()).toBe('cancel requested by olive');
    expect(await asked.textContent()).toContain('wrong branch');
    expect(await ended.locator('[data-step=ended-canceled]').textContent()).toContain(
      'FLEETGATE_DISPATCH_CANCELED Canceled by olive: wrong branch',
    );
  });

  it('words a veto window as a veto: runs unless vetoed, a Veto button, no snooze; history says who and when', async () => {
    const { context, page: alice } = await browser.open(`${gw.url}/#/approvals`);
    await signIn(alice, TOKENS.alice);
    const call = await dispatch(gw.url, 'deployer', 'rollback', 'roll back 3.1.0');
    expect(call.status).toBe('awaiting-approval');
    const card = alice.locator(`li.request[data-dispatch="${call.id}"]`);
    await card.waitFor();
    expect(await card.getAttribute('data-kind')).toBe('veto');
    expect(await card.locator('[data-countdown]').textContent()).toMatch(
      /^runs in ([12]?\d|30) s unless vetoed$/,
    );
    expect(await card.locator('.badge.mode').textContent()).toBe('veto window');
    // Styled apart from approvals: its own border colour.
    expect(await card.evaluate((el) => getComputedStyle(el).borderLeftColor)).toBe(
      'rgb(180, 83, 9)',
    );
    expect(await card.locator('button', { hasText: 'Snooze' }).count()).toBe(0);
    expect(await card.locator('button.approve').count()).toBe(0);
    await alice.screenshot({ path: join(SHOTS, 'approvals-veto.png'), fullPage: true });
    await card.locator('button.veto-button').click();
    expect(await card.locator('button.veto-button').textContent()).toBe('Confirm veto');
    await card.locator('input.reason').fill('3.1.0 is fine');
    await card.locator('button.veto-button').click();
    await card.waitFor({ state: 'detached' });

    await alice.click('button[role=tab]:has-text("History")');
    const row = alice.locator(`table.history tr[data-approval]`, { hasText: 'rollback' }).first();
    await row.waitFor();
    expect(await row.locator('.badge').last().textContent()).toBe('vetoed by alice');
    expect(await row.locator('[data-decided-by]').textContent()).toBe('alice');
    expect(await row.locator('[data-decided-at]').textContent()).not.toBe('—');
    expect(await row.textContent()).toContain('3.1.0 is fine');
    // The call page says the same.
    await row.locator('a[data-call-link]').click();
    const story = alice.locator(`section.call[data-call="${call.id}"][data-status=rejected]`);
    await story.waitFor();
    const titles = await story.locator('ol.story > li strong').allTextContents();
    expect(titles.some((t) => /^veto window opened: runs at .+ unless vetoed$/.test(t))).toBe(true);
    expect(titles).toContain('vetoed by alice');
    expect(await story.locator('[data-step=sent]').count()).toBe(0);
    await context.close();
  }, 60_000);

  it('shows an approval with the exact call it is bound to and what the skill changed before', async () => {
    const call = await dispatch(gw.url, 'deployer', 'production_deploy', 'ship 3.2.0');
    const { approvals } = await getJson<{
      approvals: { id: string; dispatchId: string; fingerprint: string }[];
    }>(gw.url, '/api/approvals?status=pending', TOKENS.alice);
    const approval = approvals.find((a) => a.dispatchId === call.id)!;
    const { context, page: alice } = await browser.open(`${gw.url}/`);
    await signIn(alice, TOKENS.alice);
    await alice.click('a[data-view=approvals]');
    await alice.locator(`li.request[data-dispatch="${call.id}"] a[data-approval-link]`).click();
    const detail = alice.locator(`section.approval-detail[data-approval="${approval.id}"]`);
    await detail.waitFor();
    expect(await detail.locator('[data-fingerprint]').textContent()).toBe(approval.fingerprint);
    expect(approval.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(await detail.locator('[data-domains]').textContent()).toBe('deploy');
    expect(await detail.locator('.input').textContent()).toContain('ship 3.2.0');
    expect(await detail.locator('[data-countdown]').textContent()).toMatch(/^expires in /);
    // The first test's deploy: what it changed, with the call that made each change.
    const last = detail.locator('table.last-changes tr[data-path="data.version"]').first();
    await last.waitFor();
    expect(await last.textContent()).toContain('"3.1.0"');
    await alice.screenshot({ path: join(SHOTS, 'approval-detail.png'), fullPage: true });
    await detail.locator('button.approve').click();
    await detail.locator('[data-decided]').waitFor();
    expect(await detail.locator('[data-vote=alice]').textContent()).toMatch(
      /^approved by alice at /,
    );
    await last.locator('a').click();
    await alice.locator('section.call').waitFor();
    await context.close();
  }, 60_000);

  it('charts world values on a time axis with hover values and a time range, and lists every change of a path with its call', async () => {
    // Two deploys have changed data.deploys: the first test's, and the 3.2.0 one approved above
    // (which runs on after its approval; the chart is read once it has landed).
    await expect
      .poll(
        async () =>
          (
            await getJson<{ domains: Record<string, { state: { data: { version?: string } } }> }>(
              gw.url,
              '/api/world',
              TOKENS.root,
            )
          ).domains.deploy?.state.data.version,
        { timeout: 20_000 },
      )
      .toBe('3.2.0');
    const { context, page: vera } = await browser.open(`${gw.url}/`);
    await signIn(vera, TOKENS.vera);
    await vera.click('a[data-view=world]');
    const domain = vera.locator('article.domain[data-domain=deploy]');
    const chart = domain.locator('.chart[aria-label="history of data.deploys"]');
    await chart.locator('canvas').waitFor();
    expect(await vera.locator('.range-picker [aria-checked=true]').textContent()).toBe('1h');
    // Each range asks the audit log from its start; "all" from the beginning. (A change to the
    // domain meanwhile asks again for the range shown: the request awaited is the 15-minute one.)
    const sinceOf = (url: string): number => Number(new URL(url).searchParams.get('since'));
    const asked = vera.waitForRequest(
      (r) =>
        /\/api\/world\/deploy\/history\?.*since=\d+/.test(r.url()) &&
        Math.abs(Date.now() - 15 * 60_000 - sinceOf(r.url())) < 30_000,
    );
    await vera.click('.range-picker [data-range="15m"]');
    const since = sinceOf((await asked).url());
    expect(Math.abs(Date.now() - 15 * 60_000 - since)).toBeLessThan(30_000);
    const all = vera.waitForRequest(
      (r) => r.url().includes('/api/world/deploy/history?') && !r.url().includes('since='),
    );
    await vera.click('.range-picker [data-range="all"]');
    await all;
    await expect.poll(() => chart.getAttribute('data-points')).not.toBe('0');
    expect(Number(await chart.getAttribute('data-points'))).toBeGreaterThanOrEqual(2);
    // Hovering the plot shows the time and the value under the cursor.
    const over = chart.locator('.u-over');
    // The plot is laid out once its data is in: wait for it to have a box.
    await expect.poll(() => over.boundingBox()).not.toBeNull();
    const box = (await over.boundingBox())!;
    await vera.mouse.move(box.x + box.width - 3, box.y + box.height / 2);
    const values = chart.locator('.u-legend .u-value');
    await expect.poll(async () => (await values.allTextContents())[1] ?? '').toMatch(/^\d+$/);
    expect((await values.allTextContents())[0]).toMatch(/\d{1,2}:\d{2}:\d{2}/);
    await vera.screenshot({ path: join(SHOTS, 'world-chart.png'), fullPage: true });

    // A path's whole history, each change with the call that made it.
    await domain.locator('tr[data-path="data.version"] th a').click();
    const history = vera.locator('[data-history-path="data.version"]');
    await history.locator('tbody tr').first().waitFor();
    const afters = await history.locator('tbody tr [data-after]').allTextContents();
    expect(afters.slice(0, 2)).toEqual(['"3.2.0"', '"3.1.0"']);
    await history.locator('tbody tr').first().locator('a[data-call-link]').click();
    const story = vera.locator('section.call');
    await story.waitFor();
    expect(
      await story
        .locator('[data-step=world] tr[data-path="data.version"] [data-after]')
        .textContent(),
    ).toBe('"3.2.0"');
    await context.close();
  }, 60_000);

  it('searches and pages dispatches, world changes and approval history on the server, with counts', async () => {
    // 150 quick calls: more than a page, for paging and the virtualised list.
    const made: string[] = [];
    for (let i = 0; i < 150; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, j) => dispatch(gw.url, 'ci', 'sitrep', `report ${i + j}`)),
      );
      made.push(...batch.map((d) => d.id));
    }
    await dispatch(gw.url, 'ci', 'rerun_checks', 'PR 4711');
    type SearchPage<T> = { items: T[]; next: string | null; total: number | null };
    const search = <T>(path: string) => getJson<SearchPage<T>>(gw.url, path, TOKENS.vera);
    await expect
      .poll(
        async () =>
          (
            await search<{ id: string }>(
              '/api/search/dispatches?skill=sitrep&status=completed&limit=1',
            )
          ).total,
        { timeout: 20_000 },
      )
      .toBe(150);
    // Pages follow one another without a gap or a repeat, newest first.
    const first = await search<{ id: string; createdAt: number }>(
      '/api/search/dispatches?agent=ci&skill=sitrep&limit=100',
    );
    expect(first.total).toBe(150);
    expect(first.items).toHaveLength(100);
    const second = await search<{ id: string; createdAt: number }>(
      `/api/search/dispatches?agent=ci&skill=sitrep&limit=100&count=false&cursor=${encodeURIComponent(first.next!)}`,
    );
    expect(second.total).toBeNull();
    expect(second.next).toBeNull();
    const ids = [...first.items, ...second.items].map((d) => d.id);
    expect(new Set(ids).size).toBe(150);
    expect(new Set(ids)).toEqual(new Set(made));
    const times = [...first.items, ...second.items].map((d) => d.createdAt);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    // Radius and domain select skills from the fleet; text looks into the result too.
    const self = await search<{ skill: string; radius: string }>(
      '/api/search/dispatches?radius=self&limit=500',
    );
    expect(self.items.every((d) => d.skill === 'sitrep' && d.radius === 'self')).toBe(true);
    const deploy = await search<{ agent: string }>('/api/search/dispatches?domain=deploy');
    expect(deploy.total).toBeGreaterThanOrEqual(3);
    expect(deploy.items.every((d) => d.agent === 'deployer')).toBe(true);
    await expect
      .poll(
        async () =>
          (await search<{ skill: string }>('/api/search/dispatches?text=pr%204711')).items.map(
            (d) => d.skill,
          ),
        { timeout: 10_000 },
      )
      .toEqual(['rerun_checks']);
    const versions = await search<{ path: string; previous: unknown; next: unknown }>(
      '/api/search/effects?domain=deploy&path=data.version',
    );
    expect(versions.items.map((r) => r.next)).toContain('3.2.0');
    expect(versions.items.find((r) => r.next === '3.2.0')!.previous).toBe('3.1.0');
    const vetoed = await search<{ skill: string; decidedBy: string }>(
      '/api/search/approvals?status=rejected&by=alice&kind=veto',
    );
    expect(vetoed.items.map((a) => a.skill)).toEqual(['rollback']);
    expect(vetoed.total).toBe(1);
    const bad = await api<{ error: { code: string; details: unknown } }>(
      gw.url,
      '/api/search/dispatches?cursor=nonsense',
      { token: TOKENS.vera },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');

    // The page: counts, filters that ask the server, a list that renders what is in view only.
    const { context, page: vera } = await browser.open(`${gw.url}/`);
    await signIn(vera, TOKENS.vera);
    await vera.click('a[data-view=dispatches]');
    const list = vera.locator('[data-search=dispatches]');
    await list.locator('select[name=agent]').selectOption('ci');
    await list.locator('select[name=skill]').selectOption('sitrep');
    await expect.poll(() => list.locator('[data-total]').getAttribute('data-total')).toBe('150');
    expect(await list.locator('.count-line').textContent()).toBe(
      '150 dispatches match · 100 loaded',
    );
    const rendered = await list.locator('tbody tr.row').count();
    expect(rendered).toBeGreaterThan(5);
    expect(rendered).toBeLessThan(60);
    // Scrolling to the end loads the next page.
    await list.locator('.virtual').evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await expect.poll(() => list.locator('.virtual').getAttribute('data-rows')).toBe('150');
    await list.locator('select[name=skill]').selectOption('');
    await list.locator('input[name=text]').fill('PR 4711');
    await expect.poll(() => list.locator('[data-total]').getAttribute('data-total')).toBe('1');
    expect(await list.locator('tbody tr.row').getAttribute('data-status')).toBe('completed');
    await vera.screenshot({ path: join(SHOTS, 'dispatches-search.png'), fullPage: true });

    await vera.click('a[data-view=effects]');
    await vera.click('button[data-tab=search]');
    const changes = vera.locator('[data-search=effects]');
    await changes.locator('select[name=domain]').selectOption('deploy');
    await changes.locator('input[name=text]').fill('3.2.0');
    await changes.locator('tr.row[data-path="data.version"]').first().waitFor();
    expect(
      await changes.locator('tr.row[data-path="data.version"]').first().textContent(),
    ).toContain('"3.1.0" → "3.2.0"');
    await vera.screenshot({ path: join(SHOTS, 'effects-search.png'), fullPage: true });

    await vera.click('a[data-view=approvals]');
    await vera.click('button[role=tab]:has-text("History")');
    const history = vera.locator('[data-search=approvals]');
    await history.locator('select[name=kind]').selectOption('veto');
    await expect.poll(() => history.locator('[data-total]').getAttribute('data-total')).toBe('1');
    expect(await history.locator('tr.row .badge').last().textContent()).toBe('vetoed by alice');
    await context.close();
  }, 90_000);

  it('takes the page back to sign-in, saying why, when the gateway restarts or refuses the token; the strip shows version and uptime', async () => {
    const port = await freePort();
    const home = mkdtempSync(join(tmpdir(), 'fleetgate-dashboard-restart-'));
    const file = join(home, 'fleetgate.yaml');
    writeFileSync(
      file,
      [
        `listen: { host: 127.0.0.1, port: ${port} }`,
        `store: sqlite:${join(home, 'fleetgate.db')}`,
        'agents:',
        ...agents.map((a) => `  - { name: ${a.name}, url: ${a.url} }`),
        'auth:',
        '  tokens:',
        '    - { name: vera, tokenEnv: DASH_VERA, roles: [viewer] }',
      ].join('\n'),
    );
    const run = (token: string) =>
      startServiceProcess({ cwd: home, args: ['--config', file], env: { DASH_VERA: token } });
    let second = await run(TOKENS.vera);
    try {
      const { context, page: p } = await browser.open(`${second.url}/`);
      await signIn(p, TOKENS.vera);
      await p.locator('[data-stream=live]').waitFor();
      const version = p.locator('[data-gateway-version]');
      await expect.poll(() => version.getAttribute('data-gateway-version')).toBe('0.1.0');
      expect(await version.textContent()).toMatch(/^0\.1\.0 · up \d+s$/);
      await p.click('a[data-view=fleet]');

      // The same tokens, another gateway process: back to sign-in, saying the gateway restarted.
      await second.stop('SIGTERM');
      second = await run(TOKENS.vera);
      const said = p.locator('main.login .error');
      await said.waitFor({ timeout: 20_000 });
      expect(await said.textContent()).toMatch(/^Signed out: the gateway restarted/);
      expect(await p.locator('header.top').count()).toBe(0);
      expect(await p.evaluate(() => sessionStorage.getItem('fleetgate.token'))).toBeNull();

      // Signed in again; the next gateway no longer knows the token: a 401, said as such.
      await signIn(p, TOKENS.vera);
      await p.locator('[data-stream=live]').waitFor();
      await second.stop('SIGTERM');
      second = await run('another-viewer-token-0123456');
      await said.waitFor({ timeout: 20_000 });
      expect(await said.textContent()).toMatch(
        /^Signed out: the gateway no longer accepts this token/,
      );
      await p.screenshot({ path: join(SHOTS, 'signed-out.png') });
      await context.close();
    } finally {
      await second.stop('SIGTERM');
      rmSync(home, { recursive: true, force: true });
    }
  }, 90_000);

  it('answers the story of an unknown call with 404 and a code', async () => {
    const answer = await api<{ error: { code: string } }>(
      gw.url,
      '/api/dispatches/no-such-call/story',
      { token: TOKENS.vera },
    );
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('FLEETGATE_DISPATCH_NOT_FOUND');
    const task = await api<{ error: { code: string } }>(
      gw.url,
      '/api/agents/ci/tasks/no-such-task/dispatch',
      { token: TOKENS.vera },
    );
    expect(task.status).toBe(404);
    const missing = await browser.open(`${gw.url}/`);
    await signIn(missing.page, TOKENS.vera);
    await missing.page.goto(`${gw.url}/#/calls/no-such-call`);
    const said = missing.page.locator('section.call .error');
    await said.waitFor();
    expect(await said.textContent()).toContain('FLEETGATE_DISPATCH_NOT_FOUND');
    await missing.context.close();
  });
});
