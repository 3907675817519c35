/**
 * cards-refresh: refresh 1,000 agents whose cards are served by another process on loopback,
 * concurrency 16 — a full refresh (all 200) and an unchanged one (all 304) — against a raw `fetch`
 * of the same 1,000 cards at the same concurrency, in interleaved rounds of the same run (median);
 * and effective-radius lookups per second.
 *
 * The baseline is what a user would write: the global `fetch`, reading each card as text and
 * parsing it. The broker uses what the gateway ships with: `HttpCardSource` without a `fetch` of
 * the caller's, which fetches over `node:http` (`src/net/exchange.ts`).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { CardBroker } from '../src/fleet/index.js';
import {
  AgentDirectory,
  BlastRegistry,
  createCardBroker,
  createMemoryRatchetPersistence,
  createSemaphore,
  DeclarationRatchet,
  EffectDomainRegistry,
  HitlModeRegistry,
  HttpCardSource,
} from '../src/fleet/index.js';
import { note, percentile, report } from './report.js';

const AGENTS = 1000;
const CONCURRENCY = 16;
const BENCH = 'cards-refresh';

const server = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    fileURLToPath(new URL('support/card-fleet-server.ts', import.meta.url)),
    String(AGENTS),
  ],
  {
    stdio: ['pipe', 'pipe', 'inherit'],
  },
);
const [chunk] = (await once(server.stdout, 'data')) as [Buffer];
const origin = `http://127.0.0.1:${chunk.toString().trim()}`;
const urlOf = (i: number): string => `${origin}/agents/${i}`;

async function rawFetchAll(): Promise<number> {
  const run = createSemaphore(CONCURRENCY);
  const start = performance.now();
  await Promise.all(
    Array.from({ length: AGENTS }, (_, i) =>
      run(async () => {
        const res = await fetch(`${urlOf(i)}/.well-known/agent-card.json`, {
          headers: { 'A2A-Version': '1.0' },
        });
        JSON.parse(await res.text());
      }),
    ),
  );
  return (performance.now() - start) / 1000;
}

async function brokerRound(): Promise<{ full: number; unchanged: number; broker: CardBroker }> {
  const directory = new AgentDirectory();
  directory.load(Array.from({ length: AGENTS }, (_, i) => ({ name: `agent-${i}`, url: urlOf(i) })));
  const broker = createCardBroker({
    directory,
    source: new HttpCardSource(),
    registries: {
      blast: new BlastRegistry(),
      hitlMode: new HitlModeRegistry(),
      effectDomain: new EffectDomainRegistry(),
    },
    ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
    concurrency: CONCURRENCY,
  });
  let start = performance.now();
  const first = await broker.refreshAll();
  const full = (performance.now() - start) / 1000;
  if (first.some((o) => o.result !== 'changed'))
    throw new Error('full refresh: not every card was fetched');
  start = performance.now();
  const second = await broker.refreshAll();
  const unchanged = (performance.now() - start) / 1000;
  if (second.some((o) => o.result !== 'unchanged'))
    throw new Error('unchanged refresh: not every card was a 304');
  return { full, unchanged, broker };
}

const ROUNDS = 7;
const median = (values: readonly number[]): number => percentile(values, 50);

try {
  // Warm-up, then interleave the baseline and the fleet side round by round (alternating which
  // goes first), against the same server at the same concurrency; quote medians.
  await rawFetchAll();
  await brokerRound();
  const raws: number[] = [];
  const fulls: number[] = [];
  const unchangeds: number[] = [];
  const ratios: number[] = [];
  let broker: CardBroker | undefined;
  for (let round = 0; round < ROUNDS; round += 1) {
    let raw: number;
    let r: Awaited<ReturnType<typeof brokerRound>>;
    if (round % 2 === 0) {
      raw = await rawFetchAll();
      r = await brokerRound();
    } else {
      r = await brokerRound();
      raw = await rawFetchAll();
    }
    raws.push(raw);
    fulls.push(r.full);
    unchangeds.push(r.unchanged);
    ratios.push(r.full / raw);
    broker?.stop();
    broker = r.broker;
    note(
      `round ${round + 1}: raw ${raw.toFixed(3)} s, full ${r.full.toFixed(3)} s (${(r.full / raw).toFixed(2)}x), unchanged ${r.unchanged.toFixed(3)} s`,
    );
  }
  report({
    bench: BENCH,
    metric: 'full_refresh_1000_s',
    value: median(fulls),
    unit: 's',
    target: '<=3',
  });
  report({
    bench: BENCH,
    metric: 'unchanged_refresh_1000_s',
    value: median(unchangeds),
    unit: 's',
  });
  report({ bench: BENCH, metric: 'raw_fetch_1000_s', value: median(raws), unit: 's' });
  report({
    bench: BENCH,
    metric: 'full_refresh_vs_raw_fetch_ratio',
    value: median(ratios),
    unit: 'ratio',
    target: '<=1.3',
  });

  const skills = ['triage', 'review', 'deploy', 'unknown'];
  const names = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
  let sink = 0;
  const lookups = (n: number): number => {
    const start = performance.now();
    for (let i = 0; i < n; i += 1) {
      if (broker!.effectiveRadius(names[i % AGENTS]!, skills[i & 3]!).radius === 'public')
        sink += 1;
    }
    return n / ((performance.now() - start) / 1000);
  };
  lookups(500_000);
  const perSecond = Math.max(lookups(3_000_000), lookups(3_000_000));
  note(`(${sink} public lookups)`);
  report({
    bench: BENCH,
    metric: 'lookups_per_s',
    value: Math.round(perSecond),
    unit: '1/s',
    target: '>=5000000',
  });
} finally {
  server.stdin.end();
  server.kill();
}
