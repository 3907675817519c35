/**
 * Runs at most `limit` tasks at once; others wait in FIFO order. A finishing task hands its slot
 * straight to the next waiter, so a newcomer can never slip in between and exceed the limit.
 *
 * @example
 * ```ts
 * const run = createSemaphore(16);
 * await Promise.all(urls.map((u) => run(() => fetch(u))));
 * ```
 */
export function createSemaphore(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (active < limit) active += 1;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next === undefined) active -= 1;
      else next();
    }
  };
}
