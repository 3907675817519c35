/** `fleetgate start --config FILE` from source in its own process, for the service benchmarks. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Starts the gateway (log level `warn`); resolves with its URL once it listens. */
export async function startGatewayProcess(
  config: string,
): Promise<{ url: string; child: ChildProcess }> {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const tsx = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
  const profileDir = process.env.FLEETGATE_BENCH_PROFILE_DIR || undefined;
  const child = spawn(
    process.execPath,
    [
      // FLEETGATE_BENCH_PROFILE_DIR: the gateway writes a V8 CPU profile per thread there when it stops.
      ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
      '--import',
      tsx,
      join(root, 'src/cli/run.ts'),
      'start',
      '--config',
      config,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NO_COLOR: '1' } },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}`)));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match !== null) resolve(match[1]!);
    });
  });
  return { url, child };
}
