/**
 * bus-memory: publish→deliver throughput of the in-memory bus.
 *
 * - `events_per_s_1_sub`: one exact subscriber.
 * - `slowdown_10k_subs`: throughput with that one subscriber / throughput when 10,000 wildcard
 *   subscriptions exist besides it, of which 2 also match the topic (so each event is delivered
 *   3 times instead of once: part of the slowdown is that extra delivery work, not matching).
 * - `slowdown_10k_nonmatching`: the same with none of the 10,000 matching (matching cost only).
 *
 * Rounds of both set-ups are interleaved after a warm-up; each figure is the median round.
 * An event counts once every matching handler has run (`idle()` after each burst).
 */
import { createInMemoryEventBus } from '../src/bus/index.js';
import type { InMemoryEventBus } from '../src/bus/index.js';
import type { OpenTopics } from '../src/protocol/index.js';
import { note, report } from './report.js';

const BENCH = 'bus-memory';
const TOPIC = 'bench.hot.event';
const BURST = 1_000;
const EVENTS_PER_ROUND = 200_000;
const ROUNDS = 9;
const PAYLOAD = { agent: 'quinn', skill: 'triage', n: 1 };

interface Setup {
  bus: InMemoryEventBus<OpenTopics>;
  delivered: () => number;
  perEvent: number;
}

async function setup(wildcards: number, matching: number): Promise<Setup> {
  const bus = createInMemoryEventBus<OpenTopics>({ maxQueue: BURST * 2 });
  let delivered = 0;
  const count = (): void => {
    delivered += 1;
  };
  await bus.subscribe(TOPIC, count, { name: 'exact' });
  const matchingPatterns = ['bench.>', '*.hot.event', 'bench.hot.*'].slice(0, matching);
  for (const [i, p] of matchingPatterns.entries()) await bus.subscribe(p, count, { name: `m${i}` });
  for (let i = 0; i < wildcards - matching; i += 1) {
    const pattern = i % 3 === 0 ? `bench.t${i}.*` : i % 3 === 1 ? `*.t${i}.>` : `t${i}.>`;
    await bus.subscribe(pattern, count, { name: `w${i}` });
  }
  return { bus, delivered: () => delivered, perEvent: 1 + matchingPatterns.length };
}

async function round(s: Setup, events: number): Promise<number> {
  const before = s.delivered();
  const t0 = process.hrtime.bigint();
  for (let sent = 0; sent < events; sent += BURST) {
    for (let i = 0; i < BURST; i += 1) void s.bus.publish(TOPIC, PAYLOAD);
    await s.bus.idle();
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const got = s.delivered() - before;
  if (got !== events * s.perEvent) {
    throw new Error(`delivered ${got}, expected ${events * s.perEvent}`);
  }
  return events / seconds;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const one = await setup(0, 0);
const tenK = await setup(10_000, 2);
const tenKNone = await setup(10_000, 0);
note('warming up');
for (let i = 0; i < 3; i += 1) {
  await round(one, EVENTS_PER_ROUND);
  await round(tenK, EVENTS_PER_ROUND);
  await round(tenKNone, EVENTS_PER_ROUND);
}
const r1: number[] = [];
const r10k: number[] = [];
const r10kNone: number[] = [];
for (let i = 0; i < ROUNDS; i += 1) {
  global.gc?.();
  r1.push(await round(one, EVENTS_PER_ROUND));
  r10k.push(await round(tenK, EVENTS_PER_ROUND));
  r10kNone.push(await round(tenKNone, EVENTS_PER_ROUND));
  note(`round ${i + 1}: 1 sub ${Math.round(r1.at(-1)!)}/s, 10k subs ${Math.round(r10k.at(-1)!)}/s`);
}
const m1 = median(r1);
const m10k = median(r10k);
const m10kNone = median(r10kNone);
report({
  bench: BENCH,
  metric: 'events_per_s_1_sub',
  value: Math.round(m1),
  unit: '1/s',
  target: '>=1000000',
});
report({
  bench: BENCH,
  metric: 'slowdown_10k_subs',
  value: m1 / m10k,
  unit: 'ratio',
  target: '<=2',
});
report({ bench: BENCH, metric: 'slowdown_10k_nonmatching', value: m1 / m10kNone, unit: 'ratio' });
report({ bench: BENCH, metric: 'events_per_s_10k_subs', value: Math.round(m10k), unit: '1/s' });
if (m1 < 1_000_000) {
  note(
    `events_per_s_1_sub misses the 1,000,000/s target by ${(100 * (1 - m1 / 1_000_000)).toFixed(1)}%`,
  );
}
await Promise.all([one.bus.close(), tenK.bus.close(), tenKNone.bus.close()]);
