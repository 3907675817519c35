/**
 * import-cost: what `import('fleetgate')` costs a library user, against `import('@a2a-js/sdk/client')`
 * (the client every A2A caller loads anyway). Each import runs in a fresh process, the two
 * alternating, and only the import itself is timed (not Node's start-up). The package is imported
 * by its name, as a user would, so this measures the built `dist/` (its JavaScript is built first,
 * as `npm run build` builds it; the declarations do not change what an import loads).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT as root, bundlePackage } from '../scripts/bundle.js';
import { note, report } from './report.js';

const BENCH = 'import-cost';
const ROUNDS = 21;

note('building dist/ (the package is imported as a user would)');
await bundlePackage();

function importMs(specifier: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(specifier)}); process.stdout.write(String(performance.now() - t));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  return Number(out);
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
const ours: number[] = [];
const sdk: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  ours.push(importMs('fleetgate'));
  sdk.push(importMs('@a2a-js/sdk/client'));
}
const rootMs = median(ours);
const sdkMs = median(sdk);
note(`fleetgate ${ours.map((x) => x.toFixed(0)).join(' ')}`);
note(`sdk       ${sdk.map((x) => x.toFixed(0)).join(' ')}`);
report({ bench: BENCH, metric: 'root_import_ms', value: rootMs, unit: 'ms' });
report({ bench: BENCH, metric: 'sdk_import_ms', value: sdkMs, unit: 'ms' });
report({ bench: BENCH, metric: 'ratio', value: rootMs / sdkMs, unit: 'ratio', target: '<=1.5' });
