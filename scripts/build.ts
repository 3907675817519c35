/**
 * `npm run build`: the whole of `dist/` in one step, its parts run side by side and each timed on
 * its own line, so an install shows what it is doing and how long each part took:
 *
 * - `js`: the package's JavaScript, bundled by esbuild (scripts/bundle.ts);
 * - `dashboard`: the web UI, built by Vite into `dist/dashboard/`;
 * - `types`: the `.d.ts` declarations (tsc, declarations only), which only a consumer of the
 *   package's types reads — so `npm install` in a checkout (`prepare`) skips them, and packing or
 *   publishing (`prepack`) and `npm run build` make them.
 *
 * Type checking is not part of the build (`npm run typecheck` does it, for the dashboard too).
 *
 * Usage: `tsx scripts/build.ts [--no-types] [--only js,dashboard,types]`.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT, bundlePackage } from './bundle.js';

/** The parts of the build, in the order their lines are announced. */
export const PARTS = ['js', 'dashboard', 'types'] as const;
export type Part = (typeof PARTS)[number];

/** One finished part: its name and wall time. */
export interface PartResult {
  part: Part;
  ms: number;
}

function runTool(args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: PACKAGE_ROOT, stdio: 'inherit' });
    child.on('error', fail);
    child.on('close', (code) =>
      code === 0 ? done() : fail(new Error(`${args.join(' ')} exited with ${code ?? 'a signal'}`)),
    );
  });
}

const bin = (file: string): string => join(PACKAGE_ROOT, 'node_modules', file);

const BUILDERS: Readonly<Record<Part, () => Promise<unknown>>> = {
  js: () => bundlePackage(),
  // Vite in a process of its own: its config file is loaded as it expects, and its work overlaps
  // the bundle's and tsc's on a machine with more than one core.
  dashboard: () =>
    runTool([bin('vite/bin/vite.js'), 'build', '--config', 'dashboard/vite.config.ts']),
  types: () => runTool([bin('typescript/bin/tsc'), '-p', 'tsconfig.build.json']),
};

/** Builds `parts` at once; `log` gets a line as each starts and ends. */
export async function buildPackage(
  parts: readonly Part[],
  log: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
): Promise<PartResult[]> {
  const started = performance.now();
  log(`fleetgate build: ${parts.join(', ')}…`);
  const results = await Promise.all(
    parts.map(async (part) => {
      const t0 = performance.now();
      try {
        await BUILDERS[part]();
      } catch (error) {
        log(`fleetgate build: ${part} failed`);
        throw error;
      }
      const ms = Math.round(performance.now() - t0);
      log(`fleetgate build: ${part.padEnd(9)} done in ${(ms / 1000).toFixed(1)} s`);
      return { part, ms };
    }),
  );
  log(`fleetgate build: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return results;
}

/** The parts the command line asks for. */
export function partsFromArgs(args: readonly string[]): Part[] {
  const only = args.find((a) => a.startsWith('--only='))?.slice('--only='.length);
  const chosen =
    only === undefined
      ? [...PARTS]
      : only.split(',').map((p) => {
          if (!(PARTS as readonly string[]).includes(p)) {
            throw new Error(`--only: unknown part ${p} (parts: ${PARTS.join(', ')})`);
          }
          return p as Part;
        });
  return args.includes('--no-types') ? chosen.filter((p) => p !== 'types') : chosen;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    await buildPackage(partsFromArgs(process.argv.slice(2)));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
