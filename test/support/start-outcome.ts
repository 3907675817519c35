/**
 * `fleetgate start` run until it either listens or exits, for tests of a start that must be
 * refused: a refusal is seen with its exit code and how long the process stayed after printing it;
 * a start that was not refused is stopped (SIGTERM) and reported as such, instead of hanging the test.
 */
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { ROOT } from './gateway-service.js';

const TSX = pathToFileURL(`${ROOT}node_modules/tsx/dist/loader.mjs`).href;
const CLI = `${ROOT}src/cli/run.ts`;

/** How a `fleetgate start` ended. */
export interface StartOutcome {
  /** True when it printed its address (it was then stopped). */
  listened: boolean;
  /** The exit code (null when a signal ended it). */
  code: number | null;
  stdout: string;
  stderr: string;
  /**
   * Milliseconds from the moment stderr carried the printed error (a line `FLEETGATE_…: …`, not a
   * log line) to the exit: what the process spent with nothing left to do. Undefined when it
   * printed none.
   */
  lingerMs: number | undefined;
}

/** Runs `fleetgate start ARGS…` until it listens (then stops it) or exits. */
export function startOutcome(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<StartOutcome> {
  const child = spawn(process.execPath, ['--import', TSX, CLI, 'start', ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let listened = false;
  let erredAt: number | undefined;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fleetgate start neither listened nor exited:\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!listened && /listening on http:\/\//.test(stdout)) {
        listened = true;
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (erredAt === undefined && /^FLEETGATE_[A-Z_]+: /m.test(stderr)) erredAt = Date.now();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const exitedAt = Date.now();
      clearTimeout(timer);
      // The streams may still hold the last output: read them to their end first.
      let open = 2;
      const done = (): void => {
        open -= 1;
        if (open > 0) return;
        resolve({
          listened,
          code,
          stdout,
          stderr,
          lingerMs: erredAt === undefined ? undefined : exitedAt - erredAt,
        });
      };
      if (child.stdout.readableEnded) done();
      else child.stdout.once('end', done);
      if (child.stderr.readableEnded) done();
      else child.stderr.once('end', done);
    });
  });
}
