/**
 * `npm run bench [-- NAME…]`: runs every `bench/<name>.bench.ts` but the opt-in ones (or only the
 * named ones), each in its own process so one benchmark's heap and timers never disturb
 * another's. Each benchmark prints one JSON object per line and per figure on stdout; progress
 * and diagnostics go to stderr.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.slice(0, -'.bench.ts'.length))
  .sort();

/** Benchmarks too long for every run: only when named (`npm run bench -- soak`). */
const OPT_IN: ReadonlySet<string> = new Set(['soak']);

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((w) => !available.includes(w));
if (unknown.length > 0) {
  process.stderr.write(
    `Unknown benchmark(s): ${unknown.join(', ')}. Available: ${available.join(', ')}\n`,
  );
  process.exit(2);
}

let failed = 0;
for (const name of wanted.length > 0 ? wanted : available.filter((b) => !OPT_IN.has(b))) {
  process.stderr.write(`# bench ${name}\n`);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--expose-gc', join(here, `${name}.bench.ts`)],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    child.on('exit', (c) => resolve(c ?? 1));
  });
  if (code !== 0) {
    failed += 1;
    process.stderr.write(`# bench ${name} failed with exit code ${code}\n`);
  }
}
process.exit(failed > 0 ? 1 : 0);
