/**
 * Resuming a live-event client that the hub's retained window cannot answer: on NATS JetStream a
 * consumer of its own from its position ({@link CatchUps}); on a bus with a durable log, the log's
 * events after its mark, paced by how fast it reads ({@link LogResumes}).
 */
import type { EventBus, OutboxLog, Subscription } from '../../bus/index.js';
import type { Group } from './event-fan-out.js';
import { matches } from './event-fan-out.js';
import type { Entry, Lost, RetainedWindow } from './event-window.js';
import type { SseClient } from './sse-client.js';
import { SharedBytes, controlFrame, frameOf } from './sse-client.js';

/** Events read from the durable log at a time when a client resumes from it. */
const LOG_PAGE = 500;

/** Reports a failure (the hub's `onError`). */
type OnError = (error: unknown, where: string) => void;

/** The catch-up consumers of clients further behind than the window (JetStream). */
export class CatchUps {
  readonly #bus: Pick<EventBus, 'subscribe'>;
  readonly #onError: OnError;
  readonly #subscriptions = new Set<Subscription>();
  #names = 0;
  #delivered = 0;

  constructor(bus: Pick<EventBus, 'subscribe'>, onError: OnError) {
    this.#bus = bus;
    this.#onError = onError;
  }

  /** Events written to clients by catch-up consumers. */
  get delivered(): number {
    return this.#delivered;
  }

  /** A client further behind than the window: its own consumer from its position (JetStream). */
  async start(client: SseClient, group: Group, from: number): Promise<void> {
    const patterns = group.key.split(',');
    const single = patterns.length === 1 ? patterns[0]! : '>';
    this.#names += 1;
    const sub = await this.#bus.subscribe(
      single,
      (event, delivery) => {
        if (single === '>' && !matches(group, event.topic)) return;
        client.sendText(frameOf(String(delivery.sequence ?? 0), event));
        this.#delivered += 1;
      },
      { name: `sse_catchup_${process.pid}_${this.#names}`, from: { sequence: from } },
    );
    this.#subscriptions.add(sub);
    const stop = (): void => {
      this.#subscriptions.delete(sub);
      sub.unsubscribe().catch((error: unknown) => this.#onError(error, 'event-hub.catch-up'));
    };
    if (client.closed) stop();
    else client.onClose = chain(client.onClose, stop);
  }

  /** Unsubscribes every consumer. */
  unsubscribe(): Promise<void>[] {
    return [...this.#subscriptions].map((s) => s.unsubscribe());
  }
}

/** Where a client resumes from: its `Last-Event-ID`, parsed. */
export interface ResumePoint {
  id: string;
  seq: number;
  mark: number;
  foreign: boolean;
}

/** Options of {@link LogResumes}. */
export interface LogResumesOptions {
  log: OutboxLog;
  window: RetainedWindow;
  /** This run's id, the first part of every event id. */
  boot: string;
  /** The last outbox position the hub has seen (read again for every page). */
  watermark: () => number;
  clientBufferBytes: number;
  onError: OnError;
}

/** A client being answered from the durable log, with the live entries that came meanwhile. */
interface CatchingUp {
  group: Group;
  entries: Entry[];
  bytes: number;
}

/** The clients being answered from the durable log (an in-memory bus's outbox). */
export class LogResumes {
  readonly #options: LogResumesOptions;
  readonly #catchingUp = new Map<SseClient, CatchingUp>();

  constructor(options: LogResumesOptions) {
    this.#options = options;
  }

  /** The clients being answered now. */
  clients(): SseClient[] {
    return [...this.#catchingUp.keys()];
  }

  /** A live entry, kept for each client being answered whose filter takes it. */
  offer(entry: Entry): void {
    const { clientBufferBytes } = this.#options;
    for (const [client, pending] of this.#catchingUp) {
      if (!matches(pending.group, entry.topic)) continue;
      pending.entries.push(entry);
      pending.bytes += entry.bytes.length;
      if (pending.bytes > clientBufferBytes) {
        client.cut(
          'client-buffer-bytes',
          `More than ${clientBufferBytes} bytes of live events came while this client was being answered from the durable log (events.clientBufferBytes)`,
        );
      }
    }
  }

  /**
   * A client the window cannot answer, on a bus with a durable log: the log's events after its
   * mark, read a page at a time as fast as the client takes them, merged with the window's newer
   * events that did not come through the outbox (each after the log position it followed); then
   * the live events that came meanwhile (those the log already gave skipped), and live.
   */
  async resume(client: SseClient, group: Group, from: ResumePoint): Promise<void> {
    const { log: durableLog, window, boot } = this.#options;
    // After a restart every event of this run is newer; in this run, those after its position
    // (an id the log gave, `<boot>-0-<o>`, is after log position `o`).
    const newer = (entry: Entry): boolean =>
      from.foreign || (from.seq > 0 ? entry.seq > from.seq : entry.mark >= from.mark);
    const direct = window
      .after(0)
      .filter((e) => e.outbox === undefined && newer(e) && matches(group, e.topic));
    this.#tellGap(client, group, from);
    const pending: CatchingUp = { group, entries: [], bytes: 0 };
    this.#catchingUp.set(client, pending);
    let d = 0;
    /** The window's direct events that came before log position `seq`. */
    const directBefore = (seq: number, out: Buffer[]): void => {
      while (d < direct.length && direct[d]!.mark < seq) out.push(direct[d++]!.bytes);
    };
    let position = from.mark;
    try {
      for (;;) {
        const upTo = this.#options.watermark();
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
      this.#options.onError(error, 'event-hub.durable-log');
      client.cut(
        'durable-log',
        `The durable log could not be read (${error instanceof Error ? error.message : String(error)})`,
      );
    } finally {
      this.#catchingUp.delete(client);
    }
    if (client.closed) return;
    const frames: Buffer[] = [];
    directBefore(Number.POSITIVE_INFINITY, frames);
    for (const entry of pending.entries) {
      if (entry.outbox === undefined || entry.outbox > position) frames.push(entry.bytes);
    }
    if (frames.length > 0) client.send(new SharedBytes(Buffer.concat(frames), frames.length));
    group.clients.add(client);
  }

  /** Tells a client that events published outside the durable log may be gone since `from`. */
  #tellGap(client: SseClient, group: Group, from: ResumePoint): void {
    const { window } = this.#options;
    const gone = (lost: Lost): boolean =>
      lost.seq > 0 && (from.seq > 0 ? lost.seq > from.seq : lost.mark >= from.mark);
    const lost =
      from.foreign ||
      gone(window.lostBeyond) ||
      window.lostDirect.some((l) => gone(l) && matches(group, l.topic));
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
  }
}

function chain(first: (() => void) | undefined, second: () => void): () => void {
  return () => {
    first?.();
    second();
  };
}
