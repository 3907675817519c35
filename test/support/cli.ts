import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** tsx by absolute URL, so the command runs from any working directory. */
const TSX = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
const ENTRY = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url));

/** The outcome of one CLI run. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@link runCli}. */
export interface RunCliOptions {
  /** Working directory (default: the repository root). */
  cwd?: string;
  /** Kills the command after this long (default 60 s) and rejects: a hang fails the test. */
  timeoutMs?: number;
}

/** Runs the `fleetgate` CLI from source in a child process, as a user would run the command. */
export function runCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  options: RunCliOptions = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, ENTRY, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `fleetgate ${args.join(' ')} did not end within ${options.timeoutMs ?? 60_000} ms`,
        ),
      );
    }, options.timeoutMs ?? 60_000);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/**
 * Time one CLI run may take in a test: a run starts Node and compiles the CLI from source, which
 * took up to 19 s at a load average of 16 on two cores (measured beside a CPU burner), against
 * under 2 s on an idle machine.
 */
export const CLI_RUN_MS = 30_000;

/**
 * The time limit of a test that runs the CLI `runs` times one after the other (plus `extraMs` of
 * its own work), so that it holds on a loaded CI machine.
 */
export function cliTestTimeout(runs: number, extraMs = 15_000): number {
  return runs * CLI_RUN_MS + extraMs;
}
