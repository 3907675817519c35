/**
 * The poll schedule of the task tracker: one timer for all tracked tasks, armed for the earliest
 * due poll (a binary min-heap, not a sweep over every task), per-agent concurrency limits, never
 * two polls of one task at once, a gently growing interval while a task runs, and exponential
 * backoff after errors.
 */

/** What a poll found. */
export type PollResult = 'terminal' | 'pending';

/** Options of {@link PollScheduler}. */
export interface PollSchedulerOptions {
  /** Polls one task (a `GetTask` and handing the answer on); resolves whether it is finished. */
  poll(agent: string, taskId: string): Promise<PollResult>;
  /** Receives a poll that threw; the task is retried with backoff. */
  onError?(agent: string, taskId: string, error: unknown): void;
  /** First delay between polls of a task (default 1 s). */
  intervalMs?: number;
  /** Most delay between polls, also the backoff cap (default 30 s). */
  maxIntervalMs?: number;
  /** Factor the interval grows by after each pending poll (default 1.5). */
  growth?: number;
  /** Most polls in flight per agent (default 4). */
  perAgentConcurrency?: number;
  now?: () => number;
}

interface Entry {
  agent: string;
  taskId: string;
  key: string;
  due: number;
  interval: number;
  failures: number;
  /** Position in the heap; -1 while not scheduled (polling, or waiting for an agent slot). */
  index: number;
}

const keyOf = (agent: string, taskId: string): string => `${agent}\u0000${taskId}`;

/** See the module comment. */
export class PollScheduler {
  readonly #o: Required<Omit<PollSchedulerOptions, 'onError'>> &
    Pick<PollSchedulerOptions, 'onError'>;
  readonly #entries = new Map<string, Entry>();
  readonly #heap: Entry[] = [];
  readonly #active = new Map<string, number>();
  readonly #waiting = new Map<string, Entry[]>();
  readonly #polling = new Set<string>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerDue = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(options: PollSchedulerOptions) {
    this.#o = {
      intervalMs: 1000,
      maxIntervalMs: 30_000,
      growth: 1.5,
      perAgentConcurrency: 4,
      now: Date.now,
      ...options,
    };
  }

  /** Tasks followed (scheduled, waiting for a slot, or being polled). */
  get size(): number {
    return this.#entries.size;
  }

  /** Polls in flight right now. */
  get polling(): number {
    return this.#polling.size;
  }

  /** Follows a task: its first poll is due after `delayMs` (default: the interval). */
  add(agent: string, taskId: string, delayMs = this.#o.intervalMs): void {
    const key = keyOf(agent, taskId);
    if (this.#entries.has(key) || this.#stopped) return;
    const entry: Entry = {
      agent,
      taskId,
      key,
      due: this.#o.now() + delayMs,
      interval: this.#o.intervalMs,
      failures: 0,
      index: -1,
    };
    this.#entries.set(key, entry);
    this.#push(entry);
    this.#arm();
  }

  /** Stops following a task (it finished on another path). */
  remove(agent: string, taskId: string): void {
    const entry = this.#entries.get(keyOf(agent, taskId));
    if (entry === undefined) return;
    this.#entries.delete(entry.key);
    if (entry.index >= 0) this.#removeAt(entry.index);
    const queue = this.#waiting.get(agent);
    const at = queue?.indexOf(entry) ?? -1;
    if (at >= 0) queue!.splice(at, 1);
  }

  /** Polls a task as soon as a slot allows (a status-only push asks for the artifacts). */
  pollNow(agent: string, taskId: string): void {
    const entry = this.#entries.get(keyOf(agent, taskId));
    if (entry === undefined || entry.index < 0) return; // in flight or queued: it polls soon anyway
    this.#removeAt(entry.index);
    entry.due = this.#o.now();
    this.#push(entry);
    this.#arm();
  }

  /** Stops the schedule; polls in flight finish, nothing new starts. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    if (this.#stopped) return;
    const next = this.#heap[0];
    if (next === undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerDue = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.#timer !== undefined && this.#timerDue <= next.due) return;
    clearTimeout(this.#timer);
    this.#timerDue = next.due;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, next.due - this.#o.now()));
    this.#timer.unref?.();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    const now = this.#o.now();
    while (this.#heap.length > 0 && this.#heap[0]!.due <= now) {
      const entry = this.#pop();
      this.#start(entry);
    }
    this.#arm();
  }

  #start(entry: Entry): void {
    const active = this.#active.get(entry.agent) ?? 0;
    if (active >= this.#o.perAgentConcurrency) {
      const queue = this.#waiting.get(entry.agent) ?? [];
      queue.push(entry);
      this.#waiting.set(entry.agent, queue);
      return;
    }
    this.#active.set(entry.agent, active + 1);
    this.#polling.add(entry.key);
    let result: PollResult | 'error';
    this.#o
      .poll(entry.agent, entry.taskId)
      .then(
        (r) => (result = r),
        (error: unknown) => {
          result = 'error';
          this.#o.onError?.(entry.agent, entry.taskId, error);
        },
      )
      .finally(() => {
        this.#polling.delete(entry.key);
        this.#release(entry.agent);
        this.#after(entry, result);
      })
      .catch(() => undefined);
  }

  #release(agent: string): void {
    const active = (this.#active.get(agent) ?? 1) - 1;
    if (active <= 0) this.#active.delete(agent);
    else this.#active.set(agent, active);
    const queue = this.#waiting.get(agent);
    const next = queue?.shift();
    if (queue?.length === 0) this.#waiting.delete(agent);
    if (next !== undefined && !this.#stopped) this.#start(next);
  }

  #after(entry: Entry, result: PollResult | 'error'): void {
    // Removed meanwhile (or removed and added again: the new entry schedules itself).
    if (this.#entries.get(entry.key) !== entry) return;
    if (result === 'terminal') {
      this.#entries.delete(entry.key);
      return;
    }
    if (result === 'error') {
      entry.failures += 1;
      entry.due =
        this.#o.now() + Math.min(this.#o.maxIntervalMs, this.#o.intervalMs * 2 ** entry.failures);
    } else {
      entry.failures = 0;
      entry.due = this.#o.now() + entry.interval;
      entry.interval = Math.min(this.#o.maxIntervalMs, Math.round(entry.interval * this.#o.growth));
    }
    if (this.#stopped) return;
    this.#push(entry);
    this.#arm();
  }

  // A binary min-heap on `due`, each entry knowing its index so removal is O(log n).
  #push(entry: Entry): void {
    entry.index = this.#heap.length;
    this.#heap.push(entry);
    this.#up(entry.index);
  }

  #pop(): Entry {
    const top = this.#heap[0]!;
    this.#removeAt(0);
    return top;
  }

  #removeAt(index: number): void {
    const heap = this.#heap;
    const removed = heap[index]!;
    const last = heap.pop()!;
    removed.index = -1;
    if (index < heap.length) {
      heap[index] = last;
      last.index = index;
      this.#down(index);
      this.#up(index);
    }
  }

  #up(index: number): void {
    const heap = this.#heap;
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.due <= heap[i]!.due) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(index: number): void {
    const heap = this.#heap;
    let i = index;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = i;
      if (l < heap.length && heap[l]!.due < heap[smallest]!.due) smallest = l;
      if (r < heap.length && heap[r]!.due < heap[smallest]!.due) smallest = r;
      if (smallest === i) return;
      this.#swap(i, smallest);
      i = smallest;
    }
  }

  #swap(a: number, b: number): void {
    const heap = this.#heap;
    const x = heap[a]!;
    const y = heap[b]!;
    heap[a] = y;
    heap[b] = x;
    x.index = b;
    y.index = a;
  }
}
