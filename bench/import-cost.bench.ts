/**
 * import-cost: what `import('fleetgate')` costs a library user, against `import('@a2a-js/sdk/client')`
 * (the client every A2A caller loads anyway). Each import runs in a fresh process, the two
 * alternating (which goes first alternates too), and only the import itself is timed, not Node's
 * start-up: wall time (the target's figure) and CPU time, steadier on a busy machine. Medians of
 * 31 rounds. The package is imported by its name, as a user would, so this measures the built
 * `dist/` (its JavaScript is built first, as `npm run build` builds it; the declarations do not
 * change what an import loads).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT as root, bundlePackage } from '../scripts/bundle.js';
import { note, report } from './report.js';

const BENCH = 'import-cost';
const ROUNDS = 31;

note('building dist/ (the package is imported as a user would)');
await bundlePackage();

/** One import in a fresh process: its wall time and the CPU time (user + system) it took, in ms. */
function importMs(specifier: string): { wall: number; cpu: number } {
  const script = [
    'const cpu = process.cpuUsage();',
    'const t = performance.now();',
    `await import(${JSON.stringify(specifier)});`,
    'const wall = performance.now() - t;',
    'const { user, system } = process.cpuUsage(cpu);',
    'process.stdout.write(JSON.stringify({ wall, cpu: (user + system) / 1000 }));',
  ].join('\n');
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  return JSON.parse(out) as { wall: number; cpu: number };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

// The name must reach the build just made, not a copy elsewhere.
const resolved = execFileSync(
  process.execPath,
  ['--input-type=module', '-e', "process.stdout.write(import.meta.resolve('fleetgate'))"],
  { cwd: root, encoding: 'utf8' },
);
if (resolved !== pathToFileURL(join(root, 'dist/index.js')).href) {
  throw new Error(`import('fleetgate') resolves to ${resolved}, not this checkout's dist/index.js`);
}

// Warm the file-system cache for both.
importMs('fleetgate');
importMs('@a2a-js/sdk/client');
const ours: { wall: number; cpu: number }[] = [];
const sdk: { wall: number; cpu: number }[] = [];
for (let i = 0; i < ROUNDS; i++) {
  // Which goes first alternates: neither side always runs right after the other.
  if (i % 2 === 0) {
    ours.push(importMs('fleetgate'));
    sdk.push(importMs('@a2a-js/sdk/client'));
  } else {
    sdk.push(importMs('@a2a-js/sdk/client'));
    ours.push(importMs('fleetgate'));
  }
}
const rootMs = median(ours.map((x) => x.wall));
const sdkMs = median(sdk.map((x) => x.wall));
const rootCpu = median(ours.map((x) => x.cpu));
const sdkCpu = median(sdk.map((x) => x.cpu));
note(`fleetgate ${ours.map((x) => x.wall.toFixed(0)).join(' ')}`);
note(`sdk       ${sdk.map((x) => x.wall.toFixed(0)).join(' ')}`);
report({ bench: BENCH, metric: 'root_import_ms', value: rootMs, unit: 'ms' });
report({ bench: BENCH, metric: 'sdk_import_ms', value: sdkMs, unit: 'ms' });
report({ bench: BENCH, metric: 'ratio', value: rootMs / sdkMs, unit: 'ratio', target: '<=1.5' });
// CPU time is less disturbed than wall time by other work on the machine: a second view.
report({ bench: BENCH, metric: 'root_import_cpu_ms', value: rootCpu, unit: 'ms' });
report({ bench: BENCH, metric: 'sdk_import_cpu_ms', value: sdkCpu, unit: 'ms' });
report({ bench: BENCH, metric: 'cpu_ratio', value: rootCpu / sdkCpu, unit: 'ratio' });
