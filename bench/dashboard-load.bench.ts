/**
 * `dashboard-load`: the dashboard in headless Chromium against `fleetgate start` (a child process)
 * over 200 agents × 10 skills (cards served by this process), on a store seeded with a busy
 * fleet's history.
 * - `first_render_ms`: from navigation to the fleet view's first screen drawn (every agent row
 *   from the top to below the window's bottom edge, its skill cells coloured by radius), median
 *   of 7 reloads of a signed-in tab after one warm-up; baseline: when `/api/agents` answered in
 *   the same loads (`agents_api_ms`). `full_render_ms`: all 2,000 skill cells on the page.
 * - `search_ms`: a filter changed on the dispatches view to the matching rows on screen; baseline:
 *   the same query asked of the API straight from here.
 * - `rows_per_s`: delta rows rendered per second in the live effects view while this process
 *   writes `world.state.delta` events into the gateway's outbox at a fixed rate (`rows_fed_per_s`,
 *   above the target); the gateway's relay publishes them on its bus, its materialiser applies
 *   them and `/api/events` streams them. The feed, not the gateway's dispatch path, sets the pace.
 *   `dropped_rows`: rows that never reached the page; `dropped_frames`: frames missed (gaps between
 *   `requestAnimationFrame` callbacks beyond one frame interval) while the rows streamed, against
 *   `dropped_frames_idle`, the same page measured as long without a feed, and
 *   `dropped_frames_paused`, the same feed with the view paused (the table not changing); `row_lag_p95_ms`: an
 *   event's time to its row on screen.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
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
/** The live feed: events per second, delta rows per event, for how long. */
const FEED_EVENTS_PER_S = 100;
const DELTAS_PER_EVENT = 20;
const FEED_SECONDS = 5;
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
    const deltas = Array.from({ length: DELTAS_PER_EVENT }, (_, k) => ({
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
// Stopped whatever happens next, a browser that fails to start included.
let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
try {
  browser = await launchBrowser();
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
  const screens: number[] = [];
  const fulls: number[] = [];
  const fetched: number[] = [];
  for (let i = 0; i <= LOADS; i += 1) {
    await page.goto(`${gw.url}/?load=${i}#/fleet`);
    // The first screen: rows from the top down past the window's bottom edge, cells coloured.
    await page.waitForFunction(
      () => {
        const rows = document.querySelectorAll('table.fleet tbody tr[data-agent]');
        const last = rows[rows.length - 1];
        return (
          last !== undefined &&
          last.querySelector('li.skill .radius') !== null &&
          (last.getBoundingClientRect().top >= innerHeight ||
            rows.length ===
              Number(
                document.querySelector('[data-fleet-total]')?.getAttribute('data-fleet-total'),
              ))
        );
      },
      undefined,
      { polling: 'raf' },
    );
    const screen = await page.evaluate(() => performance.now());
    await page.waitForFunction(
      (n) => document.querySelectorAll('li.skill .radius').length >= n,
      cells,
      { polling: 'raf' },
    );
    const { full, api } = await page.evaluate(() => ({
      full: performance.now(),
      api: performance
        .getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/agents'))
        .map((e) => (e as PerformanceResourceTiming).responseEnd)[0],
    }));
    if (i === 0) continue;
    screens.push(screen);
    fulls.push(full);
    fetched.push(api ?? Number.NaN);
  }
  const firstRender = percentile(screens, 50);
  const agentsApi = percentile(fetched, 50);
  note(`first screen ${screens.map((r) => r.toFixed(0)).join(', ')} ms`);
  note(`all ${cells} cells ${fulls.map((r) => r.toFixed(0)).join(', ')} ms`);
  note(`/api/agents answered at ${fetched.map((r) => r.toFixed(0)).join(', ')} ms`);
  report({
    bench: BENCH,
    metric: 'first_render_ms',
    value: firstRender,
    unit: 'ms',
    target: '<=300',
  });
  report({ bench: BENCH, metric: 'agents_api_ms', value: agentsApi, unit: 'ms' });
  report({
    bench: BENCH,
    metric: 'first_render_over_api',
    value: firstRender / agentsApi,
    unit: 'ratio',
  });
  report({ bench: BENCH, metric: 'full_render_ms', value: percentile(fulls, 50), unit: 'ms' });

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
  // Frames, as the page sees them: each callback's time, the newest row on screen and its lag.
  // A script string: the loader's helpers (`__name`) do not exist in the page.
  const watch = (): Promise<void> =>
    page.evaluate(`(() => {
      window.frames_ = [];
      window.watching_ = true;
      const tick = (t) => {
        const row = document.querySelector('tr.effect[data-key]');
        const key = row === null ? 0 : Number(row.getAttribute('data-key'));
        const at = window.fleetgate.effects.find((r) => r.key === key)?.at;
        window.frames_.push({ t, key, lag: at === undefined ? Number.NaN : Date.now() - at });
        if (window.watching_) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    })()`);
  const unwatch = (): Promise<{ t: number; key: number; lag: number }[]> =>
    page.evaluate(`(() => {
      window.watching_ = false;
      return window.frames_;
    })()`);
  /** Frames missed: each gap between callbacks counts the whole intervals it skipped. */
  const missed = (frames: { t: number }[], interval: number): number =>
    frames
      .slice(1)
      .reduce((n, f, i) => n + Math.max(0, Math.round((f.t - frames[i]!.t) / interval) - 1), 0);

  // Baseline: the same page, as long, with nothing arriving.
  await watch();
  await new Promise((r) => setTimeout(r, FEED_SECONDS * 1000));
  const idle = await unwatch();
  const gaps = idle
    .slice(1)
    .map((f, i) => f.t - idle[i]!.t)
    .sort((a, b) => a - b);
  const interval = gaps[Math.floor(gaps.length / 2)] ?? 1000 / 60;
  const idleDropped = missed(idle, interval);
  note(`idle: ${idle.length} frames, interval ${interval.toFixed(1)} ms, ${idleDropped} missed`);

  const total = FEED_EVENTS_PER_S * FEED_SECONDS;
  // The feed: events written into the gateway's outbox, as its own writers do, on a schedule.
  const db = new Database(join(dir, 'fleetgate.db'));
  db.pragma('busy_timeout = 5000');
  const insert = db.prepare(
    `insert into fleetgate_outbox (id, topic, payload, correlation_id, time, created_at, sent_at,
      last_error) values (?, 'world.state.delta', ?, ?, ?, ?, null, null)`,
  );
  const write = db.transaction((round: string, from: number, to: number) => {
    const now = Date.now();
    const time = new Date(now).toISOString();
    for (let i = from; i < to; i += 1) {
      const deltas = Array.from({ length: DELTAS_PER_EVENT }, (_, k) => ({
        domain: 'board',
        path: `data.feed${k}`,
        op: 'set',
        value: i,
      }));
      insert.run(
        `bench-${round}-${i}`,
        JSON.stringify({ source: 'ops', skill: 'sitrep', taskId: `${round}-${i}`, deltas }),
        `bench-${round}-${i}`,
        time,
        now,
      );
    }
  });
  /** Feeds `total` events at the set rate; resolves with the seconds it took. */
  const feed = async (round: string): Promise<number> => {
    const started = performance.now();
    let written = 0;
    while (written < total) {
      const due = Math.min(
        total,
        Math.floor(((performance.now() - started) / 1000) * FEED_EVENTS_PER_S) + 1,
      );
      if (due > written) {
        write(round, written, due);
        written = due;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    return (performance.now() - started) / 1000;
  };
  const count = (): Promise<number> =>
    page.evaluate(
      () => (window as unknown as { fleetgate: { effectCount: number } }).fleetgate.effectCount,
    );

  // Baseline with the same feed: the view paused (the gateway, the stream and the page's store
  // do the same work; the table does not change).
  const pause = page.locator('button[aria-pressed]', { hasText: /Pause|Resume/ });
  await pause.click();
  const pausedBase = await count();
  await watch();
  await feed('paused');
  await page.waitForFunction(
    (n) => (window as unknown as { fleetgate: { effectCount: number } }).fleetgate.effectCount >= n,
    pausedBase + total * DELTAS_PER_EVENT,
    { timeout: 60_000 },
  );
  const pausedFrames = await unwatch();
  const pausedDropped = missed(pausedFrames, interval);
  note(`paused: ${pausedFrames.length} frames, ${pausedDropped} missed`);
  await pause.click();
  await page.waitForFunction(
    (n) => Number(document.querySelector('tr.effect[data-key]')?.getAttribute('data-key')) >= n,
    pausedBase + total * DELTAS_PER_EVENT,
  );

  const base = await count();
  const expected = base + total * DELTAS_PER_EVENT;
  await watch();
  const fedSeconds = await feed('live');
  db.close();
  let dropped = 0;
  try {
    await page.waitForFunction(
      (n) => {
        const row = document.querySelector('tr.effect[data-key]');
        return row !== null && Number(row.getAttribute('data-key')) >= n;
      },
      expected,
      { polling: 'raf', timeout: 60_000 },
    );
  } catch {
    const got = await page.evaluate(
      () => (window as unknown as { fleetgate: { effectCount: number } }).fleetgate.effectCount,
    );
    dropped = expected - got;
  }
  const frames = await unwatch();
  // The stream's span on screen: from the frame showing its first row to the one showing its last.
  const from = frames.findIndex((f) => f.key > base);
  const to = frames.findIndex((f) => f.key >= expected - dropped);
  const streamed = frames.slice(Math.max(0, from - 1), to < 0 ? undefined : to + 1);
  const rendered = (streamed.at(-1)?.key ?? base) - base;
  const seconds = ((streamed.at(-1)?.t ?? 0) - (streamed[0]?.t ?? 0)) / 1000;
  const fed = (total * DELTAS_PER_EVENT) / fedSeconds;
  const lags = streamed.map((f) => f.lag).filter((l) => Number.isFinite(l));
  const streamDropped = missed(streamed, interval);
  note(
    `${total * DELTAS_PER_EVENT} rows fed in ${fedSeconds.toFixed(2)} s, ${rendered} rendered over ${seconds.toFixed(2)} s in ${streamed.length} frames (${streamDropped} missed)`,
  );
  report({ bench: BENCH, metric: 'rows_fed_per_s', value: fed, unit: '1/s' });
  report({
    bench: BENCH,
    metric: 'rows_per_s',
    value: rendered / seconds,
    unit: '1/s',
    target: '>=1000',
  });
  report({
    bench: BENCH,
    metric: 'rows_rendered_over_fed',
    value: rendered / seconds / fed,
    unit: 'ratio',
  });
  report({ bench: BENCH, metric: 'dropped_rows', value: dropped, unit: 'rows', target: '==0' });
  report({ bench: BENCH, metric: 'row_lag_p95_ms', value: percentile(lags, 95), unit: 'ms' });
  report({
    bench: BENCH,
    metric: 'dropped_frames',
    value: streamDropped,
    unit: 'frames',
    target: '==0',
  });
  report({ bench: BENCH, metric: 'dropped_frames_idle', value: idleDropped, unit: 'frames' });
  report({ bench: BENCH, metric: 'dropped_frames_paused', value: pausedDropped, unit: 'frames' });
  report({
    bench: BENCH,
    metric: 'dropped_frames_pct',
    value: (100 * streamDropped) / Math.max(1, streamed.length + streamDropped),
    unit: '%',
  });
  await context.close();
} finally {
  await browser?.close();
  await gw.stop('SIGTERM');
  await agent.close();
  cardServer.close();
  rmSync(dir, { recursive: true, force: true });
}
