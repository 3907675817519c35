/**
 * `fleetgate start` as a child process, the way a user runs it: the CLI from source, its stdout
 * and stderr collected, its address read from the banner, stopped by a signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The TypeScript loader by absolute path, so a child may run in any working directory. */
const TSX = pathToFileURL(`${ROOT}node_modules/tsx/dist/loader.mjs`).href;
const CLI = `${ROOT}src/cli/run.ts`;

/** A running `fleetgate start`. */
export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  /** The admin token the demo printed (demo only). */
  token: string | undefined;
  /** The second person's (alice, an approver) token the demo printed (demo only). */
  aliceToken: string | undefined;
  /** The approval id of the deploy the demo left waiting (demo only). */
  approval: string | undefined;
  stdout(): string;
  stderr(): string;
  /** Sends `signal` and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Options of {@link startServiceProcess}. */
export interface StartProcessOptions {
  args?: readonly string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Milliseconds to wait for the banner (default 60 s: a start takes far longer on a loaded machine). */
  timeoutMs?: number;
}

/** Starts `fleetgate start …` and resolves once it printed its address. */
export function startServiceProcess(options: StartProcessOptions = {}): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', TSX, CLI, 'start', ...(options.args ?? [])], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fleetgate start did not come up:\n${out}\n${err}`));
    }, options.timeoutMs ?? 60_000);
    const check = (): void => {
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      // The demo prints more after the address; wait for its last line.
      const demo = !(options.args ?? []).includes('--config');
      if (url === undefined || (demo && !out.includes('Ctrl-C'))) return;
      clearTimeout(timer);
      child.stdout.off('data', check);
      resolve({
        child,
        url,
        token: /Admin token\s+(\S+)/.exec(out)?.[1],
        aliceToken: /Alice token\s+(\S+)/.exec(out)?.[1],
        approval: /needs your approval: (\S+)/.exec(out)?.[1],
        stdout: () => out,
        stderr: () => err,
        async stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`fleetgate start exited with ${code}:\n${out}\n${err}`));
    });
  });
}

/** `fetch` against the service with a bearer token; the answer's status and JSON body. */
export async function api<T = unknown>(
  base: string,
  path: string,
  init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON (metrics text)
  }
  return { status: response.status, body: body as T, headers: response.headers };
}

/** One frame of a Server-Sent-Events stream. */
export interface SseFrame {
  id?: string;
  event?: string;
  /** The parsed `data:` line: an event envelope for bus events. */
  data?: { id?: string; topic?: string; payload?: Record<string, unknown> } & Record<
    string,
    unknown
  >;
}

/** Reads an SSE stream into `frames` until `signal` aborts; resolves once the headers came. */
export async function readEvents(
  base: string,
  path: string,
  options: { token?: string; lastEventId?: string; signal: AbortSignal },
  frames: SseFrame[],
): Promise<{ status: number; done: Promise<void> }> {
  const response = await fetch(`${base}${path}`, {
    headers: {
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      ...(options.lastEventId === undefined ? {} : { 'last-event-id': options.lastEventId }),
    },
    signal: options.signal,
  });
  if (!response.ok || response.body === null) {
    return { status: response.status, done: Promise.resolve() };
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const done = (async () => {
    let buffer = '';
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) return;
        buffer += decoder.decode(value, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const raw = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const frame: SseFrame = {};
          for (const line of raw.split('\n')) {
            if (line.startsWith('id: ')) frame.id = line.slice(4);
            else if (line.startsWith('event: ')) frame.event = line.slice(7);
            else if (line.startsWith('data: ')) {
              frame.data = JSON.parse(line.slice(6)) as NonNullable<SseFrame['data']>;
            }
          }
          if (frame.data !== undefined) frames.push(frame);
        }
      }
    } catch {
      // aborted
    }
  })();
  return { status: response.status, done };
}

/** Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
