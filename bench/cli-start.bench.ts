/**
 * cli-start: the first minutes of a new user, timed as processes (wall time, as the user waits).
 *
 * On a fresh clone of this checkout's HEAD (its `node_modules` hard-linked from the checkout, so
 * what is timed is ours, not the registry's; `FLEETGATE_BENCH_INSTALL=1` runs a real `npm ci`
 * instead and reports it as `install_ms`):
 * - `build_ms`: the install's build step (`npm run prepare`: bundle and dashboard);
 * - `banner_ms`: `npm start` until its banner is printed;
 * - `first_command_ms`: the banner's first command, exactly as printed, run once — the first
 *   time this clone's CLI runs at all;
 * - `later_command_ms`: the median of later runs of the same command;
 * - `node_start_ms`: `node -e 0` in the same run, the floor any CLI starts from, with the ratios of
 *   the two command figures to it.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../scripts/bundle.js';
import { note, report } from './report.js';

const BENCH = 'cli-start';
const LATER_ROUNDS = 9;

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Runs a command to its end; its wall time in ms (throws when it fails). */
function timed(command: string, args: readonly string[], cwd: string, env = process.env): number {
  const t = performance.now();
  const run = spawnSync(command, args, { cwd, env, encoding: 'utf8' });
  const ms = performance.now() - t;
  if (run.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  }
  return ms;
}

const clone = mkdtempSync(join(tmpdir(), 'fleetgate-cli-start-'));
let gateway: ReturnType<typeof spawn> | undefined;
try {
  note(`cloning HEAD into ${clone}`);
  execFileSync('git', ['clone', '--quiet', PACKAGE_ROOT, clone]);
  if (process.env.FLEETGATE_BENCH_INSTALL === '1') {
    note('npm ci (the registry or its cache, and the native builds)');
    const ms = timed('npm', ['ci', '--no-audit', '--no-fund'], clone);
    report({
      bench: BENCH,
      metric: 'install_ms',
      value: Math.round(ms),
      unit: 'ms',
      target: '<=60000',
    });
  } else {
    execFileSync('cp', ['-al', join(PACKAGE_ROOT, 'node_modules'), join(clone, 'node_modules')]);
    const build = timed('npm', ['run', 'prepare'], clone);
    report({ bench: BENCH, metric: 'build_ms', value: Math.round(build), unit: 'ms' });
  }

  // `npm start`, until the banner is complete.
  const started = performance.now();
  const child = spawn('npm', ['start', '--', '--port', '0'], {
    cwd: clone,
    env: { ...process.env, NO_COLOR: '1', FLEETGATE_TOKEN: undefined },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  gateway = child;
  const banner = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no banner within 60 s:\n${out}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ctrl-C')) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    child.on('exit', (code) => reject(new Error(`npm start exited ${code}:\n${out}`)));
  });
  report({
    bench: BENCH,
    metric: 'banner_ms',
    value: Math.round(performance.now() - started),
    unit: 'ms',
    target: '<=10000',
  });

  const exported = /export FLEETGATE_URL=(\S+) FLEETGATE_TOKEN=(\S+)/.exec(banner);
  const first = /^ {4}(\S+) agents$/mu.exec(banner);
  if (exported === null || first === null) throw new Error(`unexpected banner:\n${banner}`);
  const env = { ...process.env, FLEETGATE_URL: exported[1]!, FLEETGATE_TOKEN: exported[2]! };
  const command = first[1]!;
  note(`first command: ${command} agents`);
  const firstMs = timed(command, ['agents'], clone, env);

  const node: number[] = [];
  const later: number[] = [];
  for (let i = 0; i < LATER_ROUNDS; i += 1) {
    // Alternating, so neither side always runs right after the other.
    if (i % 2 === 0) {
      later.push(timed(command, ['agents'], clone, env));
      node.push(timed(process.execPath, ['-e', '0'], clone));
    } else {
      node.push(timed(process.execPath, ['-e', '0'], clone));
      later.push(timed(command, ['agents'], clone, env));
    }
  }
  const nodeMs = median(node);
  const laterMs = median(later);
  report({
    bench: BENCH,
    metric: 'first_command_ms',
    value: Math.round(firstMs),
    unit: 'ms',
    target: '<=1000',
  });
  report({
    bench: BENCH,
    metric: 'later_command_ms',
    value: Math.round(laterMs),
    unit: 'ms',
    target: '<=500',
  });
  report({ bench: BENCH, metric: 'node_start_ms', value: Math.round(nodeMs), unit: 'ms' });
  report({ bench: BENCH, metric: 'first_command_ratio', value: firstMs / nodeMs, unit: 'ratio' });
  report({ bench: BENCH, metric: 'later_command_ratio', value: laterMs / nodeMs, unit: 'ratio' });
} finally {
  if (gateway?.pid !== undefined) {
    try {
      // npm start's whole group: npm, the shell it ran and the gateway with its demo agents.
      process.kill(-gateway.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    await new Promise((resolve) => setTimeout(resolve, 1500));
  }
  rmSync(clone, { recursive: true, force: true });
}
