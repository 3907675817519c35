/**
 * world-apply: how many delta entries per second the world-state materialiser applies, audit log
 * and emissions included.
 * - `memory_deltas_per_s`: in-memory store, one event (10 entries) per unit of work, as the bus
 *   subscription delivers them (target ≥ 500,000);
 * - `sqlite_deltas_per_s`: SQLite file (WAL), batched: 500 events (5,000 entries) per transaction
 *   with `applyBatch` (target ≥ 50,000);
 * - `postgres_deltas_per_s`: PostgreSQL at FLEETGATE_PG_URL, batched the same way.
 * For context, the rate with one event per transaction (the bus subscription's path) is printed on
 * stderr for both databases.
 * Each figure is the median of five equal rounds over a fixed wall-clock budget, after a warm-up,
 * on one materialiser (so later rounds run against the state, audit log and bus the earlier ones
 * built up); the rounds are printed on stderr.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { createInMemoryEventBus, OUTBOX_WRITERS } from '../src/bus/index.js';
import type { WorldStateDeltaEntry } from '../src/protocol/index.js';
import type { WorldStateDeltaEnvelope, WorldStore } from '../src/world/index.js';
import {
  createMemoryWorldStore,
  createSqlWorldStore,
  createWorldMaterialiser,
} from '../src/world/index.js';
import { note, report } from './report.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';

const BENCH = 'world-apply';
const ENTRIES_PER_EVENT = 10;
/** Events per transaction of the batched SQL figures. */
const BATCH = 500;
const DOMAINS = ['ci', 'board', 'github_issues', 'deploy'];
let counter = 0;

/**
 * Ten entries in a realistic mix: counters (inc), statuses (set of a small object), a bounded list
 * (set by index), a log (push).
 */
function entries(): WorldStateDeltaEntry[] {
  const out: WorldStateDeltaEntry[] = [];
  // Like the example agents' skills, an event touches two domains.
  const first = counter % DOMAINS.length;
  for (let i = 0; i < ENTRIES_PER_EVENT; i++) {
    counter += 1;
    const domain = DOMAINS[(first + (i % 2)) % DOMAINS.length]!;
    switch (i % 5) {
      case 0:
      case 1:
        out.push({ domain, path: `data.counters.c${counter % 20}`, op: 'inc', value: 1 });
        break;
      case 2:
        out.push({
          domain,
          path: `data.status.s${counter % 50}`,
          op: 'set',
          value: { state: 'green', n: counter },
        });
        break;
      case 3:
        out.push({
          domain,
          path: `data.recent.${counter % 10}`,
          op: 'set',
          value: `pr-${counter}`,
        });
        break;
      default:
        out.push({ domain, path: `data.log${counter % 100}`, op: 'push', value: counter });
    }
  }
  return out;
}

function events(n: number): WorldStateDeltaEnvelope[] {
  return Array.from({ length: n }, () => {
    counter += 1;
    const taskId = `task-${counter}`;
    return {
      id: `evt-${counter}`,
      topic: 'world.state.delta',
      time: '2026-11-30T05:00:00.000Z',
      correlationId: taskId,
      payload: {
        source: 'quinn',
        skill: 'pr_review',
        taskId,
        correlationId: taskId,
        deltas: entries(),
      },
    };
  });
}

/** Measured rounds per figure; the figure is their median, so one disturbed round does not move it. */
const ROUNDS = 5;

/**
 * Applies events in batches of `batch` for `budgetMs` (after a warm-up), in {@link ROUNDS} rounds
 * of equal length on the same materialiser, and returns the median rate in entries per second.
 */
async function measure(
  label: string,
  store: WorldStore,
  batch: number,
  budgetMs: number,
): Promise<number> {
  const bus = createInMemoryEventBus();
  const world = createWorldMaterialiser({ store, bus });
  const pool = events(batch * 20);
  let i = 0;
  const run = async (ms: number): Promise<number> => {
    let applied = 0;
    const start = performance.now();
    while (performance.now() - start < ms) {
      const chunk = pool
        .slice((i % 20) * batch, ((i % 20) + 1) * batch)
        .map((e) => ({ ...e, id: `${e.id}-${i}` }));
      i += 1;
      if (batch === 1) await world.apply(chunk[0]!);
      else await world.applyBatch(chunk);
      applied += batch * ENTRIES_PER_EVENT;
    }
    return (applied / (performance.now() - start)) * 1000;
  };
  await run(Math.min(500, budgetMs / 4)); // warm-up
  globalThis.gc?.();
  const rates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) rates.push(await run(budgetMs / ROUNDS));
  await bus.close();
  note(`${label}: rounds ${rates.map((x) => Math.round(x)).join(', ')} deltas/s`);
  return rates.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

const memory = await measure('memory', createMemoryWorldStore(), 1, 2000);
report({
  bench: BENCH,
  metric: 'memory_deltas_per_s',
  value: Math.round(memory),
  unit: '1/s',
  target: '>=500000',
});

const dir = mkdtempSync(join(tmpdir(), 'fleetgate-bench-world-'));
try {
  const store = await openGatewayStore(`sqlite:${join(dir, 'world.db')}`);
  try {
    const world = createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS });
    note(
      `sqlite, one event per transaction: ${Math.round(await measure('sqlite, one event per transaction', world, 1, 1500))} deltas/s`,
    );
    const rate = await measure('sqlite, batched', world, BATCH, 3000);
    report({
      bench: BENCH,
      metric: 'sqlite_deltas_per_s',
      value: Math.round(rate),
      unit: '1/s',
      target: '>=50000',
    });
  } finally {
    await store.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const pgUrl = process.env.FLEETGATE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `bench_world_${process.pid}`;
let pg: GatewayStore | undefined;
try {
  pg = await openGatewayStore(pgUrl, { schema });
} catch (error) {
  note(`PostgreSQL at ${pgUrl} unavailable, postgres_deltas_per_s skipped: ${String(error)}`);
}
if (pg !== undefined) {
  try {
    const world = createSqlWorldStore({ db: pg.db, kind: pg.kind, outbox: OUTBOX_WRITERS });
    note(
      `postgres, one event per transaction: ${Math.round(await measure('postgres, one event per transaction', world, 1, 1500))} deltas/s`,
    );
    const rate = await measure('postgres, batched', world, BATCH, 3000);
    report({ bench: BENCH, metric: 'postgres_deltas_per_s', value: Math.round(rate), unit: '1/s' });
  } finally {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(pg.db);
    await pg.close();
  }
}
