/** Waiting between tries while the store is down: a pause that an abort cuts short. */

/** Resolves after `ms`, or as soon as one of the signals aborts. */
export function pause(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<void> {
  return new Promise<void>((resolve) => {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    const done = (): void => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of live) s.addEventListener('abort', done, { once: true });
  });
}
