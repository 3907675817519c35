/**
 * `fleetgate start [--config FILE] [--demo-traffic]`: runs a gateway with its HTTP API until
 * SIGINT or SIGTERM, then stops gracefully and exits 0. Without `--config` it runs the demo: three
 * example agents on free loopback ports, seeded world state, a generated admin token and a
 * deploy waiting for approval.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { pino, type Logger } from 'pino';
import { FleetgateError } from '../../protocol/index.js';
import type { FleetgateConfig } from '../../service/index.js';
import { loadConfigFile, parseConfig, startService } from '../../service/index.js';
import {
  DEMO_TOKEN_ENV,
  demoConfig,
  demoToken,
  seedDemoCalls,
  startDemoFleet,
  startDemoTraffic,
  type DemoFleet,
} from '../../service/demo/index.js';
import type { CliIo } from '../io.js';
import { createStyle } from '../style.js';

interface StartOptions {
  config?: string;
  demoTraffic?: boolean;
  host?: string;
  port?: number;
  logLevel: string;
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
export function registerStart(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('start')
    .description('run the gateway and its HTTP API (no --config: a demo fleet on this machine)')
    .option('-c, --config <file>', 'configuration file (without it: the demo fleet)')
    .option('--demo-traffic', 'demo only: dispatch a call every few seconds so the views move')
    .option('--host <host>', 'listen on this address (overrides listen.host)')
    .option(
      '--port <port>',
      'listen on this port, 0 for any free one (overrides listen.port)',
      (v) => Number.parseInt(v, 10),
    )
    .option('--log-level <level>', `log level on stderr (${LEVELS.join(', ')})`, 'info')
    .action(async (opts: StartOptions) => {
      if (!LEVELS.includes(opts.logLevel)) {
        throw new FleetgateError(
          'FLEETGATE_USAGE',
          `--log-level must be one of ${LEVELS.join(', ')}`,
        );
      }
      if (
        opts.port !== undefined &&
        !(Number.isInteger(opts.port) && opts.port >= 0 && opts.port <= 65535)
      ) {
        throw new FleetgateError(
          'FLEETGATE_USAGE',
          '--port must be a port number (0 for any free one)',
        );
      }
      if (opts.config !== undefined && opts.demoTraffic === true) {
        throw new FleetgateError(
          'FLEETGATE_USAGE',
          '--demo-traffic runs only with the demo (no --config)',
        );
      }
      const logger = serviceLogger(opts.logLevel);
      const env: Record<string, string | undefined> = { ...process.env };
      let demo: DemoFleet | undefined;
      let token: { token: string; generated: boolean } | undefined;
      let config: FleetgateConfig;
      if (opts.config !== undefined) {
        const loaded = await loadConfigFile(opts.config);
        config = {
          ...loaded,
          listen: {
            ...loaded.listen,
            ...(opts.host === undefined ? {} : { host: opts.host }),
            ...(opts.port === undefined ? {} : { port: opts.port }),
          },
        };
      } else {
        if (existsSync('fleetgate.yaml')) {
          io.err('fleetgate: ./fleetgate.yaml is not read without --config; starting the demo\n');
        }
        demo = await startDemoFleet();
        token = demoToken(env);
        env[DEMO_TOKEN_ENV] = token.token;
        config = parseConfig(
          demoConfig(demo, { host: opts.host ?? '127.0.0.1', port: opts.port ?? 7420 }),
          'demo',
        );
      }

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
        throw error;
      }
      const signal = untilSignal(io);
      logger.info(
        { url: service.url, store: config.store, bus: config.bus, agents: config.agents.length },
        'gateway started',
      );
      const s = createStyle(io.color);
      io.out(
        `${s.bold('Fleetgate')} ${io.version} listening on ${service.url}\n` +
          s.dim(`  store ${config.store} · bus ${config.bus} · ${config.agents.length} agent(s)\n`),
      );
      let stopTraffic: (() => Promise<void>) | undefined;
      if (demo !== undefined && token !== undefined) {
        const approval = await seedDemoCalls(service.gateway).catch((error: unknown) => {
          logger.warn({ err: error }, 'demo: the first calls failed');
          return undefined;
        });
        if (opts.demoTraffic === true) {
          stopTraffic = startDemoTraffic(service.gateway, 4000, (error) =>
            logger.warn({ err: error }, 'demo traffic: a call failed'),
          );
        }
        const agents = demo.agents.map((a) => `${a.name} ${s.dim(a.url)}`).join(', ');
        io.out(
          [
            '',
            `  Demo fleet   ${agents}`,
            `  Dashboard    ${service.url}/${token.generated ? `#token=${token.token}` : ''}`,
            `  Admin token  ${token.generated ? token.token : s.dim('(from FLEETGATE_TOKEN)')}${token.generated ? s.dim('   (this run only; set FLEETGATE_TOKEN to choose one)') : ''}`,
            approval === undefined
              ? ''
              : `  Waiting      a production deploy needs your approval: ${s.bold(approval)}`,
            '',
            '  Try:',
            `    export FLEETGATE_URL=${service.url} FLEETGATE_TOKEN=${token.generated ? token.token : '$FLEETGATE_TOKEN'}`,
            '    npx fleetgate agents',
            `    npx fleetgate approvals approve ${approval ?? '<ID>'}`,
            "    npx fleetgate tail 'world.>' 'hitl.>'",
            '',
            s.dim('  Ctrl-C stops the gateway (calls in flight finish first).'),
            '',
          ]
            .filter((line, i, all) => line !== '' || all[i - 1] !== '')
            .join('\n') + '\n',
        );
      }

      const received = await signal;
      io.err(`fleetgate: ${received}, stopping (calls in flight finish first)\n`);
      await stopTraffic?.();
      await service.close();
      await demo?.stop();
      logger.info('gateway stopped');
      io.err('fleetgate: stopped\n');
      setExit(0);
    });
}
