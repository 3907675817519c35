/**
 * Builds the package's JavaScript: one ES module per door of `package.json` `exports` and one for
 * the CLI behind `bin/fleetgate.js`, the code they share split into `dist/chunks/`. The type
 * declarations come from tsc (`tsconfig.build.json` emits declarations only); this file owns the
 * `.js` side of `dist/`.
 *
 * Why a bundle: Node resolves, reads and compiles every module file on its own, and that per-file
 * cost, not the code, was most of what `import('fleetgate')` took (some sixty files of ours).
 * Splitting keeps one copy of every module across the doors, so a class is the same class whichever
 * door it came through (`instanceof FleetgateError` holds for an error of `fleetgate/gateway`), and
 * what a door loads lazily (`createGateway`'s graph) stays out of the files its import reads.
 * Packages stay external: they are the user's installed dependencies, not copies.
 *
 * Code that reads a file of the package (the version, docs/errors.md, the built dashboard, the demo
 * fleet) finds it from `import.meta.resolve('fleetgate/package.json')`, never from its own module's
 * place, which a bundle does not keep.
 *
 * `npm run build` runs it after tsc; `tsx scripts/bundle.ts [OUTDIR]` alone rebuilds the JavaScript.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

/** The repository root. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The CLI's module, imported by `bin/fleetgate.js` as `dist/cli/run.js`. */
const CLI_ENTRY = 'src/cli/run.ts';

/** The Node.js release `engines` names, as esbuild's target. */
const TARGET = 'node20.19';

interface PackageJson {
  exports: Record<string, string | { import?: string }>;
}

/** The source module of every door (the CLI is built on its own, see {@link bundlePackage}): `./dist/service/index.js` is built from `src/service/index.ts`. */
export function entryPoints(root: string = PACKAGE_ROOT): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
  const doors = Object.entries(pkg.exports).flatMap(([subpath, target]) => {
    const file = typeof target === 'string' ? target : target.import;
    if (file === undefined || !file.endsWith('.js')) return [];
    const match = /^\.\/dist\/(.+)\.js$/u.exec(file);
    if (match === null) {
      throw new Error(`package.json exports["${subpath}"] points outside dist/: ${file}`);
    }
    return [`src/${match[1]!}.ts`];
  });
  return doors;
}

/** Removes the JavaScript a previous build left (old chunk names, tsc's per-module files). */
function removeOldJavaScript(outdir: string): void {
  let names: string[];
  try {
    names = readdirSync(outdir, { recursive: true, encoding: 'utf8' });
  } catch {
    return;
  }
  for (const name of names) {
    // The dashboard is Vite's output (`npm run build:dashboard`), not ours.
    if (name === 'dashboard' || name.startsWith(`dashboard${sep}`)) continue;
    if (name.endsWith('.js') || name.endsWith('.js.map')) rmSync(join(outdir, name));
  }
}

/** Options of {@link bundlePackage}. */
export interface BundleOptions {
  /** Where the files go (default `dist/`); its old `.js` files are removed first. */
  outdir?: string;
}

/**
 * Builds the doors and the CLI into `outdir`; the esbuild metafile says what went where.
 *
 * The CLI is a build of its own (its chunks in `cli/chunks/`): split with the doors, esbuild groups
 * modules by the set of entries that reach them, and each of the CLI's lazily loaded commands is
 * such an entry, so the groups came out coarse — `fleetgate --version` loaded the A2A SDK and
 * `fleetgate agents --url` the whole configuration schema. On its own, each command's chunk
 * holds what that command needs. The CLI runs in a process of its own, so no object crosses
 * between its copy of a module and a door's.
 */
export async function bundlePackage(options: BundleOptions = {}): Promise<Metafile> {
  const outdir = resolve(options.outdir ?? join(PACKAGE_ROOT, 'dist'));
  removeOldJavaScript(outdir);
  const common = {
    absWorkingDir: PACKAGE_ROOT,
    outbase: 'src',
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: TARGET,
    packages: 'external',
    tsconfig: 'tsconfig.json',
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    logLevel: 'warning',
  } as const;
  const [doors, cli] = await Promise.all([
    build({ ...common, entryPoints: entryPoints(), chunkNames: 'chunks/[name]-[hash]' }),
    build({ ...common, entryPoints: [CLI_ENTRY], chunkNames: 'cli/chunks/[name]-[hash]' }),
  ]);
  return {
    inputs: { ...doors.metafile.inputs, ...cli.metafile.inputs },
    outputs: { ...doors.metafile.outputs, ...cli.metafile.outputs },
  };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outdir = process.argv[2];
  const metafile = await bundlePackage(outdir === undefined ? {} : { outdir });
  const files = Object.keys(metafile.outputs).filter((f) => f.endsWith('.js'));
  process.stderr.write(`bundled ${files.length} JavaScript files\n`);
}
