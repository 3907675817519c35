/**
 * Remembers event ids for a time window (and at most `maxIds` of them), the in-memory analogue of
 * JetStream's stream `duplicate_window`.
 *
 * A ring of `maxIds` slots holds the ids in insertion order with their expiries (a
 * `Float64Array`), and the `Map` maps an id to the sequence number of its latest slot — a small
 * integer, no object per id. Expiry and the size bound both evict from the ring's oldest slot, so
 * nothing iterates the `Map` (it keeps deleted slots until it rehashes) and nothing per id is left
 * for the garbage collector but the id string itself.
 */
export class DuplicateWindow {
  /** id → sequence number of its latest addition. */
  readonly #seqOf = new Map<string, number>();
  /** Slot `seq % capacity`: the id and its expiry of addition number `seq`. */
  readonly #ids: (string | undefined)[] = [];
  #expiries: Float64Array;
  /** Sequence number of the oldest slot still in the ring, and of the next addition. */
  #head = 0;
  #next = 0;
  readonly #windowMs: number;
  readonly #capacity: number;
  readonly #now: () => number;

  constructor(windowMs: number, maxIds: number, now: () => number = Date.now) {
    this.#windowMs = windowMs;
    this.#capacity = Math.max(1, Math.floor(maxIds));
    // Grown on demand up to the capacity: a large window that sees few ids stays small.
    this.#expiries = new Float64Array(Math.min(this.#capacity, 1024));
    this.#now = now;
  }

  /**
   * True when `id` was recorded within the window. `now` is the caller's clock reading when it
   * has one (a publish reads the clock once for the check and the record).
   */
  has(id: string, now: number = this.#now()): boolean {
    const seq = this.#seqOf.get(id);
    if (seq === undefined) return false;
    if (this.#expiries[seq % this.#capacity]! <= now) {
      this.#seqOf.delete(id);
      return false;
    }
    return true;
  }

  /** Records `id` as seen at `now` (default: the clock). */
  add(id: string, now: number = this.#now()): void {
    const capacity = this.#capacity;
    // Expired slots out first (expiries grow with the sequence for a clock that does not go
    // back), then the oldest when the ring is full.
    while (this.#head < this.#next && this.#expiries[this.#head % capacity]! <= now) this.#evict();
    if (this.#next - this.#head >= capacity) this.#evict();
    const seq = this.#next;
    this.#next += 1;
    const slot = seq % capacity;
    this.#grow(slot);
    this.#ids[slot] = id;
    this.#expiries[slot] = now + this.#windowMs;
    this.#seqOf.set(id, seq);
  }

  get size(): number {
    return this.#seqOf.size;
  }

  /** The ring fills its slots in order before it wraps, so a slot past the end means "grow". */
  #grow(slot: number): void {
    const current = this.#expiries;
    if (slot < current.length) return;
    const grown = new Float64Array(Math.min(this.#capacity, current.length * 2));
    grown.set(current);
    this.#expiries = grown;
  }

  /** Drops the oldest slot; its id goes only when that slot is the id's latest addition. */
  #evict(): void {
    const seq = this.#head;
    this.#head += 1;
    const slot = seq % this.#capacity;
    const id = this.#ids[slot];
    this.#ids[slot] = undefined;
    if (id !== undefined && this.#seqOf.get(id) === seq) this.#seqOf.delete(id);
  }
}
