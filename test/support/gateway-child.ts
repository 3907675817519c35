/**
 * `fleetgate start` as a child process for the browser suites and the dashboard benchmark: the
 * CLI from source, in its own working directory (the demo keeps its SQLite file in `./data`),
 * its address read from the banner, stopped by a signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = pathToFileURL(`${ROOT}node_modules/tsx/dist/loader.mjs`).href;
const CLI = `${ROOT}src/cli/run.ts`;

/** A running gateway process. */
export interface GatewayChild {
  child: ChildProcess;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `fleetgate start --port 0 …args` in `cwd`; resolves once it printed its address (and,
 * for the demo, the whole banner: the seeded calls are made by then).
 */
export function startGatewayChild(options: {
  cwd: string;
  args?: readonly string[];
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}): Promise<GatewayChild> {
  const args = ['--import', TSX, CLI, 'start', '--port', '0', ...(options.args ?? [])];
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const demo = !(options.args ?? []).includes('--config');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fleetgate start did not come up:\n${out}`));
    }, options.timeoutMs ?? 45_000);
    const check = (): void => {
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url === undefined || (demo && !out.includes('Ctrl-C'))) return;
      clearTimeout(timer);
      child.stdout.off('data', check);
      resolve({
        child,
        url,
        output: () => out,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          const hard = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(hard);
        },
      });
    };
    child.stdout.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`fleetgate start exited early:\n${out}`));
    });
  });
}

/** `fetch` with a bearer token; the JSON body (throws on a non-2xx answer). */
export async function getJson<T>(
  base: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${text}`);
  return JSON.parse(text) as T;
}
