/**
 * `fleetgate config check FILE`: validates a configuration the way `fleetgate start` will — the
 * schema, every agent entry, and the environment variables the file names — without starting
 * anything. Exit 0 when it would start, 2 otherwise.
 */
import type { Command } from 'commander';
import { AgentDirectory } from '../../fleet/index.js';
import { FleetgateError } from '../../protocol/index.js';
import { loadConfigFile } from '../../service/index.js';
import type { CliIo } from '../io.js';
import { createStyle } from '../style.js';

/** Registers `fleetgate config check`. */
export function registerConfigCheck(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
): void {
  program
    .command('config')
    .description('configuration files')
    .command('check')
    .description('validate a configuration file (schema, agents, named environment variables)')
    .argument('<file>', 'fleetgate.yaml')
    .option('--json', 'print the validated configuration as JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      const config = await loadConfigFile(file);
      const problems: string[] = [];
      try {
        new AgentDirectory({ secrets: (name) => process.env[name] }).load(config.agents);
      } catch (error) {
        const listed = error instanceof FleetgateError ? error.details?.problems : undefined;
        if (Array.isArray(listed)) problems.push(...listed.map(String));
        else problems.push(error instanceof Error ? error.message : String(error));
      }
      for (const [i, t] of (config.auth?.tokens ?? []).entries()) {
        const value = process.env[t.tokenEnv];
        if (value === undefined || value === '')
          problems.push(`auth.tokens[${i}].tokenEnv: ${t.tokenEnv} is not set`);
        else if (value.length < 16)
          problems.push(`auth.tokens[${i}].tokenEnv: ${t.tokenEnv} holds fewer than 16 characters`);
      }
      const loopback = /^(127\.|localhost$|::1$)/.test(config.listen.host);
      if (!loopback && (config.auth?.tokens ?? []).length === 0) {
        problems.push(
          `listen.host: ${config.listen.host} is beyond loopback and auth.tokens is empty (FLEETGATE_LISTEN_UNSAFE)`,
        );
      }
      if (problems.length > 0) {
        throw new FleetgateError(
          'FLEETGATE_CONFIG_INVALID',
          `${file}:\n  ${problems.join('\n  ')}`,
          {
            details: { source: file, problems },
          },
        );
      }
      const s = createStyle(io.color);
      if (opts.json === true) io.out(`${JSON.stringify(config, null, 2)}\n`);
      else {
        io.out(
          `${s.green('ok')} ${file}: ${config.agents.length} agent(s), store ${config.store}, bus ${config.bus}, listen ${config.listen.host}:${config.listen.port}, ${(config.auth?.tokens ?? []).length} token(s)\n`,
        );
      }
      setExit(0);
    });
}
