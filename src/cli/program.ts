/** The `fleetgate` program without its commands: name, version, output and error handling. */
import { Command } from 'commander';
import type { RegisterCommand } from './commands/types.js';
import type { CliIo } from './io.js';

/** Builds the command tree from `commands`; `setExit` receives the exit code an action decides on. */
export function createProgram(
  io: CliIo,
  setExit: (code: number) => void,
  commands: readonly RegisterCommand[],
): Command {
  const program = new Command('fleetgate')
    .description('Blast-radius gating and exactly-once world-state deltas for fleets of A2A agents')
    .version(io.version, '-V, --version')
    .configureOutput({
      writeOut: (s) => io.out(s),
      writeErr: (s) => io.err(s),
      // Commander's own error text is replaced by the printer's (see `main`).
      outputError: () => undefined,
    })
    .exitOverride()
    // Options after a sub-command belong to it (`agents ack A S --config F`).
    .enablePositionalOptions();
  for (const register of commands) register(program, io, setExit);
  return program;
}
