/**
 * Remembers event ids for a time window (and at most `maxIds` of them), the in-memory analogue of
 * JetStream's stream `duplicate_window`.
 */
export class DuplicateWindow {
  // Insertion order is expiry order, so the oldest entries are always at the front.
  readonly #expiresAt = new Map<string, number>();
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
    this.#expiresAt.delete(id);
    this.#expiresAt.set(id, now + this.#windowMs);
    for (const [oldest, expiresAt] of this.#expiresAt) {
      if (expiresAt > now && this.#expiresAt.size <= this.#maxIds) break;
      this.#expiresAt.delete(oldest);
    }
  }

  get size(): number {
    return this.#expiresAt.size;
  }
}
