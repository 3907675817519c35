/**
 * The CLI's client of a running gateway's HTTP API: `--url` (default `$FLEETGATE_URL`), the
 * bearer token from `$FLEETGATE_TOKEN`, JSON in and out, the API's coded errors rethrown as they
 * came, and a Server-Sent-Events reader that resumes with `Last-Event-ID` after a drop.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Command } from 'commander';
import type { ErrorCode } from '../../protocol/index.js';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';

/** Where the gateway is and how to authenticate. */
export interface GatewayTarget {
  url: string;
  token: string | undefined;
}

/** A client of one gateway. */
export interface GatewayClient {
  readonly url: string;
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  /**
   * Reads `/api/events` until `signal` aborts; reconnects after drops, resuming where it was.
   * `fromRetained`: start with every event the gateway still retains, then the live ones.
   */
  events(
    patterns: readonly string[],
    onEvent: (event: StreamedEvent) => void,
    signal: AbortSignal,
    options?: { fromRetained?: boolean },
  ): Promise<void>;
}

/** One event of the live stream. */
export interface StreamedEvent {
  /** `message` for bus events; `fleetgate.gap` and `error` (a client cut for falling behind) for the stream's own notices. */
  type: string;
  id: string | undefined;
  data: unknown;
}

/** Adds `--url` to a command. */
export function urlOption(command: Command): Command {
  return command.option(
    '--url <url>',
    'a running gateway (default $FLEETGATE_URL); the token comes from $FLEETGATE_TOKEN',
  );
}

/** The gateway a command talks to: `--url`, else `$FLEETGATE_URL`, else none (local mode). */
export function gatewayTarget(
  url: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): GatewayTarget | undefined {
  const chosen = url ?? env.FLEETGATE_URL;
  if (chosen === undefined || chosen === '') return undefined;
  if (!/^https?:\/\/[^/]+/.test(chosen)) {
    throw new FleetgateError('FLEETGATE_USAGE', `--url must be http(s)://host:port, not ${chosen}`);
  }
  const token = env.FLEETGATE_TOKEN;
  return { url: chosen.replace(/\/+$/, ''), token: token === '' ? undefined : token };
}

function unreachable(url: string, cause: unknown): FleetgateError {
  const own = (cause as { code?: unknown } | null)?.code;
  const inner =
    cause instanceof Error
      ? (cause.cause as { code?: string; errors?: { code?: string }[] } | undefined)
      : undefined;
  const reason =
    (typeof own === 'string' ? own : undefined) ??
    inner?.code ??
    inner?.errors?.[0]?.code ??
    (cause instanceof Error ? cause.message : String(cause));
  return new FleetgateError(
    'FLEETGATE_GATEWAY_UNREACHABLE',
    `No gateway answers at ${url} (${reason}); start one with fleetgate start, or fix --url.`,
    { cause },
  );
}

/** An answer read whole: what {@link answer} needs of a fetch `Response` or a node:http reply. */
interface ReadAnswer {
  ok: boolean;
  status: number;
  statusText: string;
  text(): Promise<string>;
}

/**
 * One request with its body read whole, over node:http(s): a command's one or two calls need no
 * more, and Node's `fetch` would cost a command more time to load than the call itself takes.
 */
function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<ReadAnswer> {
  return new Promise((resolve, reject) => {
    const request = (url.startsWith('https:') ? httpsRequest : httpRequest)(
      url,
      { method, headers },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            ok: status >= 200 && status < 300,
            status,
            statusText: res.statusMessage ?? '',
            text: () => Promise.resolve(text),
          });
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function answer<T>(response: ReadAnswer): Promise<T> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (response.ok) return body as T;
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } })
    ?.error;
  if (typeof error?.code === 'string' && typeof error.message === 'string') {
    throw new FleetgateError(error.code as ErrorCode, error.message, {
      ...(typeof error.details === 'object' && error.details !== null
        ? { details: error.details as Record<string, unknown> }
        : {}),
    });
  }
  throw new FleetgateError(
    'FLEETGATE_HTTP_INTERNAL',
    `The gateway answered ${response.status} ${response.statusText}`,
  );
}

/** Parses SSE frames out of a growing text buffer; returns what is left. */
function parseFrames(buffer: string, each: (event: StreamedEvent) => void): string {
  let rest = buffer;
  for (;;) {
    const end = rest.search(/\r?\n\r?\n/);
    if (end < 0) return rest;
    const frame = rest.slice(0, end);
    rest = rest.slice(end).replace(/^\r?\n\r?\n/, '');
    let type = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of frame.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') type = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.join('\n'));
    } catch {
      parsed = data.join('\n');
    }
    each({ type, id, data: parsed });
  }
}

/** Tries (a second apart) to reach a gateway the stream never reached: a wrong URL fails soon. */
const FIRST_TRIES = 5;

/** Tries (a second apart) to reach a gateway again after its stream ended: through a restart. */
const RESTART_TRIES = 120;

/** The `Last-Event-ID` that asks for every retained event (no event has position 0). */
const FROM_RETAINED = '0';

/** A client of the gateway at `target`. */
export function createGatewayClient(target: GatewayTarget): GatewayClient {
  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({
    accept: 'application/json',
    ...(target.token === undefined ? {} : { authorization: `Bearer ${target.token}` }),
    ...extra,
  });
  const request = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    let response: ReadAnswer;
    try {
      response = await send(
        `${target.url}${path}`,
        method,
        headers(body === undefined ? {} : { 'content-type': 'application/json' }),
        body === undefined ? undefined : JSON.stringify(body),
      );
    } catch (error) {
      throw unreachable(target.url, error);
    }
    return answer<T>(response);
  };
  return {
    url: target.url,
    get: (path) => request('GET', path),
    post: (path, body) => request('POST', path, body ?? {}),
    async events(patterns, onEvent, signal, options = {}) {
      const query =
        patterns.length === 0 ? '' : `?topics=${encodeURIComponent(patterns.join(','))}`;
      // A position before the first event: the gateway replays what it retains (after a
      // `fleetgate.gap` notice naming that position, which is no news to this reader).
      let lastId: string | undefined = options.fromRetained === true ? FROM_RETAINED : undefined;
      let failures = 0;
      // A gateway that answers 503 is starting or stopping: asked again. Once the stream was open,
      // a gateway that went away is waited for through a restart; before, a wrong URL fails soon.
      let connected = false;
      const waitOrGiveUp = async (cause: unknown): Promise<void> => {
        failures += 1;
        if (failures > (connected ? RESTART_TRIES : FIRST_TRIES)) {
          throw unreachable(target.url, cause);
        }
        await new Promise((resolve) => setTimeout(resolve, 1000));
      };
      while (!signal.aborted) {
        let response: Response;
        try {
          response = await fetch(`${target.url}/api/events${query}`, {
            headers: headers({
              accept: 'text/event-stream',
              ...defined({ 'last-event-id': lastId }),
            }),
            signal,
          });
        } catch (error) {
          if (signal.aborted) return;
          await waitOrGiveUp(error);
          continue;
        }
        if (response.status === 503) {
          await response.body?.cancel();
          await waitOrGiveUp(new Error(`HTTP 503 (the gateway is starting or stopping)`));
          continue;
        }
        if (!response.ok || response.body === null) {
          await answer(response);
          return;
        }
        failures = 0;
        connected = true;
        const decoder = new TextDecoder();
        let buffer = '';
        try {
          const reader = response.body.getReader();
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer = parseFrames(buffer + decoder.decode(value, { stream: true }), (e) => {
              if (e.id !== undefined) lastId = e.id;
              const gapOf = (e.data as { lastEventId?: unknown } | null)?.lastEventId;
              if (e.type === 'fleetgate.gap' && gapOf === FROM_RETAINED) return;
              onEvent(e);
            });
          }
        } catch (error) {
          if (signal.aborted) return;
          void error;
        }
        // The stream ended (gateway restarting, or this client was cut): resume.
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    },
  };
}
