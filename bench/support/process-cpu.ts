/**
 * CPU time of another process (user + system), read from `/proc/PID/stat`, and the bytes it had
 * written to storage (`/proc/PID/io`) — for a service benchmark's per-request cost of each process
 * in the path. Undefined where there is no `/proc` (the figures are then left out).
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
 * Bytes the process `pid` (its threads included: SQLite's checkpoints) has caused to be written
 * to storage so far, or undefined. On a quiet machine this is the store's log and checkpoints:
 * the pages a call's commits write, a figure CPU noise does not move.
 */
export function processWriteBytes(pid: number): number | undefined {
  let io: string;
  try {
    io = readFileSync(`/proc/${pid}/io`, 'utf8');
  } catch {
    return undefined;
  }
  const match = /^write_bytes: (\d+)$/m.exec(io);
  return match === null ? undefined : Number(match[1]);
}

/**
 * The CPU each side of a benchmark adds to the path — one process per side (for the baseline,
 * the agent's own) — summed over the side's rounds, with the requests the rounds served.
 */
export class SideCpu<S extends string> {
  readonly #pids: Record<S, number>;
  readonly #ms = new Map<S, number>();
  readonly #written = new Map<S, number>();
  readonly #served = new Map<S, number>();

  constructor(pids: Record<S, number>) {
    this.#pids = pids;
  }

  /** Runs one round of `side`, counting its process's CPU and the requests it served. */
  async round<R>(side: S, run: () => Promise<R>, served: (result: R) => number): Promise<R> {
    const pid = this.#pids[side];
    const before = processCpuMs(pid);
    const writtenBefore = processWriteBytes(pid);
    const result = await run();
    const after = processCpuMs(pid);
    const writtenAfter = processWriteBytes(pid);
    if (before !== undefined && after !== undefined) {
      this.#ms.set(side, (this.#ms.get(side) ?? 0) + after - before);
    }
    if (writtenBefore !== undefined && writtenAfter !== undefined) {
      this.#written.set(side, (this.#written.get(side) ?? 0) + writtenAfter - writtenBefore);
    }
    this.#served.set(side, (this.#served.get(side) ?? 0) + served(result));
    return result;
  }

  /** CPU milliseconds per request of `side` so far; undefined where there is no `/proc`. */
  perRequest(side: S): number | undefined {
    if (this.#ms.size === 0) return undefined;
    return (this.#ms.get(side) ?? 0) / (this.#served.get(side) ?? Number.NaN);
  }

  /**
   * Reports `metric` as the KiB `side`'s process wrote to storage per request (its store's log
   * and checkpoints); left out where `/proc/PID/io` cannot be read.
   */
  reportWrites(bench: string, metric: string, side: S): void {
    const bytes = this.#written.get(side);
    if (bytes === undefined) {
      note(`no /proc/PID/io here: ${metric} is left out`);
      return;
    }
    const served = this.#served.get(side) ?? Number.NaN;
    report({ bench, metric, value: Math.round((bytes / 1024 / served) * 10) / 10, unit: 'KiB' });
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
