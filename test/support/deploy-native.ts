/**
 * Runs what the deployment files say to run — a compose service's command, a Dockerfile's `CMD`
 * or `HEALTHCHECK` — as a native process on this machine, with the container's paths, hostnames
 * and ports mapped to local ones. No container engine runs here; this is how the deployment files
 * are kept honest: each command must start, answer and stop as the files claim.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import { parse } from 'yaml';

/** The repository root: the image's WORKDIR (`/app`) when a command runs natively. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Reads a YAML file the way Docker Compose does (merge keys `<<:` included). */
export function readYaml<T>(path: string): T {
  return parse(readFileSync(path, 'utf8'), { merge: true }) as T;
}

/** Reads a `KEY=value` env file (comments and blank lines skipped). */
export function readEnvFile(path: string): Record<string, string> {
  return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
}

/** A native process started from a deployment file's command. */
export interface NativeProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first capture of `pattern` in stdout (rejects when the process exits). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends `signal`; resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Spawns `argv` (`node` is this Node.js) in `cwd` with exactly `env` plus PATH and HOME — no
 * variable of the test process leaks in, as none would in a container.
 */
export function spawnNative(
  argv: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; user?: { uid: number; gid: number } } = {},
): NativeProcess {
  const [command, ...args] = argv;
  if (command === undefined) throw new Error('empty command');
  const child = spawn(command === 'node' ? process.execPath : command, args, {
    cwd: options.cwd ?? ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NO_COLOR: '1',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.user === undefined ? {} : { uid: options.user.uid, gid: options.user.gid }),
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return {
    child,
    output: () => out,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          clearInterval(poll);
          reject(new Error(`${argv.join(' ')} printed no ${pattern} in ${timeoutMs} ms:\n${out}`));
        }, timeoutMs);
        const poll = setInterval(() => {
          const match = pattern.exec(out);
          if (match !== null) {
            clearInterval(poll);
            clearTimeout(timer);
            resolve(match[1] ?? match[0]);
          }
        }, 50);
        void exited.then((code) => {
          clearInterval(poll);
          clearTimeout(timer);
          reject(new Error(`${argv.join(' ')} exited with ${code}:\n${out}`));
        });
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs `argv` to its end; its exit code and output. */
export async function runNative(
  argv: readonly string[],
  options: {
    cwd?: string;
    env?: Record<string, string>;
    timeoutMs?: number;
    user?: { uid: number; gid: number };
  } = {},
): Promise<{ code: number | null; output: string }> {
  const p = spawnNative(argv, options);
  const timer = setTimeout(() => void p.stop('SIGKILL'), options.timeoutMs ?? 30_000);
  const code = await new Promise<number | null>((resolve) =>
    p.child.once('close', (c) => resolve(c)),
  );
  clearTimeout(timer);
  return { code, output: p.output() };
}

/**
 * An unprivileged user to run a container's command as, when the tests run as root (as CI does):
 * `nobody`, who can read the checkout but write only where it is given a directory — as the
 * image's `USER` on its read-only layers. Undefined when the tests already run unprivileged.
 */
export function unprivileged(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const nobody = { uid: 65534, gid: 65534 };
  // A checkout under a private directory (`mktemp -d` is 0700) cannot be read by `nobody`: the
  // command then runs as this user, and the check that it writes only its volumes is skipped.
  const probe = spawnSync(
    process.execPath,
    ['-e', 'require("node:fs").accessSync(process.argv[1])', `${ROOT}dist/cli/run.js`],
    { ...nobody, stdio: 'ignore' },
  );
  if (probe.status === 0) return nobody;
  console.warn(
    `deploy tests: ${ROOT} is not readable by an unprivileged user (a private parent directory); ` +
      'the image commands run as this user and writes outside the volumes are not caught',
  );
  return undefined;
}

/** Fails with a clear message when the checkout has not been built (`npm ci` builds it). */
export function requireBuiltCheckout(): void {
  try {
    readFileSync(`${ROOT}dist/cli/run.js`);
  } catch {
    throw new Error('dist/cli/run.js is missing: run `npm run build` (npm ci runs it) first');
  }
}
