/**
 * CPU time of another process (user + system), read from `/proc/PID/stat` — for a service
 * benchmark's per-request cost of each process in the path. Undefined where there is no `/proc`
 * (the figures are then left out).
 */
import { readFileSync } from 'node:fs';
import { note, report } from '../report.js';

/** Clock ticks per second of `/proc` times (`getconf CLK_TCK`: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** Milliseconds of CPU the process `pid` has used so far, or undefined. */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
  return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : undefined;
}

/**
 * The CPU each side of a benchmark adds to the path — one process per side (for the baseline,
 * the agent's own) — summed over the side's rounds, with the requests the rounds served.
 */
export class SideCpu<S extends string> {
  readonly #pids: Record<S, number>;
  readonly #ms = new Map<S, number>();
  readonly #served = new Map<S, number>();

  constructor(pids: Record<S, number>) {
    this.#pids = pids;
  }

  /** Runs one round of `side`, counting its process's CPU and the requests it served. */
  async round<R>(side: S, run: () => Promise<R>, served: (result: R) => number): Promise<R> {
    const before = processCpuMs(this.#pids[side]);
    const result = await run();
    const after = processCpuMs(this.#pids[side]);
    if (before !== undefined && after !== undefined) {
      this.#ms.set(side, (this.#ms.get(side) ?? 0) + after - before);
    }
    this.#served.set(side, (this.#served.get(side) ?? 0) + served(result));
    return result;
  }

  /** CPU milliseconds per request of `side` so far; undefined where there is no `/proc`. */
  perRequest(side: S): number | undefined {
    if (this.#ms.size === 0) return undefined;
    return (this.#ms.get(side) ?? 0) / (this.#served.get(side) ?? Number.NaN);
  }

  /** Reports `metric` as the CPU milliseconds per request of `side`, for each entry. */
  report(bench: string, metrics: Readonly<Record<string, S>>): void {
    if (this.#ms.size === 0) {
      note('no /proc here: the CPU figures of each process are left out');
      return;
    }
    for (const [metric, side] of Object.entries<S>(metrics)) {
      report({ bench, metric, value: this.perRequest(side)!, unit: 'ms' });
    }
  }
}
