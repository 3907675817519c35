/**
 * Remembers event ids for a time window (and at most `maxIds` of them), the in-memory analogue of
 * JetStream's stream `duplicate_window`.
 *
 * A ring of `maxIds` slots holds the ids in insertion order with their expiries; an open-addressed
 * table (linear probing, at most half full) finds an id's slot from a 32-bit fingerprint of the
 * id. Everything lives in typed arrays, so a check touches a cache line or two of the table and
 * compares ids only when their fingerprints match — a `Map` of 100,000 strings cost several cache
 * misses per check (its buckets, its entries and the strings compared along a chain).
 *
 * An id of 32 lowercase hex digits (every deterministic event id) is kept as four 32-bit words in
 * the ring, not as a string: a window of 100,000 strings made every id outlive two garbage
 * collections and be copied by both, which cost more than everything else the check does. Other
 * ids are kept as they are. Expiry and the size bound both evict from the ring's oldest slot.
 */
export class DuplicateWindow {
  /**
   * Slot `seq % capacity` of the ring: the id of addition number `seq` when it is kept as a
   * string, `null` when it is kept as words in {@link #words}, `undefined` once it is gone.
   */
  readonly #ids: (string | null | undefined)[] = [];
  /** The expiry and the fingerprint of each ring slot; the words of a hex id at `4 * slot`. */
  #expiries: Float64Array;
  #fingerprints: Int32Array;
  #words: Int32Array;
  /**
   * The table: entry `i` is `[fingerprint, slot + 1]` at `2i`, `2i + 1`; `slot + 1 === 0` marks an
   * empty entry. Its length is a power of two at least twice the live ids.
   */
  #table: Int32Array;
  #mask: number;
  /** Live ids (in the table). */
  #size = 0;
  /** Sequence number of the oldest slot still in the ring, and of the next addition. */
  #head = 0;
  #next = 0;
  /**
   * The id last looked up: whether it is hex, its words (`#scratch[0..3]`) and its fingerprint
   * (`#scratch[4]`, in the typed array so a 32-bit value is not boxed on every lookup).
   */
  #hex = false;
  readonly #scratch = new Int32Array(5);
  readonly #windowMs: number;
  readonly #capacity: number;
  readonly #now: () => number;

  constructor(windowMs: number, maxIds: number, now: () => number = Date.now) {
    this.#windowMs = windowMs;
    this.#capacity = Math.max(1, Math.floor(maxIds));
    // Grown on demand up to the capacity: a large window that sees few ids stays small.
    const ring = Math.min(this.#capacity, 1024);
    this.#expiries = new Float64Array(ring);
    this.#fingerprints = new Int32Array(ring);
    this.#words = new Int32Array(ring * 4);
    const entries = tableEntriesFor(ring);
    this.#table = new Int32Array(entries * 2);
    this.#mask = entries - 1;
    this.#now = now;
  }

  /**
   * True when `id` was recorded within the window. `now` is the caller's clock reading when it
   * has one (a publish reads the clock once for the check and the record).
   */
  has(id: string, now: number = this.#now()): boolean {
    const at = this.#find(id);
    if (at === -1) return false;
    const slot = this.#table[at * 2 + 1]! - 1;
    if (this.#expiries[slot]! <= now) {
      this.#forget(at, slot);
      return false;
    }
    return true;
  }

  /**
   * Records `id` as seen at `now` unless it already was within the window: true when it was new
   * (and is now recorded), false for a duplicate. One fingerprint and one probe for the check and
   * the record.
   */
  admit(id: string, now: number = this.#now()): boolean {
    const at = this.#find(id);
    if (at !== -1) {
      const slot = this.#table[at * 2 + 1]! - 1;
      if (this.#expiries[slot]! > now) return false;
      this.#forget(at, slot);
    }
    this.#record(id, now);
    return true;
  }

  /** Records `id` as seen at `now` (default: the clock); a newer addition replaces an older one. */
  add(id: string, now: number = this.#now()): void {
    const at = this.#find(id);
    if (at !== -1) this.#forget(at, this.#table[at * 2 + 1]! - 1);
    this.#record(id, now);
  }

  get size(): number {
    return this.#size;
  }

  /** Records the id {@link #find} just looked up (its fingerprint and words are still there). */
  #record(id: string, now: number): void {
    const capacity = this.#capacity;
    // Expired slots out first (expiries grow with the sequence for a clock that does not go
    // back), then the oldest when the ring is full.
    while (this.#head < this.#next && this.#expiries[this.#head % capacity]! <= now) this.#evict();
    if (this.#next - this.#head >= capacity) this.#evict();
    const seq = this.#next;
    this.#next += 1;
    const slot = seq % capacity;
    if (slot >= this.#expiries.length) this.#grow();
    if (this.#hex) {
      this.#ids[slot] = null;
      const words = this.#words;
      const scratch = this.#scratch;
      const at = slot * 4;
      words[at] = scratch[0]!;
      words[at + 1] = scratch[1]!;
      words[at + 2] = scratch[2]!;
      words[at + 3] = scratch[3]!;
    } else {
      this.#ids[slot] = id;
    }
    this.#expiries[slot] = now + this.#windowMs;
    const print = this.#scratch[4]!;
    this.#fingerprints[slot] = print;
    this.#insert(print, slot);
    this.#size += 1;
  }

  /**
   * The table entry of `id`, or -1. Leaves the id's fingerprint in `#scratch[4]` and, for a hex id,
   * its words in `#scratch`, for {@link #record}.
   */
  #find(id: string): number {
    const hex = readHexWords(id, this.#scratch);
    const print = hex ? wordsFingerprint(this.#scratch) : textFingerprint(id);
    this.#hex = hex;
    this.#scratch[4] = print;
    const table = this.#table;
    const mask = this.#mask;
    for (let i = print & mask; ; i = (i + 1) & mask) {
      const stored = table[i * 2 + 1]!;
      if (stored === 0) return -1;
      if (table[i * 2] === print && this.#holds(stored - 1, id, hex)) return i;
    }
  }

  /** True when ring slot `slot` holds `id` (kept as words when `hex`, else as the string). */
  #holds(slot: number, id: string, hex: boolean): boolean {
    const kept = this.#ids[slot];
    if (!hex) return kept === id;
    if (kept !== null) return false;
    const words = this.#words;
    const scratch = this.#scratch;
    const at = slot * 4;
    return (
      words[at] === scratch[0] &&
      words[at + 1] === scratch[1] &&
      words[at + 2] === scratch[2] &&
      words[at + 3] === scratch[3]
    );
  }

  #insert(print: number, slot: number): void {
    const table = this.#table;
    const mask = this.#mask;
    let i = print & mask;
    while (table[i * 2 + 1] !== 0) i = (i + 1) & mask;
    table[i * 2] = print;
    table[i * 2 + 1] = slot + 1;
  }

  /** Drops the id of table entry `at` (ring slot `slot`): out of the table, its slot emptied. */
  #forget(at: number, slot: number): void {
    this.#ids[slot] = undefined;
    this.#remove(at);
    this.#size -= 1;
  }

  /**
   * Empties table entry `at` and moves later entries of its probe run back into the gap, so a
   * lookup never stops early at a hole (no tombstones to clean up).
   */
  #remove(at: number): void {
    const table = this.#table;
    const mask = this.#mask;
    let gap = at;
    for (let i = (gap + 1) & mask; table[i * 2 + 1] !== 0; i = (i + 1) & mask) {
      const home = table[i * 2]! & mask;
      // The entry at i may move to the gap when its home is not cyclically in (gap, i].
      const stays = gap <= i ? gap < home && home <= i : gap < home || home <= i;
      if (stays) continue;
      table[gap * 2] = table[i * 2]!;
      table[gap * 2 + 1] = table[i * 2 + 1]!;
      gap = i;
    }
    table[gap * 2] = 0;
    table[gap * 2 + 1] = 0;
  }

  /** The ring fills its slots in order before it wraps, so a slot past the end means "grow". */
  #grow(): void {
    const length = Math.min(this.#capacity, this.#expiries.length * 2);
    const expiries = new Float64Array(length);
    expiries.set(this.#expiries);
    this.#expiries = expiries;
    const fingerprints = new Int32Array(length);
    fingerprints.set(this.#fingerprints);
    this.#fingerprints = fingerprints;
    const words = new Int32Array(length * 4);
    words.set(this.#words);
    this.#words = words;
    // The table follows the ring: at most half full, entries re-placed by their fingerprints.
    const entries = tableEntriesFor(length);
    if (entries * 2 <= this.#table.length) return;
    const old = this.#table;
    this.#table = new Int32Array(entries * 2);
    this.#mask = entries - 1;
    for (let i = 0; i < old.length; i += 2) {
      if (old[i + 1] !== 0) this.#insert(old[i]!, old[i + 1]! - 1);
    }
  }

  /** Drops the oldest slot, and its id unless a newer addition of that id replaced it. */
  #evict(): void {
    const seq = this.#head;
    this.#head += 1;
    const slot = seq % this.#capacity;
    if (this.#ids[slot] === undefined) return;
    // The slot is live, so its table entry exists: found by fingerprint and slot, no id compared.
    const table = this.#table;
    const mask = this.#mask;
    let i = this.#fingerprints[slot]! & mask;
    while (table[i * 2 + 1] !== slot + 1) i = (i + 1) & mask;
    this.#forget(i, slot);
  }
}

/** Table entries for a ring of `slots`: a power of two, at least twice as many. */
function tableEntriesFor(slots: number): number {
  let entries = 8;
  while (entries < slots * 2) entries *= 2;
  return entries;
}

/** The value of each lowercase hex digit by character code below 256; -1 for anything else. */
const HEX_DIGIT = (() => {
  const digits = new Int8Array(256).fill(-1);
  for (let c = 48; c <= 57; c += 1) digits[c] = c - 48;
  for (let c = 97; c <= 102; c += 1) digits[c] = c - 87;
  return digits;
})();

/**
 * Reads an id of exactly 32 lowercase hex digits into four 32-bit words; false (and `words` left
 * partly written) for any other id. The words and the text are one-to-one, so two hex ids are
 * equal exactly when their words are.
 */
function readHexWords(id: string, words: Int32Array): boolean {
  if (id.length !== 32) return false;
  // Every code and every digit OR-ed together: one test at the end instead of one per character.
  let codes = 0;
  let digits = 0;
  for (let w = 0; w < 4; w += 1) {
    let word = 0;
    for (let i = w * 8; i < w * 8 + 8; i += 1) {
      const c = id.charCodeAt(i);
      const digit = HEX_DIGIT[c & 0xff]!;
      codes |= c;
      digits |= digit;
      word = (word << 4) | (digit & 0xf);
    }
    words[w] = word;
  }
  return codes < 256 && digits >= 0;
}

/** The final avalanche of MurmurHash3: every input bit moves about half the output bits. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Fingerprint of a hex id from its words (all four, so ids differing in any digit spread). */
function wordsFingerprint(words: Int32Array): number {
  return mix(mix(mix(mix(words[0]!) ^ words[1]!) ^ words[2]!) ^ words[3]!);
}

/**
 * Fingerprint of any other id: FNV-1a over its UTF-16 units, then the avalanche so the low bits
 * (the table position) depend on every unit. Equal fingerprints are confirmed by comparing the
 * ids, so a collision costs a comparison, never a wrong answer.
 */
function textFingerprint(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i += 1) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return mix(h);
}
