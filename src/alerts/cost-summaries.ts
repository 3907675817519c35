/**
 * Cost summaries: per (agent, skill), a rolling window of `cost.sample` events — samples, success
 * rate, p50/p95 wall time, tokens and cost. Kept in memory per process (a dashboard view, not a
 * ledger); each replica summarises the samples its subscription receives.
 */
import type { EventBus, StandingSubscriber } from '../bus/index.js';
import { standingSubscriber } from '../bus/index.js';
import type { CostSampleEvent, EventEnvelope } from '../protocol/index.js';

/** Default subscription name of the cost summaries. */
export const COST_SUMMARIES_SUBSCRIPTION = 'alerts-cost-summaries';

/** The summary of one (agent, skill) over the window. */
export interface CostSummary {
  agent: string;
  skill: string;
  /** Length of the window in ms. */
  windowMs: number;
  samples: number;
  successes: number;
  /** successes / samples (0 … 1). */
  successRate: number;
  /** Wall-time percentiles in ms (nearest rank). */
  wallMs: { p50: number; p95: number; max: number };
  /** Sums over samples that reported them. */
  tokensIn: number;
  tokensOut: number;
  costUsd: number;
  /** Samples whose tokens and cost came from the agent (cost-v1), not only from the wall clock. */
  measuredByAgent: number;
  /** Epoch ms of the newest sample. */
  lastAt: number;
}

/** Options of {@link createCostSummaries}. */
export interface CostSummariesOptions {
  /** Length of the rolling window (default 15 minutes). */
  windowMs?: number;
  /** Most samples kept per (agent, skill); the oldest go first (default 1,000). */
  maxSamples?: number;
  /** Clock in epoch milliseconds. */
  now?: () => number;
}

/** Rolling cost summaries per (agent, skill). */
export interface CostSummaries {
  /** Adds one sample (the subscription calls this). */
  record(sample: CostSampleEvent, at?: number): void;
  summary(agent: string, skill: string): CostSummary | undefined;
  /** Every (agent, skill) with samples in the window, sorted by agent then skill. */
  summaries(): CostSummary[];
  /** Subscribes to `cost.sample` on `bus`. */
  start(bus: EventBus): Promise<void>;
  stop(): Promise<void>;
}

interface Sample {
  at: number;
  wallMs: number;
  success: boolean;
  tokensIn: number;
  tokensOut: number;
  costUsd: number;
  byAgent: boolean;
}

/** The value at percentile `p` (0 … 100) of ascending `sorted`, by nearest rank. */
function nearestRank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1]!;
}

function finite(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/**
 * Creates empty cost summaries.
 *
 * @example
 * ```ts
 * const costs = createCostSummaries({ windowMs: 60 * 60_000 });
 * await costs.start(bus);
 * costs.summary('quinn', 'pr_review'); // { samples, successRate, wallMs: { p50, p95 }, … }
 * ```
 */
export function createCostSummaries(options: CostSummariesOptions = {}): CostSummaries {
  const windowMs = options.windowMs ?? 15 * 60_000;
  const maxSamples = options.maxSamples ?? 1000;
  const now = options.now ?? Date.now;
  const series = new Map<string, { agent: string; skill: string; samples: Sample[] }>();
  let listening: StandingSubscriber | undefined;

  function evict(samples: Sample[], at: number): void {
    let drop = 0;
    while (drop < samples.length && samples[drop]!.at <= at - windowMs) drop += 1;
    if (drop > 0) samples.splice(0, drop);
  }

  function summarise(agent: string, skill: string, samples: Sample[]): CostSummary {
    const wall = samples.map((s) => s.wallMs).sort((a, b) => a - b);
    const successes = samples.filter((s) => s.success).length;
    return {
      agent,
      skill,
      windowMs,
      samples: samples.length,
      successes,
      successRate: samples.length === 0 ? 0 : successes / samples.length,
      wallMs: { p50: nearestRank(wall, 50), p95: nearestRank(wall, 95), max: wall.at(-1) ?? 0 },
      tokensIn: samples.reduce((n, s) => n + s.tokensIn, 0),
      tokensOut: samples.reduce((n, s) => n + s.tokensOut, 0),
      costUsd: samples.reduce((n, s) => n + s.costUsd, 0),
      measuredByAgent: samples.filter((s) => s.byAgent).length,
      lastAt: samples.at(-1)?.at ?? 0,
    };
  }

  const summaries: CostSummaries = {
    record(sample, at = now()) {
      const key = JSON.stringify([sample.agent, sample.skill]);
      let entry = series.get(key);
      if (entry === undefined) {
        entry = { agent: sample.agent, skill: sample.skill, samples: [] };
        series.set(key, entry);
      }
      entry.samples.push({
        at,
        wallMs: finite(sample.wallMs),
        success: sample.success,
        tokensIn: finite(sample.tokensIn),
        tokensOut: finite(sample.tokensOut),
        costUsd: finite(sample.costUsd),
        byAgent: sample.measured === 'agent',
      });
      if (entry.samples.length > maxSamples)
        entry.samples.splice(0, entry.samples.length - maxSamples);
      evict(entry.samples, at);
    },
    summary(agent, skill) {
      const entry = series.get(JSON.stringify([agent, skill]));
      if (entry === undefined) return undefined;
      evict(entry.samples, now());
      return entry.samples.length === 0 ? undefined : summarise(agent, skill, entry.samples);
    },
    summaries() {
      const at = now();
      const out: CostSummary[] = [];
      for (const [key, entry] of series) {
        evict(entry.samples, at);
        if (entry.samples.length === 0) series.delete(key);
        else out.push(summarise(entry.agent, entry.skill, entry.samples));
      }
      return out.sort((a, b) => a.agent.localeCompare(b.agent) || a.skill.localeCompare(b.skill));
    },
    async start(bus) {
      if (listening !== undefined) return;
      const subscriber = standingSubscriber(bus, 'cost.sample', onSample, {
        name: COST_SUMMARIES_SUBSCRIPTION,
      });
      listening = subscriber;
      try {
        await subscriber.start();
      } catch (error) {
        listening = undefined;
        throw error;
      }
    },
    async stop() {
      const subscriber = listening;
      listening = undefined;
      await subscriber?.stop();
    },
  };
  function onSample(event: EventEnvelope<'cost.sample', CostSampleEvent>): void {
    const p = event.payload;
    if (typeof p.agent !== 'string' || typeof p.skill !== 'string') return;
    summaries.record(p);
  }
  return summaries;
}
