/**
 * The soak run shared by `soak` (30 minutes, opt-in) and `soak-short` (2 minutes): mixed traffic
 * from the demo fleet (blocking v1.0, streaming, v0.3, an agent without extensions) through a
 * gateway built by `createGateway` on a PRIVATE PostgreSQL cluster that is restarted (immediate
 * shutdown, crash recovery) at a fixed interval. Figures:
 * - `deltas_lost` / `deltas_doubled`: tasks the agents executed whose `soak` delta was applied
 *   zero times / more than once, after the world converged (0 each);
 * - `rss_growth_pct`: RSS at the end against RSS after the warm-up, both after a GC (≤ 10);
 * - `p99_ratio`: p99 dispatch latency in the window after the last restart (once settled) against
 *   the window before the first (≤ 1.2).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { isFleetgateError } from '../../src/protocol/index.js';
import { type Gateway } from '../../src/service/index.js';
import { startPrivatePostgres } from '../../test/support/private-servers.js';
import { note, percentile, report } from '../report.js';
import { assembleGateway } from '../../src/service/internal.js';

const here = dirname(fileURLToPath(import.meta.url));
const SOAK_DOMAIN = 'soak';

export interface SoakOptions {
  bench: string;
  durationMs: number;
  /** The PostgreSQL cluster restarts every this many ms. */
  restartEveryMs: number;
  /** Excluded from the "before" window and from the RSS baseline. */
  warmupMs: number;
  /** After a restart, this long before the "after" window starts. */
  settleMs: number;
  /** Calls in flight. */
  concurrency: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A full collection (twice: the first frees what finalizers release), when exposed. */
function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  collect?.();
  collect?.();
}

/** Starts the soak agents' process; resolves their URLs by name. */
async function startAgents(
  idsFile: string,
): Promise<{ urls: Record<string, string>; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'soak-agents.ts')], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, FLEETGATE_SOAK_IDS: idsFile },
  });
  const lines = createInterface({ input: child.stdout });
  const urls = await new Promise<Record<string, string>>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`soak agents exited with ${code}`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as Record<string, string>));
  });
  return { urls, stop: () => child.stdin.end() };
}

/** One kind of call of the mixed traffic. */
type Call = (gw: Gateway) => Promise<unknown>;

const CALLS: readonly Call[] = [
  (gw) => gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'status' }).answered(),
  (gw) => gw.dispatch({ agent: 'legacy', skill: 'triage', text: 'triage' }).answered(),
  (gw) => gw.call('stream', 'build', 'build', { mode: 'streaming' }),
  (gw) => gw.dispatch({ agent: 'ops', skill: 'sitrep', text: 'status' }).answered(),
  (gw) => gw.dispatch({ agent: 'plain', skill: 'echo', text: 'echo' }).answered(),
];

export async function runSoak(options: SoakOptions): Promise<void> {
  const { bench } = options;
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-soak-'));
  const idsFile = join(dir, 'task-ids.log');
  writeFileSync(idsFile, '');
  const server = await startPrivatePostgres();
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('create database soak');
  await admin.end();
  const agents = await startAgents(idsFile);
  const errors: Record<string, number> = {};
  const { gateway: gw, parts } = await assembleGateway(
    {
      store: server.url.replace(/\/postgres$/u, '/soak'),
      agents: Object.entries(agents.urls).map(([name, url]) => ({ name, url })),
      // The soak measures the store's faults, not the policy: every call goes out.
      policy: { overrides: [{ action: 'allow' }] },
      storeTimeouts: { connect: '1s', statement: '10s', query: '15s' },
    },
    {
      onError: (error) => {
        const code = isFleetgateError(error) ? error.code : 'uncoded';
        errors[code] = (errors[code] ?? 0) + 1;
      },
    },
  );
  try {
    // Every card loaded before the clock starts.
    await gw.agents.whenIdle();

    const started = performance.now();
    const elapsed = (): number => performance.now() - started;
    const restarts: number[] = [];
    for (let at = options.restartEveryMs; at < options.durationMs; at += options.restartEveryMs) {
      restarts.push(at);
    }
    // Before the first restart, and after the last one has settled (without restarts: the first
    // and the last quarter after the warm-up).
    const quarter = (options.durationMs - options.warmupMs) / 4;
    const beforeWindow = [options.warmupMs, restarts[0] ?? options.warmupMs + quarter] as const;
    const lastRestart = restarts.at(-1);
    const afterWindow = [
      lastRestart === undefined ? options.durationMs - quarter : lastRestart + options.settleMs,
      options.durationMs,
    ] as const;
    const buckets: number[][] = [];
    const before: number[] = [];
    const after: number[] = [];
    let ok = 0;
    let failed = 0;
    let next = 0;
    let running = true;

    const worker = async (): Promise<void> => {
      while (running) {
        const call = CALLS[next++ % CALLS.length]!;
        const t0 = performance.now();
        try {
          await call(gw);
          const at = t0 - started;
          const ms = performance.now() - t0;
          if (at >= beforeWindow[0] && at < beforeWindow[1]) before.push(ms);
          if (at >= afterWindow[0] && at < afterWindow[1]) after.push(ms);
          (buckets[Math.floor(at / 10_000)] ??= []).push(ms);
          ok += 1;
        } catch {
          failed += 1;
          await sleep(25);
        }
      }
    };
    const workers = Array.from({ length: options.concurrency }, worker);

    await sleep(options.warmupMs);
    gc();
    const rssStart = process.memoryUsage().rss;
    note(`${bench}: warm, rss ${(rssStart / 2 ** 20).toFixed(0)} MiB`);
    for (const at of restarts) {
      await sleep(Math.max(0, at - elapsed()));
      await server.kill();
      await server.start();
      note(`${bench}: PostgreSQL restarted at ${(elapsed() / 1000).toFixed(0)} s`);
    }
    await sleep(Math.max(0, options.durationMs - elapsed()));
    running = false;
    await Promise.all(workers);

    // Converge: every executed task's delta applied, nothing left waiting.
    const executed = new Set(
      readFileSync(idsFile, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    );
    const db = parts.store.db;
    let lost = executed.size;
    let doubled = 0;
    const deadline = Date.now() + 120_000;
    for (;;) {
      try {
        await gw.settle();
        const rows = await sql<{ task_id: string; n: number | string }>`
          select task_id, count(*) as n from fleetgate_world_audit
          where domain = ${SOAK_DOMAIN} and status = 'applied' group by task_id`.execute(db);
        const applied = new Map(rows.rows.map((r) => [r.task_id, Number(r.n)]));
        lost = 0;
        doubled = 0;
        for (const id of executed) if ((applied.get(id) ?? 0) === 0) lost += 1;
        for (const n of applied.values()) if (n > 1) doubled += n - 1;
        if (lost === 0 && parts.fleet.terminal.retrying() === 0) break;
      } catch {
        // still coming back
      }
      if (Date.now() > deadline) break;
      await sleep(250);
    }
    gc();
    const rssEnd = process.memoryUsage().rss;
    // The trend over the run, for a reader judging how noisy the machine was.
    note(
      `${bench}: p99 ms per 10 s ${JSON.stringify(buckets.map((b) => Math.round(percentile(b, 99))))}`,
    );
    const p99Before = percentile(before, 99);
    const p99After = percentile(after, 99);
    note(
      `${bench}: ${ok} calls ok, ${failed} failed, ${executed.size} tasks with deltas, ` +
        `${restarts.length} restarts, errors ${JSON.stringify(errors)}`,
    );
    report({ bench, metric: 'deltas_lost', value: lost, unit: 'tasks', target: '=0' });
    report({ bench, metric: 'deltas_doubled', value: doubled, unit: 'deltas', target: '=0' });
    report({
      bench,
      metric: 'rss_growth_pct',
      value: ((rssEnd - rssStart) / rssStart) * 100,
      unit: '%',
      target: '<=10',
    });
    report({
      bench,
      metric: 'p99_ratio',
      value: p99After / p99Before,
      unit: 'ratio',
      target: '<=1.2',
    });
    report({ bench, metric: 'p99_before_ms', value: p99Before, unit: 'ms' });
    report({ bench, metric: 'p99_after_ms', value: p99After, unit: 'ms' });
    report({ bench, metric: 'calls_ok', value: ok, unit: 'calls' });
    report({ bench, metric: 'calls_failed', value: failed, unit: 'calls' });
    report({ bench, metric: 'tasks_with_deltas', value: executed.size, unit: 'tasks' });
    report({ bench, metric: 'restarts', value: restarts.length, unit: 'restarts' });
  } finally {
    await gw.close();
    agents.stop();
    await server.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
