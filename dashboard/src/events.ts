/**
 * Live events over `GET /api/events` (Server-Sent Events read with `fetch`, because an
 * `EventSource` cannot send the bearer token). One long request; when it ends or fails it is
 * opened again after the server's `retry:` delay with `Last-Event-ID`, so nothing still retained is
 * missed. There is no polling: the page changes only when an event arrives. A gateway that cannot
 * be reached for {@link OFFLINE_AFTER_MS} is reported `offline` (it is still tried again).
 */
import type { EventEnvelope } from './types.js';

export type StreamStatus = 'connecting' | 'live' | 'reconnecting' | 'offline';

export interface EventStreamOptions {
  token: string;
  topics: readonly string[];
  onEvent(event: EventEnvelope): void;
  onStatus(status: StreamStatus, detail?: string): void;
  /** The server could not resume from our position (restart, or too far behind): reload views. */
  onGap(): void;
  /** The token is refused (401): the stream stops; the page signs out. */
  onUnauthorized?(message: string): void;
  base?: string;
}

/**
 * A first connection asks for a position the server does not know, so it answers with a gap
 * notice and replays the events it still retains: the views start with recent history.
 */
const REPLAY_WINDOW = 'window';

/**
 * How long the gateway may stay out of reach before the stream says `offline` instead of
 * `reconnecting`: longer than a restart takes, short enough that nobody waits on a dead gateway.
 */
export const OFFLINE_AFTER_MS = 15_000;

export function openEventStream(options: EventStreamOptions): { close(): void } {
  let lastId = '';
  let retryMs = 2000;
  let closed = false;
  let controller: AbortController | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** No event was received yet (control frames, comments and `retry:` are none). */
  let first = true;
  let connections = 0;
  /** When the stream was lost (undefined while connected). */
  let lostAt: number | undefined;

  /** The status while the stream is down: `offline` once it has been for long. */
  const down = (detail?: string): void => {
    lostAt ??= Date.now();
    if (Date.now() - lostAt < OFFLINE_AFTER_MS) options.onStatus('reconnecting', detail);
    else {
      const since = new Date(lostAt).toLocaleTimeString();
      options.onStatus(
        'offline',
        `the gateway cannot be reached since ${since}${detail === undefined ? '' : ` (${detail})`}; still trying every ${Math.round(retryMs / 1000)} s`,
      );
    }
  };

  const connect = async (): Promise<void> => {
    connections += 1;
    controller = new AbortController();
    const headers: Record<string, string> = {
      accept: 'text/event-stream',
      'last-event-id': lastId === '' ? REPLAY_WINDOW : lastId,
    };
    if (options.token !== '') headers.authorization = `Bearer ${options.token}`;
    const query = encodeURIComponent(options.topics.join(','));
    try {
      const res = await fetch(`${options.base ?? ''}/api/events?topics=${query}`, {
        headers,
        signal: controller.signal,
      });
      if (res.status === 401 || res.status === 403) {
        options.onStatus('offline', `HTTP ${res.status}`);
        if (res.status === 401) {
          const body = (await res.json().catch(() => undefined)) as
            { error?: { message?: string } } | undefined;
          options.onUnauthorized?.(body?.error?.message ?? 'HTTP 401');
        }
        return;
      }
      if (!res.ok || res.body === null) throw new Error(`HTTP ${res.status}`);
      lostAt = undefined;
      options.onStatus('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          frame(buffer.slice(0, at));
          buffer = buffer.slice(at + 2);
        }
      }
      if (closed) return;
      down();
    } catch (error) {
      if (closed) return;
      down(error instanceof Error ? error.message : String(error));
    }
    if (closed) return;
    timer = setTimeout(() => void connect(), retryMs);
  };

  const frame = (raw: string): void => {
    let id: string | undefined;
    let event: string | undefined;
    let data = '';
    for (const line of raw.split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data += data === '' ? value : `\n${value}`;
      else if (field === 'retry' && /^\d+$/.test(value)) retryMs = Number(value);
    }
    if (event === 'fleetgate.gap') {
      // The first connection's gap is the replay it asked for; a later one lost events.
      if (!first || connections > 1) options.onGap();
      first = false;
      return;
    }
    if (event === 'error') {
      // The server ends the stream after this; the reconnect resumes from `lastId`.
      return;
    }
    if (id === undefined && data === '') return;
    first = false;
    if (id !== undefined) lastId = id;
    if (data === '') return;
    try {
      const parsed = JSON.parse(data) as EventEnvelope;
      if (typeof parsed.topic === 'string') options.onEvent(parsed);
    } catch {
      // A frame that is not JSON is not a bus event.
    }
  };

  options.onStatus('connecting');
  void connect();
  return {
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      controller?.abort();
    },
  };
}
