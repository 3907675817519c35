/**
 * The Dockerfile, linted for the rules the image promises (multi-stage, production dependencies
 * only, a non-root user, a health check on /healthz, SIGTERM, the data volume, no secret in ENV
 * or ARG), and its gateway stage run natively: the stage's files are laid out in a scratch root
 * from its COPY instructions (the build stage's outputs taken from this built checkout), then its
 * CMD runs there with the image's ENV, as an unprivileged user who may write only the VOLUME (as
 * the image's USER on its read-only layers) — it starts, its HEALTHCHECK passes, the embedded
 * store lands in the VOLUME, and STOPSIGNAL stops it with exit 0. No container engine runs here.
 */
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { api } from './support/gateway-service.js';
import {
  ROOT,
  requireBuiltCheckout,
  runNative,
  spawnNative,
  unprivileged,
  type NativeProcess,
} from './support/deploy-native.js';
import { envOf, execForm, last, readDockerfile, type DockerStage } from './support/dockerfile.js';

const { args: globalArgs, stages } = readDockerfile();
const image = stages.at(-1)!;
const CONFIG_PATH = '/etc/fleetgate/fleetgate.yaml';
const ADMIN_TOKEN = 'image-admin-token-0123456789abcdef';
const SECRET_NAME = /TOKEN|SECRET|PASSW(OR)?D|PRIVATE|API_?KEY|CREDENTIAL/iu;

const stage = (name: string): DockerStage => {
  const found = stages.find((s) => s.name === name);
  if (found === undefined) throw new Error(`no stage ${name}`);
  return found;
};
/** The directory a stage's instructions run in (its last WORKDIR, or its base stage's). */
const workdir = (s: DockerStage): string =>
  last(s, 'WORKDIR')?.args ??
  (stages.some((b) => b.name === s.from) ? workdir(stage(s.from)) : '/');
/** `COPY [--from=x] src… dest` of a stage. */
const copies = (s: DockerStage): { from?: string; sources: string[]; dest: string }[] =>
  s.instructions
    .filter((i) => i.keyword === 'COPY')
    .map((i) => {
      const parts = i.args.split(' ');
      return {
        ...(i.flags.from === undefined ? {} : { from: i.flags.from }),
        sources: parts.slice(0, -1),
        dest: parts.at(-1)!,
      };
    });

/** The image's default configuration file (the COPY that puts it at /etc/fleetgate/fleetgate.yaml). */
function defaultConfigSource(): string {
  const copy = copies(image).find((c) => c.dest === CONFIG_PATH && c.from === undefined);
  if (copy === undefined) throw new Error(`nothing is copied to ${CONFIG_PATH}`);
  return join(ROOT, copy.sources[0]!);
}

describe('Dockerfile rules', () => {
  it('builds in stages and ships the gateway as its last (default) stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    expect(image.name).toBe('gateway');
    // Node images of the major package.json supports, the runtime a slim one.
    const engines = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
    ).engines.node;
    const major = /\d+/u.exec(engines)![0];
    for (const value of Object.values(globalArgs))
      expect(value).toMatch(new RegExp(`^node:${major}-`, 'u'));
    expect(globalArgs[image.from.replace(/^\$\{|\}$/gu, '')]).toMatch(/-slim$/u);
  });

  it('installs production dependencies only into the image, and builds with dev dependencies elsewhere', () => {
    const build = stage('build');
    expect(
      build.instructions.some(
        (i) => i.keyword === 'RUN' && /\bnpm ci\b/u.test(i.args) && !i.args.includes('--omit=dev'),
      ),
    ).toBe(true);
    expect(
      build.instructions.some((i) => i.keyword === 'RUN' && i.args.includes('npm run build')),
    ).toBe(true);
    const modules = copies(image).find(
      (c) => c.dest === './node_modules' || c.dest.endsWith('/node_modules'),
    );
    expect(modules?.from, 'node_modules comes from another stage').toBeDefined();
    const deps = stage(modules!.from!);
    const installs = deps.instructions.filter(
      (i) => i.keyword === 'RUN' && /\bnpm (ci|install)\b/u.test(i.args),
    );
    expect(installs.length).toBeGreaterThan(0);
    for (const i of installs) expect(i.args, `line ${i.line}`).toContain('--omit=dev');
    // The optional drivers of the distributed mode are installed too (pg, the NATS client).
    expect(
      installs.some(
        (i) =>
          i.args.includes('--omit=dev') &&
          /peerDependencies/u.test(deps.instructions.map((x) => x.args).join(' ')),
      ),
    ).toBe(true);
    // Nothing in the image stage installs anything, and no dev tree is copied into it.
    expect(
      image.instructions.filter(
        (i) => i.keyword === 'RUN' && /\bnpm (ci|install|i)\b/u.test(i.args),
      ),
    ).toEqual([]);
    for (const c of copies(image)) {
      if (c.from === 'build') for (const s of c.sources) expect(s).not.toMatch(/node_modules/u);
    }
    expect(workdir(deps)).toBe(posix.dirname(modules!.sources[0]!));
  });

  it('runs as a non-root user', () => {
    const user = last(image, 'USER');
    expect(user, 'USER in the image stage').toBeDefined();
    expect(user!.args.split(':')[0]).not.toMatch(/^(root|0)$/u);
    const cmdAt = last(image, 'CMD')!.line;
    expect(user!.line).toBeLessThan(cmdAt);
    // The demo agent's stage too.
    expect(last(stage('demo-agent'), 'USER')?.args).not.toMatch(/^(root|0)?$/u);
  });

  it('checks /healthz, stops on SIGTERM, keeps the embedded store in a volume, exposes the listen port', () => {
    const health = execForm(last(image, 'HEALTHCHECK')!);
    const env = envOf(image);
    const url = health.join(' ').includes('FLEETGATE_HEALTH_URL')
      ? env.FLEETGATE_HEALTH_URL!
      : health.join(' ');
    expect(new URL(/http:\/\/\S+/u.exec(url)![0]).pathname).toBe('/healthz');
    expect(last(image, 'STOPSIGNAL')?.args).toBe('SIGTERM');
    const config = parse(readFileSync(defaultConfigSource(), 'utf8')) as {
      store: string;
      listen: { host: string; port: number };
    };
    expect(config.store).toMatch(/^sqlite:\//u);
    const volumes = execForm(last(image, 'VOLUME')!);
    expect(volumes).toContain(posix.dirname(config.store.slice('sqlite:'.length)));
    expect(last(image, 'EXPOSE')?.args).toBe(String(config.listen.port));
    expect(new URL(env.FLEETGATE_HEALTH_URL!).port).toBe(String(config.listen.port));
    expect(config.listen.host).toBe('0.0.0.0');
  });

  it('puts no secret in ENV or ARG', () => {
    for (const s of stages) {
      for (const name of Object.keys(envOf(s)))
        expect(name, `ENV ${name} in stage ${s.name}`).not.toMatch(SECRET_NAME);
      for (const i of s.instructions.filter((x) => x.keyword === 'ARG'))
        expect(i.args).not.toMatch(SECRET_NAME);
    }
    for (const name of Object.keys(globalArgs)) expect(name).not.toMatch(SECRET_NAME);
  });

  it('runs fleetgate start with the mounted configuration file', () => {
    expect(execForm(last(image, 'CMD')!)).toEqual([
      'node',
      'bin/fleetgate.js',
      'start',
      '--config',
      CONFIG_PATH,
    ]);
    expect(last(image, 'ENTRYPOINT')).toBeUndefined();
  });

  it('sends the build only sources: .dockerignore keeps out dependencies, build output, data and secrets', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['.git', 'node_modules', 'dist', 'data', '*.env', '.env', '*.db'])
      expect(ignored).toContain(entry);
    // …but not what the image copies from the build context.
    for (const c of copies(image).filter((x) => x.from === undefined)) {
      expect(existsSync(join(ROOT, c.sources[0]!)), c.sources[0]).toBe(true);
    }
  });
});

/** A free loopback port. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the image CMD, run natively on a built checkout', () => {
  let root: string;
  let gateway: NativeProcess;
  let port: number;
  let env: Record<string, string>;
  const at = (path: string): string => join(root, path);
  /** The image's USER, played by an unprivileged user of this machine. */
  const user = unprivileged();

  beforeAll(async () => {
    requireBuiltCheckout();
    root = mkdtempSync(join(tmpdir(), 'fleetgate-image-'));
    port = await freePort();
    // The image stage's filesystem, from its COPY instructions: the build stage's WORKDIR is this
    // checkout (built), the production dependencies are the checkout's node_modules.
    const app = at(workdir(image));
    mkdirSync(app, { recursive: true });
    for (const c of copies(image)) {
      const dest = c.dest.startsWith('/') ? at(c.dest) : join(app, c.dest);
      for (const source of c.sources) {
        const from =
          c.from === undefined
            ? join(ROOT, source)
            : join(ROOT, posix.relative(workdir(stage(c.from)), source));
        const target = c.dest.endsWith('/') ? join(dest, posix.basename(source)) : dest;
        mkdirSync(dirname(target), { recursive: true });
        if (posix.basename(source) === 'node_modules') symlinkSync(from, target);
        else cpSync(from, target, { recursive: true });
      }
    }
    for (const i of image.instructions.filter((x) => x.keyword === 'VOLUME')) {
      for (const v of execForm(i)) {
        mkdirSync(at(v), { recursive: true });
        // The volume belongs to the image's user (the stage's `chown`); nothing else is writable.
        if (user !== undefined) chownSync(at(v), user.uid, user.gid);
      }
    }
    chmodSync(root, 0o755);
    // Container paths in the configuration point into the scratch root; the port is a free one.
    const config = parse(readFileSync(at(CONFIG_PATH), 'utf8')) as {
      store: string;
      listen: { port: number };
    };
    config.store = `sqlite:${at(config.store.slice('sqlite:'.length))}`;
    config.listen.port = port;
    writeFileSync(at(CONFIG_PATH), stringify(config));
    env = Object.fromEntries(
      Object.entries(envOf(image)).map(([k, v]) => [k, v.replace(':7420/', `:${port}/`)]),
    );
    env.FLEETGATE_ADMIN_TOKEN = ADMIN_TOKEN;
    const argv = execForm(last(image, 'CMD')!).map((a) => (a.startsWith('/') ? at(a) : a));
    gateway = spawnNative(argv, { cwd: app, env, ...(user === undefined ? {} : { user }) });
    await gateway.waitFor(/listening on (http:\/\/\S+)/u, 60_000);
  }, 90_000);

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });

  it('passes its HEALTHCHECK and serves with the token from the environment', async () => {
    const check = await runNative(execForm(last(image, 'HEALTHCHECK')!), { env });
    expect(check.code, check.output).toBe(0);
    const base = `http://127.0.0.1:${port}`;
    expect((await api(base, '/readyz')).status).toBe(200);
    expect((await api(base, '/api/agents')).status).toBe(401);
    expect((await api(base, '/api/agents', { token: ADMIN_TOKEN })).status).toBe(200);
  }, 30_000);

  it('keeps the embedded store in the volume', () => {
    const config = parse(readFileSync(at(CONFIG_PATH), 'utf8')) as { store: string };
    const file = config.store.slice('sqlite:'.length);
    expect(file.startsWith(at(execForm(last(image, 'VOLUME')!)[0]!))).toBe(true);
    expect(existsSync(file)).toBe(true);
  });

  it('is backed up online by the command docs/deployment.md gives, with the image’s own SQLite driver', async () => {
    const doc = readFileSync(join(ROOT, 'docs', 'deployment.md'), 'utf8');
    const script = /docker exec fleetgate node -e "([^"]+)"/u.exec(doc)?.[1];
    expect(script, 'the backup command in docs/deployment.md').toBeDefined();
    const volume = execForm(last(image, 'VOLUME')!)[0]!;
    const local = script!.replaceAll(`${volume}/`, `${at(volume)}/`);
    const run = await runNative(['node', '-e', local], {
      cwd: at(workdir(image)),
      ...(user === undefined ? {} : { user }),
    });
    expect(run.code, run.output).toBe(0);
    const copy = await runNative(
      [
        'node',
        '-e',
        `const db = require('better-sqlite3')(${JSON.stringify(`${at(volume)}/backup.db`)}, { readonly: true });` +
          'console.log(db.prepare("select count(*) as n from sqlite_master where name = \'fleetgate_outbox\'").get().n)',
      ],
      { cwd: at(workdir(image)) },
    );
    expect(copy.output.trim()).toBe('1');
  }, 30_000);

  it('stops on its STOPSIGNAL with exit 0, and the HEALTHCHECK then fails', async () => {
    const code = await gateway.stop(last(image, 'STOPSIGNAL')!.args as NodeJS.Signals);
    expect(code, gateway.output()).toBe(0);
    const check = await runNative(execForm(last(image, 'HEALTHCHECK')!), { env });
    expect(check.code).toBe(1);
  }, 30_000);

  it('refuses to start without the token its configuration names, saying which', async () => {
    const { FLEETGATE_ADMIN_TOKEN: _unset, ...without } = env;
    const argv = execForm(last(image, 'CMD')!).map((a) => (a.startsWith('/') ? at(a) : a));
    const run = await runNative(argv, {
      cwd: at(workdir(image)),
      env: without,
      ...(user === undefined ? {} : { user }),
    });
    expect(run.code).not.toBe(0);
    expect(run.output).toMatch(/FLEETGATE_ADMIN_TOKEN/u);
  }, 60_000);
});
