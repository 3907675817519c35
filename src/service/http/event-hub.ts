/**
 * The live-event hub behind `GET /api/events`: one bus subscription per gateway, each event
 * serialised once and fanned out to every Server-Sent-Events client whose NATS-syntax filter
 * matches, with a retained window for `Last-Event-ID` resume and a bounded queue per client (a
 * slow client is cut, never the gateway). Both are bounded in bytes as well as in events — the
 * retained window, each client's queue and all clients' queues together — so the memory the feed
 * holds does not grow with the size of events; the oldest retained events go first, and a client
 * past its budget is cut with a final `event: error` frame naming why.
 *
 * Event ids are positions in a log. On NATS JetStream they are the stream sequence, the same on
 * every replica: a client may reconnect to any replica, and one further behind than the retained
 * window gets its own consumer starting at its position, so it misses nothing the stream still
 * retains. On the in-process bus, which keeps no log, they are `<boot>-<n>` positions in this
 * process's window. Given the store's durable log (`log`: the outbox, whose rows are kept for
 * `retention.outbox`), they are `<boot>-<n>-<o>`, where `o` is the last outbox position the hub
 * had seen: a client further behind than the window, or back after a restart, is answered from
 * the durable log after `o` (paced by how fast it reads), merged with the window's events that
 * did not come through the outbox, then goes live. Only events published outside the outbox
 * (system errors, some ops alerts) can be gone; a client that may have missed some is told so
 * with a `fleetgate.gap` event, as is one whose position cannot be resumed at all.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Delivery, EventBus, Subscription } from '../../bus/index.js';
import { TopicTrie, parsePattern } from '../../bus/index.js';
import type { EventEnvelope } from '../../protocol/index.js';
import type { OutboxLog } from '../../bus/index.js';
import { DEFAULT_EVENT_BYTES } from '../config-server.js';

/** Options of {@link createEventHub}. */
export interface EventHubOptions {
  bus: Pick<EventBus, 'subscribe'>;
  /** Events kept for resume. */
  retain: number;
  /** Bytes of frames kept for resume (the oldest go first past it; default 32 MiB). */
  retainBytes?: number;
  /** Most frames queued for one client before it is cut. */
  clientBuffer: number;
  /** Most bytes queued for one client before it is cut (default 8 MiB). */
  clientBufferBytes?: number;
  /**
   * Most bytes queued for all clients together: past it the client furthest behind is cut
   * (default 48 MiB).
   */
  bufferBytes?: number;
  heartbeatMs: number;
  maxClients: number;
  /** True when the bus delivers log positions (JetStream): ids are stream sequences. */
  sequenced: boolean;
  /**
   * The durable log behind a bus that keeps none (the store's outbox; `Gateway.eventLog`):
   * resumes past the window read from it. Not used when `sequenced`.
   */
  log?: OutboxLog | undefined;
  onError: (error: unknown, where: string) => void;
}

/** Counters of the hub, for metrics. */
export interface EventHubStats {
  clients: number;
  delivered: number;
  cut: number;
  retained: number;
  /** Bytes of the frames retained for resume. */
  retainedBytes: number;
  /** Bytes queued for clients that are behind. */
  queuedBytes: number;
}

/** The live-event hub. */
export interface EventHub {
  start(): Promise<void>;
  /**
   * Streams events matching `patterns` to `res` (already answered 200 with SSE headers) until
   * the client goes or the hub closes, resuming after `lastEventId` when it is given.
   */
  attach(res: ServerResponse, patterns: readonly string[], lastEventId?: string): Promise<void>;
  /** True when another client may attach. */
  hasRoom(): boolean;
  /** Called with every event the hub receives (the dispatch watcher, metrics). */
  listen(listener: (event: EventEnvelope) => void): () => void;
  stats(): EventHubStats;
  /** Ends every stream (each client is told to come back) and unsubscribes. */
  close(): Promise<void>;
}

interface Entry {
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

const CRLF = Buffer.from('\r\n');

/**
 * Bytes written to many clients at once, encoded once: `data` as it goes on a close-delimited
 * stream, `chunk()` as one HTTP/1.1 chunk (size line, data, CRLF) for a chunked one.
 */
class SharedBytes {
  readonly data: Buffer;
  readonly events: number;
  #chunk: Buffer | undefined;

  constructor(data: Buffer, events: number) {
    this.data = data;
    this.events = events;
  }

  chunk(): Buffer {
    this.#chunk ??= Buffer.concat([
      Buffer.from(`${this.data.length.toString(16)}\r\n`, 'latin1'),
      this.data,
      CRLF,
    ]);
    return this.#chunk;
  }
}

/**
 * One SSE client's stream with its bounded queue.
 *
 * Once the response has started, frames go straight to its socket, one write each, as the bytes
 * the response itself would write (an HTTP/1.1 chunk, or the data alone on a close-delimited
 * stream): a flush is encoded and framed once for all its clients, where `res.write` would encode
 * and frame it again for each. That holds only while the response has nothing of its own waiting
 * (it wrote its headers to the socket and buffers nothing); otherwise, and for a body-less `HEAD`
 * answer, every write goes through the response. The response still ends the stream
 * (`res.end`), after everything written here.
 */
class SseClient {
  readonly #res: ServerResponse;
  readonly #limit: number;
  readonly #limitBytes: number;
  /** Told of every change of the bytes queued here (the hub keeps their sum). */
  readonly #onQueued: (delta: number) => void;
  /** The socket written to directly, once that is known to be safe. */
  #socket: Socket | undefined;
  #chunked = false;
  readonly #queue: Buffer[] = [];
  /** Events in `#queue` (a chunk may hold several). */
  #queued = 0;
  /** Bytes in `#queue`. */
  #queuedBytes = 0;
  #blocked = false;
  /** Waiting for the socket to take what is queued (a paced replay). */
  #drainWaiters: (() => void)[] = [];
  closed = false;
  onClose: (() => void) | undefined;
  onCut: (() => void) | undefined;

  constructor(
    res: ServerResponse,
    limits: { events: number; bytes: number },
    onQueued: (delta: number) => void,
  ) {
    this.#res = res;
    this.#limit = limits.events;
    this.#limitBytes = limits.bytes;
    this.#onQueued = onQueued;
    res.on('close', () => this.#closed());
  }

  /** The first bytes, through the response (they carry its headers). */
  start(text: string): void {
    if (this.closed) return;
    const res = this.#res;
    const ok = res.write(text);
    const socket = res.socket;
    if (
      socket !== null &&
      res.headersSent &&
      res.req.method !== 'HEAD' &&
      res.writableLength === socket.writableLength
    ) {
      this.#socket = socket;
      this.#chunked = res.chunkedEncoding;
      socket.on('drain', () => this.#flush());
    } else {
      res.on('drain', () => this.#flush());
    }
    if (!ok) this.#blocked = true;
  }

  /**
   * Writes bytes shared with other clients, or queues them while the socket is full; a client
   * with more than its limit of events queued is cut.
   */
  send(bytes: SharedBytes): void {
    if (this.closed) return;
    if (this.#blocked) {
      this.#queue.push(bytes.data);
      this.#queued += bytes.events;
      this.#queuedBytes += bytes.data.length;
      this.#onQueued(bytes.data.length);
      if (this.#queuedBytes > this.#limitBytes) {
        this.cut(
          'client-buffer-bytes',
          `More than ${this.#limitBytes} bytes of events were waiting for this client (events.clientBufferBytes)`,
        );
      } else if (this.#queued > this.#limit) {
        this.cut(
          'client-buffer-events',
          `More than ${this.#limit} events were waiting for this client (events.clientBuffer)`,
        );
      }
      return;
    }
    this.#write(bytes);
  }

  /** Text for this client alone (a replay, a control frame). */
  sendText(text: string, events = 1): void {
    this.send(new SharedBytes(Buffer.from(text), events));
  }

  /** A comment line, only when nothing waits (an idle stream's heartbeat). */
  heartbeat(bytes: SharedBytes): void {
    if (!this.closed && !this.#blocked) this.#write(bytes);
  }

  /** Bytes waiting for this client. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** Resolves once the socket took everything written so far, or the stream ended. */
  async drained(): Promise<void> {
    while (this.#blocked && !this.closed) {
      await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
    }
  }

  end(frame?: string): void {
    if (this.closed) return;
    this.closed = true;
    this.#drop();
    this.#res.end(frame);
    // A client that does not read is not waited for.
    setTimeout(() => this.#res.destroy(), 5000).unref();
    this.#wake();
    this.onClose?.();
  }

  #write(bytes: SharedBytes): void {
    const ok =
      this.#socket === undefined
        ? this.#res.write(bytes.data)
        : this.#socket.write(this.#chunked ? bytes.chunk() : bytes.data);
    if (!ok) this.#blocked = true;
  }

  #flush(): void {
    this.#blocked = false;
    if (this.#queue.length > 0 && !this.closed) {
      // Everything queued in one write.
      const data = this.#queue.length === 1 ? this.#queue[0]! : Buffer.concat(this.#queue);
      this.#drop();
      this.#write(new SharedBytes(data, 0));
    }
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#drainWaiters;
    if (waiters.length === 0) return;
    this.#drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * Ends the stream of a client that fell behind with a final `event: error` frame saying why
   * (its queue is dropped, not sent: the client resumes from its last id on reconnect).
   */
  cut(reason: string, message: string): void {
    if (this.closed) return;
    this.onCut?.();
    this.#drop();
    this.end(
      controlFrame('error', {
        code: 'FLEETGATE_EVENTS_CLIENT_TOO_SLOW',
        reason,
        message: `${message}; reconnect with Last-Event-ID to resume.`,
      }),
    );
  }

  #drop(): void {
    this.#queue.length = 0;
    this.#queued = 0;
    if (this.#queuedBytes !== 0) this.#onQueued(-this.#queuedBytes);
    this.#queuedBytes = 0;
  }

  #closed(): void {
    if (this.closed) return;
    this.closed = true;
    this.#drop();
    this.#wake();
    this.onClose?.();
  }
}

function controlFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Distinct topics whose match a group remembers. */
const MATCH_CACHE_LIMIT = 1024;

/** A filter shared by every client with the same patterns. */
interface Group {
  key: string;
  all: boolean;
  trie: TopicTrie<true>;
  /** Topic → matches, so a repeated topic is not walked through the trie again. */
  matched: Map<string, boolean>;
  clients: Set<SseClient>;
  /** Frames matched since the last flush: written to every client in one chunk. */
  pending: Buffer[];
}

/**
 * Longest time frames wait for a flush while the hub is busy writing (see `scheduleFlush`), in
 * milliseconds: the most a busy hub adds to an event's latency.
 */
const MAX_COALESCE_MS = 20;

/** Events read from the durable log at a time when a client resumes from it. */
const LOG_PAGE = 500;

/** An event not from the outbox that is no longer retained. */
interface Lost {
  seq: number;
  mark: number;
  topic: string;
}

/** Lost events remembered by topic (past them, any client behind is told it may miss some). */
const LOST_KEPT = 1024;

/** Builds the hub of one gateway. */
export function createEventHub(given: EventHubOptions): EventHub {
  const options = { ...DEFAULT_EVENT_BYTES, ...given };
  const boot = randomBytes(4).toString('hex');
  const ring: (Entry | undefined)[] = new Array<Entry | undefined>(options.retain);
  let head = 0; // next slot
  let size = 0;
  let retainedBytes = 0;
  let queuedBytes = 0;
  let counter = 0;
  let lastSeq = 0;
  const groups = new Map<string, Group>();
  const listeners = new Set<(event: EventEnvelope) => void>();
  const catchUps = new Set<Subscription>();
  let subscription: Subscription | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let clients = 0;
  let delivered = 0;
  let cut = 0;
  let closed = false;
  let catchUpNames = 0;
  /** A durable log to resume from (an in-memory bus's outbox). */
  const log = options.sequenced ? undefined : options.log;
  /** The last outbox position seen. */
  let watermark = 0;
  /**
   * The newest events not from the outbox that are no longer retained (resume cannot give them),
   * by topic, so only a client whose filter matches one is told; `lostBeyond` is the newest one
   * too old even for this list.
   */
  const lostDirect: Lost[] = [];
  let lostBeyond: Lost = { seq: 0, mark: -1, topic: '' };
  const lose = (entry: Lost): void => {
    lostDirect.push({ seq: entry.seq, mark: entry.mark, topic: entry.topic });
    if (lostDirect.length > LOST_KEPT) lostBeyond = lostDirect.shift()!;
  };
  /** Clients being answered from the durable log, with the live entries that came meanwhile. */
  const catchingUp = new Map<SseClient, { group: Group; entries: Entry[]; bytes: number }>();

  const idOf = (seq: number, mark: number): string =>
    options.sequenced
      ? String(seq)
      : log === undefined
        ? `${boot}-${seq}`
        : `${boot}-${seq}-${mark}`;
  const frameOf = (id: string, event: EventEnvelope): string =>
    `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;
  const bytesOf = (entry: Entry): Buffer => entry.bytes;

  const groupOf = (patterns: readonly string[]): Group => {
    const sorted = [...new Set(patterns)].sort();
    const key = sorted.join(',');
    let group = groups.get(key);
    if (group === undefined) {
      const trie = new TopicTrie<true>();
      for (const p of sorted) trie.add(p, true);
      group = {
        key,
        all: sorted.includes('>'),
        trie,
        matched: new Map(),
        clients: new Set(),
        pending: [],
      };
      groups.set(key, group);
    }
    return group;
  };
  const matches = (group: Group, topic: string): boolean => {
    if (group.all) return true;
    let hit = group.matched.get(topic);
    if (hit === undefined) {
      hit = group.trie.match(topic).length > 0;
      if (group.matched.size >= MATCH_CACHE_LIMIT) group.matched.clear();
      group.matched.set(topic, hit);
    }
    return hit;
  };

  const oldest = (): Entry | undefined =>
    size === 0 ? undefined : ring[(head - size + options.retain) % options.retain];

  /** Retained entries after `seq`, oldest first. */
  const after = (seq: number): Entry[] => {
    const out: Entry[] = [];
    for (let i = size; i > 0; i -= 1) {
      const entry = ring[(head - i + options.retain) % options.retain]!;
      if (entry.seq > seq) out.push(entry);
    }
    return out;
  };

  // Frames go out in flushes: per filter group, the frames since the last flush are joined into
  // one buffer, encoded and framed once, and written to each of its clients in one write (a
  // thousand clients would otherwise cost a thousand writes per event). A flush runs in the turn
  // of the event loop after the events came, unless the hub is busy: then it waits until as long
  // after the previous flush as that flush took (at most MAX_COALESCE_MS), so writing takes at
  // most about half of the loop and a flush carries more frames per write as the rate grows.
  let flushScheduled: { immediate: NodeJS.Immediate } | { timeout: NodeJS.Timeout } | undefined;
  let lastFlushEnd = 0;
  let lastFlushCost = 0;
  const flush = (): void => {
    if (flushScheduled !== undefined) {
      if ('immediate' in flushScheduled) clearImmediate(flushScheduled.immediate);
      else clearTimeout(flushScheduled.timeout);
      flushScheduled = undefined;
    }
    const started = performance.now();
    let wrote = false;
    for (const group of groups.values()) {
      const events = group.pending.length;
      if (events === 0) continue;
      const bytes = new SharedBytes(
        events === 1 ? group.pending[0]! : Buffer.concat(group.pending),
        events,
      );
      group.pending.length = 0;
      delivered += events * group.clients.size;
      for (const client of [...group.clients]) client.send(bytes);
      wrote = true;
    }
    enforceBudget();
    if (!wrote) return;
    lastFlushEnd = performance.now();
    lastFlushCost = lastFlushEnd - started;
  };
  const scheduleFlush = (): void => {
    if (flushScheduled !== undefined) return;
    const wait = Math.min(MAX_COALESCE_MS, lastFlushEnd + lastFlushCost - performance.now());
    flushScheduled =
      wait <= 0 ? { immediate: setImmediate(flush) } : { timeout: setTimeout(flush, wait) };
  };

  /** Drops the oldest retained entry. */
  const evict = (): void => {
    const at = (head - size + options.retain) % options.retain;
    const entry = ring[at]!;
    retainedBytes -= entry.bytes.length;
    if (entry.outbox === undefined && log !== undefined) lose(entry);
    ring[at] = undefined;
    size -= 1;
  };

  /**
   * Past the sum of all clients' budget, the clients furthest behind are cut until the rest fits:
   * however many clients there are, what waits for them stays bounded.
   */
  const enforceBudget = (): void => {
    while (queuedBytes > options.bufferBytes) {
      let furthest: SseClient | undefined;
      for (const group of groups.values()) {
        for (const client of group.clients) {
          if (furthest === undefined || client.queuedBytes > furthest.queuedBytes)
            furthest = client;
        }
      }
      if (furthest === undefined || furthest.queuedBytes === 0) return;
      furthest.cut(
        'buffer-bytes',
        `The gateway's live-event clients had more than ${options.bufferBytes} bytes waiting (events.bufferBytes) and this client was the furthest behind`,
      );
    }
  };

  const onEvent = (event: EventEnvelope, delivery: Delivery): void => {
    const seq =
      options.sequenced && delivery.sequence !== undefined ? delivery.sequence : ++counter;
    lastSeq = seq;
    const outbox = log === undefined ? undefined : delivery.outboxSeq;
    if (outbox !== undefined && outbox > watermark) watermark = outbox;
    const entry: Entry = {
      seq,
      topic: event.topic,
      outbox,
      mark: watermark,
      bytes: Buffer.from(frameOf(idOf(seq, watermark), event)),
    };
    // Oldest first, until the entry fits both bounds (one larger than the whole window is sent
    // to the clients there are, and not kept).
    if (entry.bytes.length <= options.retainBytes) {
      while (
        size > 0 &&
        (size >= options.retain || retainedBytes + entry.bytes.length > options.retainBytes)
      ) {
        evict();
      }
      ring[head] = entry;
      head = (head + 1) % options.retain;
      size += 1;
      retainedBytes += entry.bytes.length;
    } else if (outbox === undefined && log !== undefined) {
      lose(entry);
    }
    for (const [client, pending] of catchingUp) {
      if (!matches(pending.group, entry.topic)) continue;
      pending.entries.push(entry);
      pending.bytes += entry.bytes.length;
      if (pending.bytes > options.clientBufferBytes) {
        client.cut(
          'client-buffer-bytes',
          `More than ${options.clientBufferBytes} bytes of live events came while this client was being answered from the durable log (events.clientBufferBytes)`,
        );
      }
    }
    for (const group of groups.values()) {
      if (group.clients.size === 0 || !matches(group, entry.topic)) continue;
      group.pending.push(bytesOf(entry));
      scheduleFlush();
    }
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        options.onError(error, 'event-hub.listener');
      }
    }
  };

  /** Sends a client the retained entries its filter matches, in one write. */
  const replay = (client: SseClient, group: Group, entries: readonly Entry[]): void => {
    const frames: Buffer[] = [];
    for (const entry of entries) if (matches(group, entry.topic)) frames.push(bytesOf(entry));
    if (frames.length > 0) client.send(new SharedBytes(Buffer.concat(frames), frames.length));
  };

  /**
   * Parses a `Last-Event-ID` into a position of this hub's log (`seq`; `foreign` when it is of an
   * earlier run) and of the durable log (`mark`), or says it cannot be used.
   */
  const position = (
    lastEventId: string,
  ): { seq: number; mark: number | undefined; foreign: boolean } | 'invalid' => {
    if (options.sequenced) {
      return /^\d{1,15}$/.test(lastEventId)
        ? { seq: Number(lastEventId), mark: undefined, foreign: false }
        : 'invalid';
    }
    const match = /^([0-9a-f]{8})-(\d{1,15})(?:-(\d{1,15}))?$/.exec(lastEventId);
    if (match === null) return 'invalid';
    return {
      seq: Number(match[2]),
      mark: match[3] === undefined ? undefined : Number(match[3]),
      foreign: match[1] !== boot,
    };
  };

  /** A client further behind than the window: its own consumer from its position (JetStream). */
  const catchUp = async (client: SseClient, group: Group, from: number): Promise<void> => {
    const patterns = group.key.split(',');
    const single = patterns.length === 1 ? patterns[0]! : '>';
    catchUpNames += 1;
    const sub = await options.bus.subscribe(
      single,
      (event, delivery) => {
        if (single === '>' && !matches(group, event.topic)) return;
        client.sendText(frameOf(String(delivery.sequence ?? 0), event));
        delivered += 1;
      },
      { name: `sse_catchup_${process.pid}_${catchUpNames}`, from: { sequence: from } },
    );
    catchUps.add(sub);
    const stop = (): void => {
      catchUps.delete(sub);
      sub.unsubscribe().catch((error: unknown) => options.onError(error, 'event-hub.catch-up'));
    };
    if (client.closed) stop();
    else client.onClose = chain(client.onClose, stop);
  };

  /**
   * A client the window cannot answer, on a bus with a durable log: the log's events after its
   * mark, read a page at a time as fast as the client takes them, merged with the window's newer
   * events that did not come through the outbox (each after the log position it followed); then
   * the live events that came meanwhile (those the log already gave skipped), and live.
   */
  const resumeFromLog = async (
    durableLog: OutboxLog,
    client: SseClient,
    group: Group,
    from: { id: string; seq: number; mark: number; foreign: boolean },
  ): Promise<void> => {
    // After a restart every event of this run is newer; in this run, those after its position
    // (an id the log gave, `<boot>-0-<o>`, is after log position `o`).
    const newer = (entry: Entry): boolean =>
      from.foreign || (from.seq > 0 ? entry.seq > from.seq : entry.mark >= from.mark);
    const direct = after(0).filter(
      (e) => e.outbox === undefined && newer(e) && matches(group, e.topic),
    );
    const gone = (lost: Lost): boolean =>
      lost.seq > 0 && (from.seq > 0 ? lost.seq > from.seq : lost.mark >= from.mark);
    const lost =
      from.foreign ||
      gone(lostBeyond) ||
      lostDirect.some((l) => gone(l) && matches(group, l.topic));
    if (lost) {
      client.sendText(
        controlFrame('fleetgate.gap', {
          lastEventId: from.id,
          reason: from.foreign
            ? 'the gateway restarted since: the durable log is replayed; events published outside it (errors, some ops alerts) in between are not retained'
            : 'older than the retained window: the durable log is replayed; events published outside it (errors, some ops alerts) are not retained',
          durable: true,
        }),
      );
    }
    const pending = { group, entries: [] as Entry[], bytes: 0 };
    catchingUp.set(client, pending);
    let d = 0;
    /** The window's direct events that came before log position `seq`. */
    const directBefore = (seq: number, out: Buffer[]): void => {
      while (d < direct.length && direct[d]!.mark < seq) out.push(direct[d++]!.bytes);
    };
    let position = from.mark;
    try {
      for (;;) {
        const upTo = watermark;
        if (upTo <= position || client.closed) break;
        const rows = await durableLog.read({ after: position, upTo, limit: LOG_PAGE });
        const frames: Buffer[] = [];
        for (const row of rows) {
          directBefore(row.seq, frames);
          if (matches(group, row.event.topic)) {
            frames.push(Buffer.from(frameOf(`${boot}-0-${row.seq}`, row.event)));
          }
          position = row.seq;
        }
        // A short page read everything up to `upTo` (rows pruned or parked are not there).
        if (rows.length < LOG_PAGE) position = upTo;
        if (frames.length > 0) client.send(new SharedBytes(Buffer.concat(frames), frames.length));
        await client.drained();
      }
    } catch (error) {
      options.onError(error, 'event-hub.durable-log');
      client.cut(
        'durable-log',
        `The durable log could not be read (${error instanceof Error ? error.message : String(error)})`,
      );
    } finally {
      catchingUp.delete(client);
    }
    if (client.closed) return;
    const frames: Buffer[] = [];
    directBefore(Number.POSITIVE_INFINITY, frames);
    for (const entry of pending.entries) {
      if (entry.outbox === undefined || entry.outbox > position) frames.push(entry.bytes);
    }
    if (frames.length > 0) client.send(new SharedBytes(Buffer.concat(frames), frames.length));
    group.clients.add(client);
  };

  return {
    async start() {
      if (log !== undefined) {
        // Where the log stood when this run began: a client back from an earlier run is
        // answered up to here before this run's first event.
        watermark = await log.head().catch((error: unknown) => {
          options.onError(error, 'event-hub.durable-log');
          return 0;
        });
      }
      subscription = await options.bus.subscribe('>', onEvent, {
        name: `sse_hub_${process.pid}`,
        // The hub's handler never waits; if it ever falls behind, the newest events matter most.
        overflow: 'drop-oldest',
        maxQueue: Math.max(options.retain, 10_000),
      });
      heartbeat = setInterval(() => {
        const bytes = new SharedBytes(
          Buffer.from(`: heartbeat ${new Date().toISOString()}\n\n`),
          0,
        );
        for (const group of groups.values())
          for (const client of group.clients) client.heartbeat(bytes);
      }, options.heartbeatMs);
      heartbeat.unref();
    },

    hasRoom: () => !closed && clients < options.maxClients,

    async attach(res, patterns, lastEventId) {
      for (const p of patterns) parsePattern(p);
      // Frames still waiting go to the clients that were there for them; this one starts after.
      flush();
      const client = new SseClient(
        res,
        { events: options.clientBuffer, bytes: options.clientBufferBytes },
        (delta) => void (queuedBytes += delta),
      );
      const group = groupOf(patterns.length === 0 ? ['>'] : patterns);
      clients += 1;
      client.onCut = () => void (cut += 1);
      client.onClose = () => {
        clients -= 1;
        group.clients.delete(client);
        if (group.clients.size === 0) groups.delete(group.key);
      };
      client.start('retry: 2000\n\n');

      if (lastEventId === undefined || lastEventId === '') {
        group.clients.add(client);
        return;
      }
      const from = position(lastEventId);
      const first = oldest();
      // The window covers `from` when it holds the event right after it; on the in-process bus
      // a client that saw the last event of this run missed nothing either. (On JetStream the
      // window starts where this replica joined the stream: before its first event it knows
      // nothing, and a catch-up consumer answers instead. An id the durable log gave has no
      // position in the window.)
      const covered =
        from !== 'invalid' &&
        !from.foreign &&
        !(log !== undefined && from.seq === 0) &&
        ((first !== undefined && from.seq >= first.seq - 1) ||
          (!options.sequenced && from.seq >= lastSeq));
      if (from !== 'invalid' && covered) {
        // Everything after `from` is in the window: replay it, then go live (no await between,
        // so no event slips through).
        replay(client, group, after(from.seq));
        group.clients.add(client);
        return;
      }
      if (from !== 'invalid' && options.sequenced) {
        await catchUp(client, group, from.seq + 1);
        return;
      }
      // A log position past the log's head is of another store: nothing to resume from.
      const beyond = from !== 'invalid' && from.mark !== undefined && from.mark > watermark;
      if (from !== 'invalid' && log !== undefined && from.mark !== undefined && !beyond) {
        await resumeFromLog(log, client, group, { ...from, id: lastEventId, mark: from.mark });
        return;
      }
      // The position is gone (in-process bus, or from a previous run): say so, replay the window.
      client.sendText(
        controlFrame('fleetgate.gap', {
          lastEventId,
          reason:
            from === 'invalid'
              ? 'not an event id of this gateway'
              : beyond
                ? 'not a position of this gateway’s durable log (another store?)'
                : from.foreign
                  ? 'the gateway restarted since; events published in between are not retained'
                  : 'older than the retained window',
          oldestRetained: first === undefined ? null : idOf(first.seq, first.mark),
        }),
      );
      replay(client, group, after(0));
      group.clients.add(client);
    },

    listen(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },

    stats: () => ({ clients, delivered, cut, retained: size, retainedBytes, queuedBytes }),

    async close() {
      if (closed) return;
      closed = true;
      if (heartbeat !== undefined) clearInterval(heartbeat);
      flush();
      for (const group of [...groups.values()]) {
        for (const client of [...group.clients]) client.end(': the gateway is stopping\n\n');
      }
      for (const client of [...catchingUp.keys()]) client.end(': the gateway is stopping\n\n');
      await Promise.allSettled([
        subscription?.unsubscribe(),
        ...[...catchUps].map((s) => s.unsubscribe()),
      ]);
    },
  };
}

function chain(first: (() => void) | undefined, second: () => void): () => void {
  return () => {
    first?.();
    second();
  };
}
