/**
 * `fleetgate init [FILE]` writes a commented starter configuration; `fleetgate config check
 * [FILE]` reports every problem of one at once (`file:line:col path: message`).
 */
import { writeFileSync } from 'node:fs';
import { FleetgateError, isFleetgateError } from '../../protocol/index.js';
import type { FleetgateConfig } from '../../service/index.js';
import { loadConfigFile, redactStoreUrl } from '../../service/index.js';
import { EXIT, printError } from '../errors.js';
import { DEFAULT_CONFIG, fromEnvironment } from '../store.js';
import { createStyle } from '../style.js';
import type { RegisterCommand } from './types.js';

/** The file `fleetgate init` writes: every section, commented, with its default values. */
export const STARTER_CONFIG = `# Fleetgate configuration: read by the gateway and by the fleetgate commands.
# Every key is optional; the values written here are the defaults.
# Reference: docs/configuration.md. Check this file with: fleetgate config check

# Where the gateway's HTTP API listens.
listen: { host: 127.0.0.1, port: 7420 }

# The store: an SQLite file (embedded), or PostgreSQL: postgres://user@127.0.0.1:5432/fleetgate
store: sqlite:./data/fleetgate.db

# The event bus: in-process (memory), or NATS JetStream: nats://127.0.0.1:4222
bus: memory

# How often agent cards are fetched again, how long a fetch may take, how many at once, and
# after how many failed refreshes in a row an agent is stale.
cards: { refreshInterval: 10m, timeout: 5s, concurrency: 16, staleAfterFailures: 3 }

# The agents of the fleet. Replace [] with one entry per agent, for example:
#   - name: quinn                       # lowercase letters, digits, - and _
#     url: http://127.0.0.1:8080        # the agent's base URL; its card is read from there
#     auth: { bearerEnv: QUINN_TOKEN }  # optional: the variable that holds its bearer token
#     floors: { pr_review: repo }       # optional: the narrowest radius a skill counts as
agents: []

# The approval policy (docs/policy.md).
policy:
  unknownRadius: public # a skill without a blast-v1 declaration counts as this radius
  approvalAtOrAbove: repo # calls at this radius or wider wait for a human
  vetoWindow: 60s
  approvalTtl: 1h

# Domains whose deltas imply a radius, for example:
#   deploy: { minRadius: public }
domains: {}
`;

/** Registers `fleetgate init`. */
export const registerInit: RegisterCommand = (program, io, setExit) => {
  program
    .command('init')
    .description('write a commented starter configuration (fleetgate.yaml)')
    .argument('[file]', 'where to write it', DEFAULT_CONFIG)
    .option('--force', 'replace the file when it exists')
    .action((file: string, opts: { force?: boolean }) => {
      try {
        writeFileSync(file, STARTER_CONFIG, { flag: opts.force === true ? 'w' : 'wx' });
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code === 'EEXIST') {
          throw new FleetgateError(
            'FLEETGATE_USAGE',
            `${file} already exists; pass --force to replace it`,
          );
        }
        const reason = error instanceof Error ? error.message.replace(/^[A-Z]+: /u, '') : '';
        throw new FleetgateError(
          'FLEETGATE_FILE_ACCESS_FAILED',
          `Cannot write ${file} (${reason})`,
          {
            cause: error,
            details: { path: file },
          },
        );
      }
      const s = createStyle(io.color);
      io.out(
        `wrote ${s.bold(file)}; add your agents, then check it with: fleetgate config check${
          file === DEFAULT_CONFIG ? '' : ` ${file}`
        }\n`,
      );
      setExit(EXIT.ok);
    });
};

/**
 * What `fleetgate start` would refuse beyond the file's own shape: the tokens the `auth` section
 * names (set, and long enough, when the environment is checked) and a listen address beyond
 * loopback with no token.
 */
function serviceProblems(config: FleetgateConfig, checkEnv: boolean): string[] {
  const problems: string[] = [];
  const tokens = config.auth?.tokens ?? [];
  if (checkEnv) {
    for (const [i, t] of tokens.entries()) {
      const value = process.env[t.tokenEnv];
      if (value === undefined || value === '') {
        problems.push(`auth.tokens[${i}].tokenEnv: ${t.tokenEnv} is not set in the environment`);
      } else if (value.length < 16) {
        problems.push(`auth.tokens[${i}].tokenEnv: ${t.tokenEnv} holds fewer than 16 characters`);
      }
    }
  }
  const loopback = /^(127\.|localhost$|::1$)/u.test(config.listen.host);
  if (!loopback && tokens.length === 0) {
    problems.push(
      `listen.host: ${config.listen.host} is beyond loopback and auth.tokens is empty: the gateway would refuse to start (FLEETGATE_LISTEN_UNSAFE)`,
    );
  }
  return problems;
}

/** Registers `fleetgate config check`. */
export const registerConfig: RegisterCommand = (program, io, setExit) => {
  program
    .command('config')
    .description('the configuration file')
    .command('check')
    .description(
      'report every problem of a configuration at once (file:line:col path: message); exit 1 when there are any',
    )
    .argument('[file]', 'the configuration file', DEFAULT_CONFIG)
    .option(
      '--no-env',
      'do not check that the environment variables the agents and API tokens name are set',
    )
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { env: boolean; json?: boolean }) => {
      try {
        const config = await loadConfigFile(file, opts.env ? { secrets: fromEnvironment } : {});
        const service = serviceProblems(config, opts.env);
        if (service.length > 0) {
          const problems = service.map((p) => `${file}: ${p}`);
          throw new FleetgateError(
            'FLEETGATE_CONFIG_INVALID',
            problems.length === 1 ? problems[0]! : `${file} has ${problems.length} problems`,
            { details: { problems } },
          );
        }
        // The URLs as shown anywhere: without the password a store or bus URL may carry.
        const shown = {
          ...config,
          store: redactStoreUrl(config.store),
          bus: redactStoreUrl(config.bus),
        };
        if (opts.json === true) {
          io.out(`${JSON.stringify({ ok: true, file, config: shown }, null, 2)}\n`);
        } else {
          const s = createStyle(io.color);
          const agents = config.agents.length;
          io.out(
            `${s.green('valid')} ${file}: ${agents} agent${agents === 1 ? '' : 's'}, store ${shown.store}, bus ${shown.bus}\n`,
          );
        }
        setExit(EXIT.ok);
      } catch (error) {
        // Problems of the content are what this command looks for: reported, exit 1.
        if (!isFleetgateError(error, 'FLEETGATE_CONFIG_INVALID')) throw error;
        printError(io, error, { json: opts.json === true });
        setExit(EXIT.problems);
      }
    });
};
