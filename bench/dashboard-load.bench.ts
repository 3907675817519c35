/**
 * `dashboard-load`: the dashboard in headless Chromium against `fleetgate start` (a child process)
 * over 200 agents × 10 skills (cards served by this process) and one real SDK agent reporting
 * deltas.
 * - `first_render_ms`: from navigation to the fleet view showing all 2,000 skill cells coloured by
 *   radius (session check, `/api/agents`, render), median of 7 loads after one warm-up.
 * - `rows_per_s`: delta rows rendered in the live effects view per second while 100 dispatches
 *   each report 20 deltas (the gateway runs the calls, lifts the deltas and streams them over
 *   SSE; the page renders them); `dropped_rows` counts rows that never arrived.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpsAgent, textPart } from '../examples/agents/index.js';
import {
  BLAST_RADII,
  BLAST_V1_URI,
  HITL_MODE_V1_URI,
  HITL_MODES,
  createWorldStateDeltaPart,
} from '../src/protocol/index.js';
import { ensureDashboardBuilt, launchBrowser } from '../test/support/browser.js';
import { getJson } from '../test/support/api-json.js';
import { startServiceProcess } from '../test/support/gateway-service.js';
import { seedLargeStore } from './dashboard-load-store.js';
import { note, percentile, report } from './report.js';

const BENCH = 'dashboard-load';
const AGENTS = 200;
const SKILLS = 10;
const LOADS = 7;
const TASKS = 100;
const DELTAS_PER_TASK = 20;
const TOKEN = 'bench-admin-token-0123456789';
/** The store the gateway starts on: a busy fleet's history. */
const STORE = { dispatches: 10_000, effects: 100_000, approvals: 1_000 };
/** Filtered queries timed from the filter's change to the rows on screen. */
const QUERIES: Record<string, string>[] = [
  { status: 'failed' },
  { agent: 'agent-7' },
  { radius: 'public' },
  { skill: 'skill_4', status: 'completed' },
  { text: 'report 777' },
];

function cardOf(i: number): string {
  const skills = Array.from({ length: SKILLS }, (_, k) => `skill_${k}`);
  return JSON.stringify({
    name: `agent-${i}`,
    description: `benchmark agent ${i}`,
    version: '1.0.0',
    capabilities: {
      extensions: [
        {
          uri: BLAST_V1_URI,
          params: {
            skills: Object.fromEntries(
              skills.map((s, k) => [s, { radius: BLAST_RADII[(i + k) % 5] }]),
            ),
          },
        },
        {
          uri: HITL_MODE_V1_URI,
          params: {
            skills: Object.fromEntries(
              skills.map((s, k) => [s, { mode: HITL_MODES[(i * 3 + k) % 5] }]),
            ),
          },
        },
      ],
    },
    skills: skills.map((id) => ({ id, name: id, description: id, tags: [] })),
  });
}

const cards = Array.from({ length: AGENTS }, (_, i) => cardOf(i));
const cardServer = createServer((req, res) => {
  const match = /^\/agents\/(\d+)\/\.well-known\/agent-card\.json$/.exec(req.url ?? '');
  const card = match === null ? undefined : cards[Number(match[1])];
  if (card === undefined) res.writeHead(404).end();
  else res.writeHead(200, { 'content-type': 'application/json' }).end(card);
});
await new Promise<void>((resolve) => cardServer.listen(0, '127.0.0.1', resolve));
const cardPort = (cardServer.address() as AddressInfo).port;

let task = 0;
const agent = await startOpsAgent({
  behaviour: () => {
    task += 1;
    const deltas = Array.from({ length: DELTAS_PER_TASK }, (_, k) => ({
      domain: 'board',
      path: `data.counter${k}`,
      op: 'set' as const,
      value: task,
    }));
    return { artifacts: [[textPart('ok'), createWorldStateDeltaPart(deltas)]] };
  },
});

const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-dashboard-'));
const config = join(dir, 'fleetgate.yaml');
writeFileSync(
  config,
  [
    'listen: { host: 127.0.0.1, port: 0 }',
    `store: sqlite:${join(dir, 'fleetgate.db')}`,
    'cards: { concurrency: 32 }',
    'events: { retain: 20000 }',
    'agents:',
    `  - { name: ops, url: ${agent.url} }`,
    ...Array.from(
      { length: AGENTS },
      (_, i) => `  - { name: agent-${i}, url: http://127.0.0.1:${cardPort}/agents/${i} }`,
    ),
    'auth:',
    '  tokens: [{ name: bench, tokenEnv: BENCH_TOKEN, roles: [admin] }]',
  ].join('\n'),
);

const seeding = performance.now();
await seedLargeStore(join(dir, 'fleetgate.db'), STORE, { agents: AGENTS, skills: SKILLS });
note(
  `store: ${STORE.dispatches} dispatches, ${STORE.effects} world changes, ${STORE.approvals} approvals (seeded in ${((performance.now() - seeding) / 1000).toFixed(1)} s)`,
);

ensureDashboardBuilt();
const gw = await startServiceProcess({
  cwd: dir,
  args: ['--config', config, '--log-level', 'warn'],
  env: { BENCH_TOKEN: TOKEN },
  timeoutMs: 90_000,
});
const browser = await launchBrowser();
try {
  const { agents } = await getJson<{ agents: { status: string; skills: unknown[] }[] }>(
    gw.url,
    '/api/agents',
    TOKEN,
  );
  const cells = agents.reduce((n, a) => n + a.skills.length, 0);
  note(`${agents.length} agents, ${cells} skill cells`);

  const context = await browser.browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(60_000);
  await context.addInitScript((token) => sessionStorage.setItem('fleetgate.token', token), TOKEN);
  const page = await context.newPage();
  const renders: number[] = [];
  const fetched: number[] = [];
  for (let i = 0; i <= LOADS; i += 1) {
    await page.goto(`${gw.url}/?load=${i}#/fleet`);
    await page.waitForFunction(
      (n) => document.querySelectorAll('li.skill .radius').length >= n,
      cells,
      { polling: 'raf' },
    );
    const { ms, api } = await page.evaluate(() => ({
      ms: performance.now(),
      api: performance
        .getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/agents'))
        .map((e) => (e as PerformanceResourceTiming).responseEnd)[0],
    }));
    if (i > 0) renders.push(ms);
    if (i > 0) fetched.push(api ?? Number.NaN);
  }
  renders.sort((a, b) => a - b);
  const median = renders[Math.floor(renders.length / 2)]!;
  note(`first render ${renders.map((r) => r.toFixed(0)).join(', ')} ms`);
  note(`of which /api/agents answered at ${fetched.map((r) => r.toFixed(0)).join(', ')} ms`);
  report({ bench: BENCH, metric: 'first_render_ms', value: median, unit: 'ms', target: '<=300' });

  // Search: a filter changed on the dispatches view, to the matching rows on screen (the gateway
  // filters, counts and pages); the same query asked straight from here is the baseline.
  await page.goto(`${gw.url}/#/dispatches`);
  const list = page.locator('[data-search=dispatches]');
  await page.waitForFunction(
    () => document.querySelector('[data-search=dispatches]')?.getAttribute('data-query') === '',
  );
  const searches: number[] = [];
  const direct: number[] = [];
  /** The query the list holds once `filters` are applied (the page's own parameter order). */
  const keyOf = (filters: Record<string, string>): string =>
    new URLSearchParams(
      ['agent', 'skill', 'radius', 'status', 'domain', 'text'].flatMap((k) =>
        filters[k] === undefined || filters[k] === '' ? [] : [[k, filters[k]]],
      ),
    ).toString();
  const shown = (q: string) =>
    page.waitForFunction(
      (query) => {
        const el = document.querySelector('[data-search=dispatches]');
        return (
          el?.getAttribute('data-query') === query &&
          (el.querySelector('tbody tr.row') !== null ||
            el.querySelector('[data-total]')?.getAttribute('data-total') === '0')
        );
      },
      q,
      { polling: 'raf' },
    );
  const change = async (name: string, value: string): Promise<void> => {
    if (name === 'text') {
      await list.locator('input[name=text]').fill(value);
      await list.locator('input[name=text]').press('Enter');
    } else {
      await list.locator(`select[name=${name}]`).selectOption(value);
    }
  };
  for (const query of QUERIES) {
    const entries = Object.entries(query);
    const applied: Record<string, string> = {};
    // Every filter but the last untimed, each waited for; the last one is the timed search.
    for (const [name, value] of entries.slice(0, -1)) {
      applied[name] = value;
      await change(name, value);
      await shown(keyOf(applied));
    }
    const [lastName, lastValue] = entries.at(-1)!;
    applied[lastName] = lastValue;
    const key = keyOf(applied);
    const t0 = performance.now();
    await change(lastName, lastValue);
    await shown(key);
    searches.push(performance.now() - t0);
    const d0 = performance.now();
    await getJson(gw.url, `/api/search/dispatches?${key}&limit=100`, TOKEN);
    direct.push(performance.now() - d0);
    const total = await list.locator('[data-total]').getAttribute('data-total');
    note(
      `search ${key}: ${total ?? '?'} match, ${searches.at(-1)!.toFixed(0)} ms to rows on screen, ${direct.at(-1)!.toFixed(0)} ms from the API alone`,
    );
    // Back to no filter for the next query.
    for (const [name] of entries) {
      delete applied[name];
      await change(name, '');
      await shown(keyOf(applied));
    }
  }
  const searchMs = percentile(searches, 50);
  const apiMs = percentile(direct, 50);
  report({ bench: BENCH, metric: 'search_ms', value: searchMs, unit: 'ms', target: '<=150' });
  report({ bench: BENCH, metric: 'search_api_ms', value: apiMs, unit: 'ms' });
  report({ bench: BENCH, metric: 'search_page_over_api', value: searchMs / apiMs, unit: 'ratio' });

  await page.goto(`${gw.url}/#/effects`);
  await page.locator('[data-stream=live]').waitFor();
  const base = await page.evaluate(
    () => (window as unknown as { fleetgate: { effectCount: number } }).fleetgate.effectCount,
  );
  const expected = base + TASKS * DELTAS_PER_TASK;
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < TASKS) {
      next += 1;
      await getJson(gw.url, '/api/dispatch', TOKEN, { agent: 'ops', skill: 'sitrep', text: 'go' });
    }
  };
  const sent = Promise.all(Array.from({ length: 8 }, () => worker()));
  const rendered = page.waitForFunction(
    (n) => {
      const row = document.querySelector('tr.effect[data-key]');
      return row !== null && Number(row.getAttribute('data-key')) >= n;
    },
    expected,
    { polling: 'raf', timeout: 60_000 },
  );
  await sent;
  let dropped = 0;
  try {
    await rendered;
  } catch {
    const got = await page.evaluate(
      () => (window as unknown as { fleetgate: { effectCount: number } }).fleetgate.effectCount,
    );
    dropped = expected - got;
  }
  const seconds = (performance.now() - started) / 1000;
  const rows = TASKS * DELTAS_PER_TASK - dropped;
  note(`${rows} rows in ${seconds.toFixed(2)} s`);
  report({
    bench: BENCH,
    metric: 'rows_per_s',
    value: rows / seconds,
    unit: '1/s',
    target: '>=1000',
  });
  report({ bench: BENCH, metric: 'dropped_rows', value: dropped, unit: 'rows', target: '==0' });
  await context.close();
} finally {
  await browser.close();
  await gw.stop('SIGTERM');
  await agent.close();
  cardServer.close();
  rmSync(dir, { recursive: true, force: true });
}
