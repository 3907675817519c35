/**
 * Remembers event ids for a time window (and at most `maxIds` of them), the in-memory analogue of
 * JetStream's stream `duplicate_window`.
 *
 * Expiry runs off a FIFO queue of (id, expiry) in insertion order, not off iterating the `Map`
 * from its front: a `Map` keeps deleted slots until it rehashes, so walking it from the front
 * after many evictions skips thousands of holes on every `add` once the window is full.
 */
export class DuplicateWindow {
  readonly #expiresAt = new Map<string, number>();
  /** Ids in insertion order, with the expiry they were added with; `#head` is the oldest. */
  #queue: { id: string; expiresAt: number }[] = [];
  #head = 0;
  readonly #windowMs: number;
  readonly #maxIds: number;
  readonly #now: () => number;

  constructor(windowMs: number, maxIds: number, now: () => number = Date.now) {
    this.#windowMs = windowMs;
    this.#maxIds = maxIds;
    this.#now = now;
  }

  /** True when `id` was recorded within the window. */
  has(id: string): boolean {
    const expiresAt = this.#expiresAt.get(id);
    if (expiresAt === undefined) return false;
    if (expiresAt <= this.#now()) {
      this.#expiresAt.delete(id);
      return false;
    }
    return true;
  }

  /** Records `id` as seen now. */
  add(id: string): void {
    const now = this.#now();
    const expiresAt = now + this.#windowMs;
    this.#expiresAt.set(id, expiresAt);
    this.#queue.push({ id, expiresAt });
    while (this.#head < this.#queue.length) {
      const oldest = this.#queue[this.#head]!;
      if (oldest.expiresAt > now && this.#expiresAt.size <= this.#maxIds) break;
      this.#head += 1;
      // Only the entry's latest addition counts: a re-added id keeps its newer expiry.
      if (this.#expiresAt.get(oldest.id) === oldest.expiresAt) this.#expiresAt.delete(oldest.id);
    }
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  get size(): number {
    return this.#expiresAt.size;
  }
}
