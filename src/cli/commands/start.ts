/**
 * `fleetgate start [--config FILE] [--demo-traffic]`: runs a gateway with its HTTP API until
 * SIGINT or SIGTERM, then stops gracefully and exits 0. Without `--config` it runs the demo: three
 * example agents on free loopback ports, seeded world state, a generated admin token and a
 * deploy waiting for approval.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { FleetgateConfig } from '../../service/index.js';
import { loadConfigFile, parseConfig, redactStoreUrl, startService } from '../../service/index.js';
import { processRuns } from '../../service/host/index.js';
import {
  DEMO_APPROVER,
  DEMO_APPROVER_CHOICE_ENV,
  DEMO_APPROVER_TOKEN_ENV,
  DEMO_TOKEN_ENV,
  demoConfig,
  demoToken,
  seedDemoCalls,
  startDemoFleet,
  startDemoTraffic,
  type DemoFleet,
} from '../../service/demo/index.js';
import type { CliIo } from '../io.js';
import { cliCommand } from '../launcher.js';
import { integerFlag } from '../options.js';
import type { Style } from '../style.js';
import { createStyle } from '../style.js';
import type { RegisterCommand } from './types.js';

interface StartOptions {
  config?: string;
  demoTraffic?: boolean;
  host?: string;
  port?: number;
  logLevel?: string;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** The service's structured log: JSON lines on stderr, secrets redacted. */
export function serviceLogger(level: string): Logger {
  return pino(
    {
      level,
      base: { service: 'fleetgate' },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-a2a-notification-token"]',
          'req.headers.cookie',
          'headers.authorization',
          'headers["x-a2a-notification-token"]',
          'token',
          '*.token',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ dest: 2, sync: true }),
  );
}

/** Where a running demo notes its process id, beside its store (`./data/fleetgate.db`). */
export const DEMO_LOCK = 'data/fleetgate.demo.pid';

/**
 * Claims the demo's store for this process: a second `fleetgate start` in the same directory
 * (on another port, say) would otherwise share the first one's SQLite file without a word. A note
 * left by a process that is gone is taken over. Returns the release.
 */
export function claimDemoStore(file = DEMO_LOCK): () => void {
  mkdirSync('data', { recursive: true });
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      return () => rmSync(file, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && processRuns(pid)) {
      throw new FleetgateError(
        'FLEETGATE_USAGE',
        `another demo gateway (pid ${pid}) runs on ./data/fleetgate.db in this directory; stop it first, or start this one from another directory`,
        { details: { pid, lock: file } },
      );
    }
    rmSync(file, { force: true });
  }
  throw new FleetgateError('FLEETGATE_USAGE', `cannot claim ${file}; remove it and start again`);
}

/** Resolves on the first SIGINT or SIGTERM; a second one ends the process at once. */
function untilSignal(io: CliIo): Promise<string> {
  return new Promise((resolve) => {
    let seen = false;
    const on = (signal: NodeJS.Signals): void => {
      if (seen) {
        io.err(`fleetgate: ${signal} again, exiting without waiting\n`);
        process.exit(1);
      }
      seen = true;
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/** Registers `fleetgate start`. */
export const registerStart: RegisterCommand = (program, io, setExit) => {
  program
    .command('start')
    .description('run the gateway and its HTTP API (no --config: a demo fleet on this machine)')
    .option('-c, --config <file>', 'configuration file (without it: the demo fleet)')
    .option('--demo-traffic', 'demo only: dispatch a call every few seconds so the views move')
    .option('--host <host>', 'listen on this address (overrides listen.host)')
    .option(
      '--port <port>',
      'listen on this port, 0 for any free one (overrides listen.port)',
      // Whole decimal digits only: parseInt read `1.5` as 1, `0x1F00` as 0 and `7433abc` as 7433.
      integerFlag(0, 65_535),
    )
    .option(
      '--log-level <level>',
      `log level on stderr (${LEVELS.join(', ')}; default info, warn for the demo so its log does not run through the banner)`,
    )
    .action((opts: StartOptions) => runStart(opts, io, setExit));
};

/** Runs the gateway until SIGINT or SIGTERM, then stops it (and the demo fleet, if it runs). */
async function runStart(
  opts: StartOptions,
  io: CliIo,
  setExit: (code: number) => void,
): Promise<void> {
  const level = checkStartFlags(opts);
  const logger = serviceLogger(level);
  const env: Record<string, string | undefined> = { ...process.env };
  const { config, demo, releaseDemo, token, second } = await setUp(opts, io, env);

  let service;
  try {
    service = await startService({
      config,
      env,
      logger,
      version: io.version,
      ...(demo === undefined ? {} : { deps: { seeds: demo.seeds } }),
    });
  } catch (error) {
    await demo?.stop();
    releaseDemo?.();
    throw error;
  }
  const signal = untilSignal(io);
  // The URLs as shown anywhere: without the password a store or bus URL may carry.
  const store = redactStoreUrl(config.store);
  const bus = redactStoreUrl(config.bus);
  logger.info({ url: service.url, store, bus, agents: config.agents.length }, 'gateway started');
  const s = createStyle(io.color);
  io.out(
    `${s.bold('Fleetgate')} ${io.version} listening on ${service.url}\n` +
      s.dim(`  store ${store} · bus ${bus} · ${config.agents.length} agent(s)\n`),
  );
  let stopTraffic: (() => Promise<void>) | undefined;
  if (demo !== undefined && token !== undefined && second !== undefined) {
    const approval = await seedDemoCalls(service.gateway).catch((error: unknown) => {
      logger.warn({ err: error }, 'demo: the first calls failed');
      return undefined;
    });
    if (opts.demoTraffic === true) {
      stopTraffic = startDemoTraffic(service.gateway, 4000, (error) =>
        logger.warn({ err: error }, 'demo traffic: a call failed'),
      );
    }
    io.out(
      demoBanner({ url: service.url, agents: demo.agents, admin: token, second, approval }, s),
    );
  }

  const received = await signal;
  io.err(`fleetgate: ${received}, stopping (calls in flight finish first)\n`);
  await stopTraffic?.();
  await service.close();
  await demo?.stop();
  releaseDemo?.();
  logger.info('gateway stopped');
  io.err('fleetgate: stopped\n');
  setExit(0);
}

/** Refuses flags out of range or that do not go together; returns the log level. */
function checkStartFlags(opts: StartOptions): string {
  const level = opts.logLevel ?? (opts.config === undefined ? 'warn' : 'info');
  if (!LEVELS.includes(level)) {
    throw new FleetgateError('FLEETGATE_USAGE', `--log-level must be one of ${LEVELS.join(', ')}`);
  }
  if (opts.config !== undefined && opts.demoTraffic === true) {
    throw new FleetgateError(
      'FLEETGATE_USAGE',
      '--demo-traffic runs only with the demo (no --config)',
    );
  }
  return level;
}

/** What `start` runs: the configuration, and without `--config` the demo fleet behind it. */
interface StartSetup {
  config: FleetgateConfig;
  demo: DemoFleet | undefined;
  releaseDemo: (() => void) | undefined;
  token: { token: string; generated: boolean } | undefined;
  second: { token: string; generated: boolean } | undefined;
}

/**
 * The configuration from `--config` (with `--host` and `--port` over it), or the demo's: its
 * store claimed, its fleet started and its tokens set in `env`.
 */
async function setUp(
  opts: StartOptions,
  io: CliIo,
  env: Record<string, string | undefined>,
): Promise<StartSetup> {
  let demo: DemoFleet | undefined;
  let releaseDemo: (() => void) | undefined;
  let token: { token: string; generated: boolean } | undefined;
  let second: { token: string; generated: boolean } | undefined;
  let config: FleetgateConfig;
  if (opts.config !== undefined) {
    const loaded = await loadConfigFile(opts.config);
    config = {
      ...loaded,
      listen: {
        ...loaded.listen,
        ...defined({ host: opts.host, port: opts.port }),
      },
    };
  } else {
    if (existsSync('fleetgate.yaml')) {
      io.err('fleetgate: ./fleetgate.yaml is not read without --config; starting the demo\n');
    }
    releaseDemo = claimDemoStore();
    demo = await startDemoFleet().catch((error: unknown) => {
      releaseDemo?.();
      throw error;
    });
    token = demoToken(env);
    env[DEMO_TOKEN_ENV] = token.token;
    second = demoToken(env, DEMO_APPROVER_CHOICE_ENV);
    env[DEMO_APPROVER_TOKEN_ENV] = second.token;
    config = parseConfig(
      demoConfig(demo, { host: opts.host ?? '127.0.0.1', port: opts.port ?? 7420 }),
      'demo',
    );
  }
  return { config, demo, releaseDemo, token, second };
}

/** What the demo's banner shows. */
interface DemoBannerInput {
  url: string;
  agents: readonly { name: string; url: string }[];
  admin: { token: string; generated: boolean };
  second: { token: string; generated: boolean };
  approval: string | undefined;
}

/**
 * The demo's banner: where things are, both people's tokens, and a walk through the approval story
 * in which every line works as printed: the seeded deploy can be approved by either person, and a
 * deploy dispatched as `admin` waits until `alice` approves it.
 */
export function demoBanner(b: DemoBannerInput, s: Style, cli = cliCommand()): string {
  const agents = b.agents.map((a) => `${a.name} ${s.dim(a.url)}`).join(', ');
  const shown = (t: { token: string; generated: boolean }, env: string): string =>
    t.generated ? t.token : s.dim(`(from ${env})`);
  const value = (t: { token: string; generated: boolean }, env: string): string =>
    t.generated ? t.token : `$${env}`;
  return (
    [
      '',
      `  Demo fleet   ${agents}`,
      `  Dashboard    ${b.url}/${b.admin.generated ? `#token=${b.admin.token}` : ''}`,
      b.second.generated
        ? `               ${s.dim(`as ${DEMO_APPROVER}:`)} ${b.url}/#token=${b.second.token}`
        : '',
      `  Admin token  ${shown(b.admin, 'FLEETGATE_TOKEN')}   ${s.dim(`(role admin${b.admin.generated ? '; this run only' : ''})`)}`,
      `  Alice token  ${shown(b.second, DEMO_APPROVER_CHOICE_ENV)}   ${s.dim(`(${DEMO_APPROVER}, role approver${b.second.generated ? '; this run only' : ''})`)}`,
      s.dim(
        `               nobody approves their own call: what one dispatches, the other approves`,
      ),
      b.approval === undefined
        ? ''
        : `  Waiting      a production deploy needs your approval: ${s.bold(b.approval)}`,
      '',
      '  Try:',
      `    export FLEETGATE_URL=${b.url} FLEETGATE_TOKEN=${value(b.admin, 'FLEETGATE_TOKEN')}`,
      `    ${cli} agents`,
      b.approval === undefined ? '' : `    ${cli} approvals approve ${b.approval}`,
      `    ${cli} dispatch deployer production_deploy 'ship 1.6.0'   ${s.dim('# waits for a second person')}`,
      `    FLEETGATE_TOKEN=${value(b.second, DEMO_APPROVER_CHOICE_ENV)} ${cli} approvals approve <ID it printed>`,
      `    ${cli} calls   ${s.dim("# what ran; `call ID` tells one call's story")}`,
      `    ${cli} tail 'world.>' 'hitl.>'`,
      '',
      s.dim('  Ctrl-C stops the gateway (calls in flight finish first).'),
      '',
    ]
      .filter((line, i, all) => line !== '' || all[i - 1] !== '')
      .join('\n') + '\n'
  );
}
