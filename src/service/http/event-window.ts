/**
 * The live-event hub's retained window: the newest events' frames kept for `Last-Event-ID` resume,
 * bounded in events and in bytes (the oldest go first), and, where a durable log stands behind the
 * bus, the events not from it that the window no longer holds (a client behind them is told).
 */

/** An event the hub received, as the window keeps it. */
export interface Entry {
  seq: number;
  topic: string;
  /** The outbox row the event was relayed from (in-memory bus with a durable log). */
  outbox: number | undefined;
  /** The last outbox position the hub had seen when the event came (its own, if it has one). */
  mark: number;
  /**
   * The SSE frame, encoded on arrival: its size is what the window is bounded by, and the parsed
   * event is not kept (it would hold several times its size).
   */
  bytes: Buffer;
}

/** An event not from the outbox that is no longer retained. */
export interface Lost {
  seq: number;
  mark: number;
  topic: string;
}

/** Lost events remembered by topic (past them, any client behind is told it may miss some). */
const LOST_KEPT = 1024;

/** The retained window of one hub: a ring of entries, oldest first. */
export class RetainedWindow {
  readonly #retain: number;
  readonly #retainBytes: number;
  /** A durable log stands behind the bus: events not from it are remembered once dropped. */
  readonly #durable: boolean;
  readonly #ring: (Entry | undefined)[];
  #head = 0; // next slot
  #size = 0;
  #bytes = 0;
  /**
   * The newest events not from the outbox that are no longer retained (resume cannot give them),
   * by topic, so only a client whose filter matches one is told; `#lostBeyond` is the newest one
   * too old even for this list.
   */
  readonly #lostDirect: Lost[] = [];
  #lostBeyond: Lost = { seq: 0, mark: -1, topic: '' };

  constructor(limits: { retain: number; retainBytes: number }, durable: boolean) {
    this.#retain = limits.retain;
    this.#retainBytes = limits.retainBytes;
    this.#durable = durable;
    this.#ring = new Array<Entry | undefined>(limits.retain);
  }

  /** Entries retained. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the frames retained. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The newest events not from the outbox that are no longer retained, oldest first. */
  get lostDirect(): readonly Lost[] {
    return this.#lostDirect;
  }

  /** The newest lost event too old even for {@link lostDirect}. */
  get lostBeyond(): Lost {
    return this.#lostBeyond;
  }

  /** Keeps `entry`, dropping the oldest entries until it fits both bounds. */
  add(entry: Entry): void {
    // Oldest first, until the entry fits both bounds (one larger than the whole window is sent
    // to the clients there are, and not kept).
    if (entry.bytes.length <= this.#retainBytes) {
      while (
        this.#size > 0 &&
        (this.#size >= this.#retain || this.#bytes + entry.bytes.length > this.#retainBytes)
      ) {
        this.#evict();
      }
      this.#ring[this.#head] = entry;
      this.#head = (this.#head + 1) % this.#retain;
      this.#size += 1;
      this.#bytes += entry.bytes.length;
    } else if (entry.outbox === undefined && this.#durable) {
      this.#lose(entry);
    }
  }

  /** The oldest entry retained. */
  oldest(): Entry | undefined {
    return this.#size === 0
      ? undefined
      : this.#ring[(this.#head - this.#size + this.#retain) % this.#retain];
  }

  /** Retained entries after `seq`, oldest first. */
  after(seq: number): Entry[] {
    const out: Entry[] = [];
    for (let i = this.#size; i > 0; i -= 1) {
      const entry = this.#ring[(this.#head - i + this.#retain) % this.#retain]!;
      if (entry.seq > seq) out.push(entry);
    }
    return out;
  }

  /** Drops the oldest retained entry. */
  #evict(): void {
    const at = (this.#head - this.#size + this.#retain) % this.#retain;
    const entry = this.#ring[at]!;
    this.#bytes -= entry.bytes.length;
    if (entry.outbox === undefined && this.#durable) this.#lose(entry);
    this.#ring[at] = undefined;
    this.#size -= 1;
  }

  #lose(entry: Lost): void {
    this.#lostDirect.push({ seq: entry.seq, mark: entry.mark, topic: entry.topic });
    if (this.#lostDirect.length > LOST_KEPT) this.#lostBeyond = this.#lostDirect.shift()!;
  }
}
