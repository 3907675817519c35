/**
 * Alternating load rounds for the service benchmarks: each side (a process in the path, or the
 * baseline) warmed up once, then loaded in turn, the side that goes first rotating each round, its
 * process's CPU counted by {@link SideCpu} — so both sides of a ratio share the machine's load.
 */
import autocannon from 'autocannon';

import { note } from '../report.js';
import type { SideCpu } from './process-cpu.js';

/** What one round of load came to. */
export interface Round {
  perSecond: number;
  /** Median latency, ms. */
  p50: number;
  /** Requests answered in the round. */
  served: number;
  errors: number;
}

/** An HTTP `POST` to load. */
export interface PostTarget {
  url: string;
  body: string;
  headers?: Record<string, string>;
}

/** `connections` autocannon connections posting `target` for `seconds`. */
export async function post(
  target: PostTarget,
  options: { connections: number; seconds: number },
): Promise<Round> {
  const result = await autocannon({
    url: target.url,
    method: 'POST',
    connections: options.connections,
    duration: options.seconds,
    headers: { 'content-type': 'application/json', ...target.headers },
    body: target.body,
  });
  return {
    perSecond: result.requests.total / options.seconds,
    p50: result.latency.p50,
    served: result.requests.total,
    errors: result.errors + result.non2xx,
  };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Warms each side up once, then runs `rounds` rounds of every side, rotating which goes first,
 * and fails when a request failed. Returns each side's rounds.
 */
export async function alternate<S extends string>(
  sides: Record<S, () => Promise<Round>>,
  cpu: SideCpu<S>,
  rounds: number,
): Promise<Record<S, Round[]>> {
  const names = Object.keys(sides) as S[];
  note('warm-up');
  for (const side of names) await sides[side]();
  const done = Object.fromEntries(names.map((side) => [side, [] as Round[]])) as Record<S, Round[]>;
  for (let i = 0; i < rounds; i += 1) {
    for (let k = 0; k < names.length; k += 1) {
      const side = names[(i + k) % names.length]!;
      const r = await cpu.round(side, sides[side], (round) => round.served);
      done[side].push(r);
      note(
        `round ${i + 1} ${side}: ${r.perSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(2)} ms, errors ${r.errors}`,
      );
    }
  }
  const errors = names.flatMap((side) => done[side]).reduce((n, r) => n + r.errors, 0);
  if (errors > 0) throw new Error(`${errors} requests failed`);
  return done;
}

/** Each side's median throughput and latency over its rounds. */
export function mediansOf<S extends string>(
  rounds: Record<S, Round[]>,
): Record<S, { perSecond: number; p50: number }> {
  const sides = Object.keys(rounds) as S[];
  return Object.fromEntries(
    sides.map((side) => [
      side,
      {
        perSecond: median(rounds[side].map((r) => r.perSecond)),
        p50: median(rounds[side].map((r) => r.p50)),
      },
    ]),
  ) as Record<S, { perSecond: number; p50: number }>;
}
