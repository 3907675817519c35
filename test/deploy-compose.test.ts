/**
 * deploy/compose.yaml, run natively: every gateway service's command, environment (its env file
 * and `environment:`) and mounted configuration file, and the demo agent's image command, started
 * as processes on this machine — the compose hostnames mapped to the local PostgreSQL and NATS
 * (a private schema and stream, so nothing collides with other suites) and to the native agent,
 * the container's port to a free loopback port, named volumes to directories of the run; the
 * gateways run as an unprivileged user who may write only those volumes. The two replicas come
 * up healthy (the compose health checks pass), share the fleet (one card-refresh lease holder; an
 * approval given on one releases the call held on the other; the delta reaches each replica's
 * live stream once), and stop on SIGTERM with exit 0. So the compose file cannot drift from what the gateway accepts.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { api, eventually, readEvents, type SseFrame } from './support/gateway-service.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import {
  ROOT,
  readEnvFile,
  readYaml,
  requireBuiltCheckout,
  runNative,
  spawnNative,
  unprivileged,
  type NativeProcess,
} from './support/deploy-native.js';
import { execForm, last, readDockerfile } from './support/dockerfile.js';

const DEPLOY = join(ROOT, 'deploy');
const COMPOSE_FILE = join(DEPLOY, 'compose.yaml');

interface ComposeService {
  build?: { context?: string; dockerfile?: string; target?: string };
  image?: string;
  command?: string[];
  env_file?: string | string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  read_only?: boolean;
  stop_signal?: string;
}
interface Compose {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

const compose = readYaml<Compose>(COMPOSE_FILE);
const services = compose.services;
const isGateway = (s: ComposeService): boolean =>
  (s.command ?? []).join(' ').includes('bin/fleetgate.js start');
const gatewayNames = Object.keys(services).filter((n) => isGateway(services[n]!));

/**
 * The env file a service reads. The repository ships `fleetgate.env.example` (users copy it to
 * `fleetgate.env`, which git ignores): the example stands in for it here.
 */
function envFileOf(service: ComposeService): Record<string, string> {
  const files = service.env_file === undefined ? [] : [service.env_file].flat();
  const env: Record<string, string> = {};
  for (const file of files) {
    const path = resolve(DEPLOY, file);
    Object.assign(env, readEnvFile(existsSync(path) ? path : `${path}.example`));
  }
  return env;
}

/** A service's environment as Compose gives it: env file first, `environment:` over it. */
function environmentOf(service: ComposeService): Record<string, string> {
  return { ...envFileOf(service), ...service.environment };
}

/** The named volumes a service mounts (`name:/path`). */
function namedVolumes(service: ComposeService): { name: string; target: string }[] {
  return (service.volumes ?? [])
    .map((v) => v.split(':'))
    .filter(([source]) => !source!.startsWith('.') && !source!.startsWith('/'))
    .map(([name, target]) => ({ name: name!, target: target! }));
}

/** The host file mounted at `target` in a service. */
function mounted(service: ComposeService, target: string): string {
  for (const volume of service.volumes ?? []) {
    const [source, at] = volume.split(':');
    if (at === target && source!.startsWith('.')) return resolve(DEPLOY, source!);
  }
  throw new Error(`nothing is mounted at ${target}`);
}

/**
 * A proxy in front of the agent that counts card fetches (the agent sees one per refresh) and the
 * messages sent for each skill.
 */
async function countingProxy(target: string): Promise<{
  url: string;
  cards: () => number;
  sent: (skill: string) => number;
  server: Server;
}> {
  let cards = 0;
  const bodies: string[] = [];
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/.well-known/')) cards += 1;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url?.startsWith('/a2a')) bodies.push(body.toString());
      const forward = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cards: () => cards,
    sent: (skill) =>
      bodies.filter((b) => /SendMessage|message\/send/u.test(b) && b.includes(`"${skill}"`)).length,
    server,
  };
}

describe('deploy/compose.yaml as written', () => {
  it('has two gateway replicas on the same image, configuration and env file', () => {
    expect(gatewayNames).toHaveLength(2);
    const [a, b] = gatewayNames.map((n) => services[n]!);
    for (const key of ['image', 'command', 'env_file', 'volumes', 'healthcheck'] as const) {
      expect(a![key], key).toEqual(b![key]);
    }
    for (const name of gatewayNames) {
      const s = services[name]!;
      expect(s.image, `${name} runs the image of the repository's Dockerfile`).toBeDefined();
      expect(
        s.build?.target,
        `${name} builds the Dockerfile's default (last) stage`,
      ).toBeUndefined();
      expect(s.command).toEqual(execForm(last(readDockerfile().stages.at(-1)!, 'CMD')!));
      expect(s.read_only).toBe(true);
      expect(s.stop_signal).toBe('SIGTERM');
      // Started only once what it needs is healthy.
      expect(s.depends_on).toMatchObject({
        postgres: { condition: 'service_healthy' },
        nats: { condition: 'service_healthy' },
      });
    }
  });

  it('runs NATS with JetStream and PostgreSQL, each on a named volume and with a health check', () => {
    const nats = services.nats!;
    expect(nats.command).toContain('--jetstream');
    const natsStore = nats.command![nats.command!.indexOf('--store_dir') + 1];
    expect(nats.volumes?.some((v) => v.endsWith(`:${natsStore}`))).toBe(true);
    const postgres = services.postgres!;
    expect(postgres.volumes?.some((v) => v.endsWith(':/var/lib/postgresql/data'))).toBe(true);
    for (const name of ['nats', 'postgres', 'ops-agent', ...gatewayNames]) {
      const test = services[name]!.healthcheck?.test ?? [];
      // Exec form: CMD and then each argument as a string (a YAML `a ? b : c` is not one).
      expect(test[0], `${name} health check`).toBe('CMD');
      expect(test.length, `${name} health check`).toBeGreaterThan(1);
      for (const arg of test)
        expect(typeof arg, `${name} health check ${JSON.stringify(arg)}`).toBe('string');
    }
    const named = Object.keys(compose.volumes ?? {});
    for (const v of [...nats.volumes!, ...postgres.volumes!]) {
      expect(named).toContain(v.split(':')[0]);
    }
  });

  it('writes only into volumes: the claim journal is on a volume both replicas mount', () => {
    for (const name of gatewayNames) {
      const s = services[name]!;
      const config = parse(readFileSync(mounted(s, '/etc/fleetgate/fleetgate.yaml'), 'utf8')) as {
        journal?: string;
      };
      // Without `journal:` a PostgreSQL gateway writes ./data/claims under the read-only WORKDIR.
      expect(config.journal, `${name}: journal`).toMatch(/^\//u);
      const volume = namedVolumes(s).find((v) => config.journal!.startsWith(`${v.target}/`));
      expect(volume, `${name}: ${config.journal} is on a named volume`).toBeDefined();
      expect(Object.keys(compose.volumes ?? {})).toContain(volume!.name);
    }
    const [a, b] = gatewayNames.map((n) => namedVolumes(services[n]!).map((v) => v.name));
    expect(a).toEqual(b);
  });

  it('keeps every secret in the env file, and the env file names every secret the configuration needs', () => {
    const gateway = services[gatewayNames[0]!]!;
    const config = parse(
      readFileSync(mounted(gateway, '/etc/fleetgate/fleetgate.yaml'), 'utf8'),
    ) as {
      store: string;
      auth: { tokens: { tokenEnv: string }[] };
      agents: { auth?: { bearerEnv?: string } }[];
    };
    const env = envFileOf(gateway);
    const named = [
      ...config.auth.tokens.map((t) => t.tokenEnv),
      ...config.agents.flatMap((a) => (a.auth?.bearerEnv === undefined ? [] : [a.auth.bearerEnv])),
      'PGPASSWORD',
    ];
    for (const name of named) expect(env[name], `${name} in the env file`).toBeTruthy();
    // The configuration holds no password; PostgreSQL's is the one the gateways log in with.
    expect(new URL(config.store).password).toBe('');
    expect(envFileOf(services.postgres!).POSTGRES_PASSWORD).toBe(env.PGPASSWORD);
    expect(environmentOf(services['ops-agent']!).OPS_AGENT_TOKEN).toBe(env.OPS_AGENT_TOKEN);
    expect(readFileSync(join(DEPLOY, '.gitignore'), 'utf8')).toMatch(/^fleetgate\.env$/mu);
  });
});

const pgUp = await requirePostgres();
const natsUp = await requireNats();

describe.skipIf(!pgUp || !natsUp)(
  'deploy/compose.yaml started natively on PostgreSQL + JetStream',
  () => {
    const name = uniqueName('compose');
    const stream = name.toUpperCase();
    let dir: string;
    let agent: NativeProcess;
    let proxy: Awaited<ReturnType<typeof countingProxy>>;
    const replicas: {
      name: string;
      url: string;
      process: NativeProcess;
      env: Record<string, string>;
    }[] = [];
    const tokens = envFileOf(services[gatewayNames[0] ?? 'gateway-a'] ?? {});
    /** A token of the env file, by its variable. */
    const token = (name: string): string => {
      const value = tokens[name];
      if (value === undefined) throw new Error(`${name} is not in the env file`);
      return value;
    };

    /** The image's USER, played by an unprivileged user of this machine (WORKDIR not writable). */
    const user = unprivileged();

    /** The native address of each compose hostname the configuration names. */
    const hosts = new Map<string, string>();

    /** Maps one URL of the configuration from the compose network to this machine. */
    function mapUrl(url: string): string {
      const u = new URL(url);
      if (u.protocol === 'postgres:' && u.hostname === 'postgres') {
        // The local server's user and database, a private schema for this run.
        const local = new URL(PG_URL);
        local.searchParams.set('schema', name);
        return local.toString();
      }
      if (u.protocol === 'nats:' && u.hostname === 'nats') {
        return `${NATS_URL}?stream=${stream}&prefix=${name}`;
      }
      const native = hosts.get(u.hostname);
      return native === undefined ? url : `${native}${u.pathname === '/' ? '' : u.pathname}`;
    }

    beforeAll(async () => {
      requireBuiltCheckout();
      dir = mkdtempSync(join(tmpdir(), 'fleetgate-compose-'));
      chmodSync(dir, 0o755);
      // The compose database comes with its schema (public); this run's private schema stands in
      // for it, so it exists before the replicas start, as public does.
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      await admin.query(`create schema ${name}`);
      await admin.end();

      // The demo agent: its image's CMD (the Dockerfile stage compose builds), its environment.
      const agentService = services['ops-agent']!;
      const stage = readDockerfile().stages.find((s) => s.name === agentService.build?.target);
      expect(stage, `Dockerfile stage ${agentService.build?.target}`).toBeDefined();
      const agentCommand = agentService.command ?? execForm(last(stage!, 'CMD')!);
      agent = spawnNative(agentCommand, {
        env: { ...environmentOf(agentService), AGENT_HOST: '127.0.0.1', AGENT_PORT: '0' },
      });
      const agentUrl = await agent.waitFor(/listening on (http:\/\/\S+)/u);
      // The agent's health checks (compose's and its image's), against its native port.
      const agentPort = new URL(agentUrl).port;
      for (const probe of [
        agentService.healthcheck!.test.slice(1),
        execForm(last(stage!, 'HEALTHCHECK')!),
      ]) {
        const local = probe.map((a) => a.replace('127.0.0.1:9101', `127.0.0.1:${agentPort}`));
        const result = await runNative(local, { env: { AGENT_PORT: agentPort } });
        expect(result.code, result.output).toBe(0);
      }
      proxy = await countingProxy(agentUrl);
      hosts.set('ops-agent', proxy.url);

      // Each gateway service: its command, its env file and environment, its mounted configuration
      // with the compose hostnames mapped; the container's port becomes a free loopback port.
      const starts = gatewayNames.map(async (service) => {
        const s = services[service]!;
        const source = parse(readFileSync(mounted(s, '/etc/fleetgate/fleetgate.yaml'), 'utf8')) as {
          store: string;
          bus: string;
          journal?: string;
          agents: { url: string }[];
        };
        // A named volume is a directory of this run, shared by the services that mount it and
        // writable by the user the gateway runs as; nothing else is.
        const onVolume = (path: string): string => {
          const v = namedVolumes(s).find((x) => path.startsWith(`${x.target}/`));
          if (v === undefined) return path;
          const volume = join(dir, 'volumes', v.name);
          mkdirSync(volume, { recursive: true });
          if (user !== undefined) chownSync(volume, user.uid, user.gid);
          return join(volume, path.slice(v.target.length));
        };
        const config = {
          ...source,
          store: mapUrl(source.store),
          bus: mapUrl(source.bus),
          ...(source.journal === undefined ? {} : { journal: onVolume(source.journal) }),
          agents: source.agents.map((a) => ({ ...a, url: mapUrl(a.url) })),
        };
        const file = join(dir, `${service}.yaml`);
        writeFileSync(file, stringify(config));
        const argv = [
          ...s.command!.map((a) => (a === '/etc/fleetgate/fleetgate.yaml' ? file : a)),
          '--host',
          '127.0.0.1',
          '--port',
          '0',
        ];
        const env = environmentOf(s);
        const process = spawnNative(argv, { env, ...(user === undefined ? {} : { user }) });
        const url = await process.waitFor(/listening on (http:\/\/\S+)/u, 60_000);
        replicas.push({ name: service, url, process, env });
      });
      // Together, as `docker compose up` starts them once their dependencies are healthy.
      await Promise.all(starts);
    }, 120_000);

    afterAll(async () => {
      for (const r of replicas) await r.process.stop('SIGKILL');
      await agent?.stop('SIGKILL');
      proxy?.server.close();
      await deleteNatsStream(stream).catch(() => undefined);
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists ${name} cascade`);
      await client.end();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('both replicas pass the compose health check and the image HEALTHCHECK', async () => {
      expect(replicas).toHaveLength(2);
      const image = readDockerfile().stages.at(-1)!;
      const imageCheck = execForm(last(image, 'HEALTHCHECK')!);
      for (const r of replicas) {
        const port = new URL(r.url).port;
        const local = (argv: string[]): string[] =>
          argv.map((a) => a.replaceAll('127.0.0.1:7420', `127.0.0.1:${port}`));
        const composeCheck = services[r.name]!.healthcheck!.test.slice(1);
        await eventually(
          async () => ((await runNative(local(composeCheck))).code === 0 ? true : undefined),
          20_000,
          `${r.name} to pass its compose health check`,
        );
        const viaImage = await runNative(imageCheck, {
          env: { FLEETGATE_HEALTH_URL: `http://127.0.0.1:${port}/healthz` },
        });
        expect(viaImage.code, viaImage.output).toBe(0);
      }
    }, 60_000);

    it('has exactly one card-refresh lease holder, and the agent sees the holder’s fetches only', async () => {
      const roles = await eventually(
        async () => {
          const answers = await Promise.all(
            replicas.map((r) => api<{ cardRefresh: string }>(r.url, '/readyz')),
          );
          const seen = answers.map((a) => a.body.cardRefresh).sort();
          return seen.join() === 'follower,lease-holder' ? seen : undefined;
        },
        20_000,
        'one lease holder and one follower',
      );
      expect(roles).toEqual(['follower', 'lease-holder']);
      const held = await Promise.all(
        replicas.map(async (r) => {
          const metrics = await api<string>(r.url, '/metrics', {
            token: token('FLEETGATE_VIEWER_TOKEN'),
          });
          return Number(/^fleetgate_card_refresh_lease_held (\d+)/mu.exec(metrics.body)?.[1]);
        }),
      );
      expect(held.sort()).toEqual([0, 1]);
      // Both replicas know the agent's card; it was fetched about once, not once per replica.
      for (const r of replicas) {
        await eventually(
          async () => {
            const a = await api<{ status: string }>(r.url, '/api/agents/ops', {
              token: token('FLEETGATE_VIEWER_TOKEN'),
            });
            return a.body.status === 'fresh' ? true : undefined;
          },
          20_000,
          `${r.name} to have the ops card`,
        );
      }
      expect(proxy.cards()).toBeGreaterThanOrEqual(1);
      expect(proxy.cards()).toBeLessThanOrEqual(2);
    }, 60_000);

    it('releases on one replica the call held on the other; the agent runs it once, each stream sees its delta once', async () => {
      const [a, b] = replicas;
      const controller = new AbortController();
      const onA: SseFrame[] = [];
      const onB: SseFrame[] = [];
      const streams = await Promise.all(
        [a!, b!].map((r, i) =>
          readEvents(
            r.url,
            '/api/events?topics=world.state.delta',
            { token: token('FLEETGATE_VIEWER_TOKEN'), signal: controller.signal },
            i === 0 ? onA : onB,
          ),
        ),
      );
      expect(streams.map((s) => s.status)).toEqual([200, 200]);

      const held = await api<{ id: string; status: string; decision: { approvalId: string } }>(
        a!.url,
        '/api/dispatch',
        {
          token: token('FLEETGATE_OPERATOR_TOKEN'),
          body: { agent: 'ops', skill: 'bulk_migration', text: 'migrate' },
        },
      );
      expect(held.status, JSON.stringify(held.body)).toBe(202);
      expect(held.body.status).toBe('awaiting-approval');
      const approved = await api(
        b!.url,
        `/api/approvals/${held.body.decision.approvalId}/approve`,
        {
          token: token('FLEETGATE_ADMIN_TOKEN'),
          body: { reason: 'compose test' },
        },
      );
      expect(approved.status).toBe(200);
      const done = await eventually(
        async () => {
          const d = await api<{ status: string; taskId: string }>(
            a!.url,
            `/api/dispatches/${held.body.id}`,
            {
              token: token('FLEETGATE_OPERATOR_TOKEN'),
            },
          );
          return d.body.status === 'completed' ? d.body : undefined;
        },
        20_000,
        'the released call to complete',
      );
      expect(proxy.sent('bulk_migration')).toBe(1);
      const mine = (frames: SseFrame[]): SseFrame[] =>
        frames.filter((f) => f.data?.payload?.taskId === done.taskId);
      await eventually(
        () => (mine(onA).length > 0 && mine(onB).length > 0 ? true : undefined),
        20_000,
        'the delta on both replicas’ streams',
      );
      await new Promise((r) => setTimeout(r, 500));
      expect(mine(onA)).toHaveLength(1);
      expect(mine(onB)).toHaveLength(1);
      expect(mine(onA)[0]!.id).toBe(mine(onB)[0]!.id);
      // Applied once to the shared world state, read from either replica.
      const world = await api(b!.url, '/api/world/github_issues', {
        token: token('FLEETGATE_VIEWER_TOKEN'),
      });
      expect(world.body).toMatchObject({ version: 1, state: { data: { migrated: ['repo-a'] } } });
      controller.abort();
      await Promise.all(streams.map((s) => s.done));
    }, 60_000);

    it('stops each replica gracefully on its stop signal (exit 0)', async () => {
      for (const r of replicas) {
        const signal = (services[r.name]!.stop_signal ?? 'SIGTERM') as NodeJS.Signals;
        expect(await r.process.stop(signal), r.process.output()).toBe(0);
      }
    }, 60_000);
  },
);
