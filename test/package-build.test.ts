/**
 * The package as it ships: the bundled `dist/` JavaScript (scripts/bundle.ts) keeps every door's
 * names, one copy of each class across doors, a root import that reads a handful of files and no
 * gateway package, and a CLI that still finds its package's files. Built into a scratch directory
 * inside the checkout, so the package's own name resolves as it does from `dist/`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT, bundlePackage } from '../scripts/bundle.js';

const OUT = join(PACKAGE_ROOT, 'test', '.generated', `bundle-${process.pid}`);

const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  version: string;
  exports: Record<string, string | { import: string }>;
};
const api = JSON.parse(
  readFileSync(join(PACKAGE_ROOT, 'test', 'fixtures', 'public-api.json'), 'utf8'),
) as Record<string, string[]>;

/** The bundled file of a door, e.g. `fleetgate/store` → `<OUT>/store/index.js`. */
function doorFile(door: string): string {
  const target = pkg.exports[door === 'fleetgate' ? '.' : `./${door.slice('fleetgate/'.length)}`];
  if (target === undefined || typeof target === 'string') throw new Error(`no door ${door}`);
  return join(OUT, target.import.replace(/^\.\/dist\//u, ''));
}

async function importDoor(door: string): Promise<Record<string, unknown>> {
  return (await import(pathToFileURL(doorFile(door)).href)) as Record<string, unknown>;
}

/** Runs node with `args` in the checkout; stdout, stderr and the exit code. */
function runNode(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: undefined },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

beforeAll(async () => {
  await bundlePackage({ outdir: OUT });
}, 60_000);

afterAll(() => {
  rmSync(OUT, { recursive: true, force: true });
});

describe('the bundled package', () => {
  it('exports exactly the checked-in names from every door', async () => {
    const doors = Object.keys(api);
    expect(doors.length).toBe(Object.keys(pkg.exports).length - 1); // all but ./package.json
    for (const door of doors) {
      expect({ door, names: Object.keys(await importDoor(door)).sort() }).toEqual({
        door,
        names: api[door],
      });
    }
  });

  it('keeps one FleetgateError across doors, the lazily loaded gateway included', async () => {
    const root = await importDoor('fleetgate');
    const protocol = await importDoor('fleetgate/protocol');
    expect(root.FleetgateError).toBe(protocol.FleetgateError);
    const createGateway = root.createGateway as (config: unknown) => Promise<unknown>;
    const error: unknown = await createGateway({ agents: 'not a list' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(root.FleetgateError as new () => Error);
    expect((error as { code: string }).code).toBe('FLEETGATE_CONFIG_INVALID');
  });

  it('loads a few files of its own and no gateway package on a root import', async () => {
    // A resolve hook (in its own file: hooks run off the main thread) lists every ES module;
    // require.cache lists the CommonJS ones (zod, pino, fastify's graph would land there).
    const hook = join(OUT, 'record-resolves.mjs');
    const log = join(OUT, 'resolved.txt');
    writeFileSync(
      hook,
      [
        "import { appendFileSync } from 'node:fs';",
        'export async function resolve(specifier, context, next) {',
        '  const result = await next(specifier, context);',
        `  appendFileSync(${JSON.stringify(log)}, result.url + '\\n');`,
        '  return result;',
        '}',
        '',
      ].join('\n'),
    );
    const register = `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(hook).href)});`;
    const code = [
      "import { createRequire } from 'node:module';",
      `await import(${JSON.stringify(pathToFileURL(doorFile('fleetgate')).href)});`,
      'console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));',
    ].join('\n');
    const run = await runNode([
      '--import',
      `data:text/javascript,${encodeURIComponent(register)}`,
      '--input-type=module',
      '--eval',
      code,
    ]);
    expect(run.stderr).toBe('');
    const files = [
      ...new Set([
        ...readFileSync(log, 'utf8').trim().split('\n'),
        ...(JSON.parse(run.stdout) as string[]).map((f) => pathToFileURL(f).href),
      ]),
    ];
    const ours = files.filter((f) => f.startsWith(pathToFileURL(OUT).href) && f.endsWith('.js'));
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.length).toBeLessThanOrEqual(8);
    const packages = new Set(
      files.flatMap((f) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//u.exec(f)?.[1] ?? []),
    );
    // The A2A SDK (and its JWT library) for calls, `uuid` for the ids of a call's records.
    expect([...packages].sort()).toEqual(['@a2a-js/sdk', 'jose', 'uuid']);
  });

  it('runs the CLI, which finds its version and docs/errors.md from the package root', async () => {
    mkdirSync(OUT, { recursive: true });
    const cli = join(OUT, 'cli', 'run.js');
    const version = await runNode([cli, '--version']);
    expect(version).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
    const failed = await runNode([cli, 'agents', '--config', join(OUT, 'missing.yaml')]);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain('FLEETGATE_FILE_ACCESS_FAILED');
    // The fix line comes from docs/errors.md.
    expect(failed.stderr).toMatch(/\n {2}fix: \S/u);
  });
});
