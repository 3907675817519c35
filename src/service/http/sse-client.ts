/**
 * One Server-Sent-Events client of the live-event hub: its stream, written straight to the socket
 * where that is safe, and its bounded queue (a client that falls behind is cut, never the gateway).
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { EventEnvelope } from '../../protocol/index.js';

const CRLF = Buffer.from('\r\n');

/**
 * Bytes written to many clients at once, encoded once: `data` as it goes on a close-delimited
 * stream, `chunk()` as one HTTP/1.1 chunk (size line, data, CRLF) for a chunked one.
 */
export class SharedBytes {
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
export class SseClient {
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

/** A frame of a named event (`error`, `fleetgate.gap`) with its data as JSON. */
export function controlFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The frame of an event with its id. */
export function frameOf(id: string, event: EventEnvelope): string {
  return `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;
}
