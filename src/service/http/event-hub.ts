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
import type { Delivery, EventBus, Subscription } from '../../bus/index.js';
import { parsePattern } from '../../bus/index.js';
import type { EventEnvelope } from '../../protocol/index.js';
import type { OutboxLog } from '../../bus/index.js';
import { DEFAULT_EVENT_BYTES } from '../config-server.js';
import type { Group } from './event-fan-out.js';
import { FanOut, matches } from './event-fan-out.js';
import { CatchUps, LogResumes } from './event-resume.js';
import type { Entry } from './event-window.js';
import { RetainedWindow } from './event-window.js';
import { SharedBytes, SseClient, controlFrame, frameOf } from './sse-client.js';

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

/** The options with every byte budget filled in. */
type HubOptions = EventHubOptions & Record<keyof typeof DEFAULT_EVENT_BYTES, number>;

/** Builds the hub of one gateway. */
export function createEventHub(given: EventHubOptions): EventHub {
  return new SseEventHub({ ...DEFAULT_EVENT_BYTES, ...given });
}

/**
 * The hub: one bus subscription; each event framed once, kept in the retained window and fanned
 * out to the client groups whose filter takes it.
 */
class SseEventHub implements EventHub {
  readonly #options: HubOptions;
  readonly #boot = randomBytes(4).toString('hex');
  readonly #window: RetainedWindow;
  readonly #fanOut: FanOut;
  readonly #catchUps: CatchUps;
  /** A durable log to resume from (an in-memory bus's outbox). */
  readonly #log: OutboxLog | undefined;
  /** Clients being answered from the durable log (only with one). */
  readonly #resumes: LogResumes | undefined;
  readonly #listeners = new Set<(event: EventEnvelope) => void>();
  #counter = 0;
  #lastSeq = 0;
  /** The last outbox position seen. */
  #watermark = 0;
  #subscription: Subscription | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #clients = 0;
  #cut = 0;
  #closed = false;

  constructor(options: HubOptions) {
    this.#options = options;
    this.#log = options.sequenced ? undefined : options.log;
    this.#window = new RetainedWindow(options, this.#log !== undefined);
    this.#fanOut = new FanOut(options.bufferBytes);
    this.#catchUps = new CatchUps(options.bus, options.onError);
    this.#resumes =
      this.#log === undefined
        ? undefined
        : new LogResumes({
            log: this.#log,
            window: this.#window,
            boot: this.#boot,
            watermark: () => this.#watermark,
            clientBufferBytes: options.clientBufferBytes,
            onError: options.onError,
          });
  }

  async start(): Promise<void> {
    const options = this.#options;
    if (this.#log !== undefined) {
      // Where the log stood when this run began: a client back from an earlier run is
      // answered up to here before this run's first event.
      this.#watermark = await this.#log.head().catch((error: unknown) => {
        options.onError(error, 'event-hub.durable-log');
        return 0;
      });
    }
    this.#subscription = await options.bus.subscribe('>', (e, d) => this.#onEvent(e, d), {
      name: `sse_hub_${process.pid}`,
      // The hub's handler never waits; if it ever falls behind, the newest events matter most.
      overflow: 'drop-oldest',
      maxQueue: Math.max(options.retain, 10_000),
    });
    this.#heartbeat = setInterval(() => {
      this.#fanOut.heartbeat(
        new SharedBytes(Buffer.from(`: heartbeat ${new Date().toISOString()}\n\n`), 0),
      );
    }, options.heartbeatMs);
    this.#heartbeat.unref();
  }

  hasRoom(): boolean {
    return !this.#closed && this.#clients < this.#options.maxClients;
  }

  async attach(
    res: ServerResponse,
    patterns: readonly string[],
    lastEventId?: string,
  ): Promise<void> {
    const options = this.#options;
    const log = this.#log;
    for (const p of patterns) parsePattern(p);
    // Frames still waiting go to the clients that were there for them; this one starts after.
    this.#fanOut.flush();
    const client = new SseClient(
      res,
      { events: options.clientBuffer, bytes: options.clientBufferBytes },
      this.#fanOut.onQueued,
    );
    const groups = this.#fanOut.groups;
    const group = this.#fanOut.groupOf(patterns.length === 0 ? ['>'] : patterns);
    this.#clients += 1;
    client.onCut = () => void (this.#cut += 1);
    client.onClose = () => {
      this.#clients -= 1;
      group.clients.delete(client);
      if (group.clients.size === 0) groups.delete(group.key);
    };
    client.start('retry: 2000\n\n');

    if (lastEventId === undefined || lastEventId === '') {
      group.clients.add(client);
      return;
    }
    const from = this.#position(lastEventId);
    const first = this.#window.oldest();
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
        (!options.sequenced && from.seq >= this.#lastSeq));
    if (from !== 'invalid' && covered) {
      // Everything after `from` is in the window: replay it, then go live (no await between,
      // so no event slips through).
      replay(client, group, this.#window.after(from.seq));
      group.clients.add(client);
      return;
    }
    if (from !== 'invalid' && options.sequenced) {
      await this.#catchUps.start(client, group, from.seq + 1);
      return;
    }
    // A log position past the log's head is of another store: nothing to resume from.
    const beyond = from !== 'invalid' && from.mark !== undefined && from.mark > this.#watermark;
    if (from !== 'invalid' && this.#resumes !== undefined && from.mark !== undefined && !beyond) {
      await this.#resumes.resume(client, group, { ...from, id: lastEventId, mark: from.mark });
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
        oldestRetained: first === undefined ? null : this.#idOf(first.seq, first.mark),
      }),
    );
    replay(client, group, this.#window.after(0));
    group.clients.add(client);
  }

  listen(listener: (event: EventEnvelope) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  stats(): EventHubStats {
    return {
      clients: this.#clients,
      delivered: this.#fanOut.delivered + this.#catchUps.delivered,
      cut: this.#cut,
      retained: this.#window.size,
      retainedBytes: this.#window.bytes,
      queuedBytes: this.#fanOut.queuedBytes,
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#fanOut.flush();
    for (const group of [...this.#fanOut.groups.values()]) {
      for (const client of [...group.clients]) client.end(': the gateway is stopping\n\n');
    }
    for (const client of this.#resumes?.clients() ?? []) {
      client.end(': the gateway is stopping\n\n');
    }
    await Promise.allSettled([this.#subscription?.unsubscribe(), ...this.#catchUps.unsubscribe()]);
  }

  #onEvent(event: EventEnvelope, delivery: Delivery): void {
    const seq =
      this.#options.sequenced && delivery.sequence !== undefined
        ? delivery.sequence
        : ++this.#counter;
    this.#lastSeq = seq;
    const outbox = this.#log === undefined ? undefined : delivery.outboxSeq;
    if (outbox !== undefined && outbox > this.#watermark) this.#watermark = outbox;
    const entry: Entry = {
      seq,
      topic: event.topic,
      outbox,
      mark: this.#watermark,
      bytes: Buffer.from(frameOf(this.#idOf(seq, this.#watermark), event)),
    };
    this.#window.add(entry);
    this.#resumes?.offer(entry);
    this.#fanOut.push(entry.topic, entry.bytes);
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#options.onError(error, 'event-hub.listener');
      }
    }
  }

  #idOf(seq: number, mark: number): string {
    return this.#options.sequenced
      ? String(seq)
      : this.#log === undefined
        ? `${this.#boot}-${seq}`
        : `${this.#boot}-${seq}-${mark}`;
  }

  /**
   * Parses a `Last-Event-ID` into a position of this hub's log (`seq`; `foreign` when it is of an
   * earlier run) and of the durable log (`mark`), or says it cannot be used.
   */
  #position(
    lastEventId: string,
  ): { seq: number; mark: number | undefined; foreign: boolean } | 'invalid' {
    if (this.#options.sequenced) {
      return /^\d{1,15}$/.test(lastEventId)
        ? { seq: Number(lastEventId), mark: undefined, foreign: false }
        : 'invalid';
    }
    // `0`, before every event: with a durable log, all it keeps (and the window's other events).
    if (lastEventId === '0' && this.#log !== undefined) return { seq: 0, mark: 0, foreign: true };
    const match = /^([0-9a-f]{8})-(\d{1,15})(?:-(\d{1,15}))?$/.exec(lastEventId);
    if (match === null) return 'invalid';
    return {
      seq: Number(match[2]),
      mark: match[3] === undefined ? undefined : Number(match[3]),
      foreign: match[1] !== this.#boot,
    };
  }
}

/** Sends a client the retained entries its filter matches, in one write. */
function replay(client: SseClient, group: Group, entries: readonly Entry[]): void {
  const frames: Buffer[] = [];
  for (const entry of entries) if (matches(group, entry.topic)) frames.push(entry.bytes);
  if (frames.length > 0) client.send(new SharedBytes(Buffer.concat(frames), frames.length));
}
