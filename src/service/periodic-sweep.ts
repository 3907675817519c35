/**
 * A sweep that runs one at a time: on demand, and every interval once started. A sweep asked for
 * while one runs shares it; stop ends the timer and waits for the sweep in progress.
 */

/** Start, stop and an on-demand run of one sweep. */
export interface PeriodicSweep<R> {
  /** Runs the sweep now, or joins the one running. */
  readonly sweep: () => Promise<R>;
  /** Starts the timer (nothing when it runs, or when the interval is 0 or less). */
  readonly start: () => void;
  /** Stops the timer and waits for a sweep in progress (its failure was reported already). */
  readonly stop: () => Promise<void>;
}

/**
 * Sweeps with `run` every `intervalMs` once started; a failed timed sweep goes to `onError` and
 * the next one tries again.
 *
 * @example
 * ```ts
 * const retention = periodicSweep(() => prune(), 60_000, (e) => log(e));
 * retention.start();
 * ```
 */
export function periodicSweep<R>(
  run: () => Promise<R>,
  intervalMs: number,
  onError: (error: unknown) => void,
): PeriodicSweep<R> {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<R> | undefined;
  const sweep = (): Promise<R> => {
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  };
  return {
    sweep,
    start() {
      if (timer !== undefined || intervalMs <= 0) return;
      timer = setInterval(() => {
        sweep().catch(onError);
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
  };
}
