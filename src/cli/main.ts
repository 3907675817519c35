/**
 * The `fleetgate` command. Each sub-command lives in `commands/` and registers itself on the
 * program; an action returns its exit code instead of calling `process.exit`, so the CLI can be
 * driven in-process by tests and always flushes its output.
 */
import { Command, CommanderError } from 'commander';
import { isFleetgateError } from '../protocol/index.js';
import { registerAgents } from './commands/agents.js';
import { registerApprovals } from './commands/approvals.js';
import { registerLintCard } from './commands/lint-card.js';
import { registerStart } from './commands/start.js';
import { registerDispatch } from './commands/dispatch.js';
import { registerFleetActions } from './commands/fleet-actions.js';
import { registerConfigCheck } from './commands/config-check.js';
import { registerTail } from './commands/tail.js';
import { registerWorld } from './commands/world.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';

/** Exit codes shared by every command. */
export const EXIT = { ok: 0, warnings: 1, errors: 2, usage: 64 } as const;

/** Builds the command tree; `setExit` receives the exit code an action decides on. */
export function buildProgram(io: CliIo, setExit: (code: number) => void): Command {
  const program = new Command('fleetgate')
    .description('Blast-radius gating and exactly-once world-state deltas for fleets of A2A agents')
    .version(io.version, '-V, --version')
    .configureOutput({
      writeOut: (s) => io.out(s),
      writeErr: (s) => io.err(s),
    })
    .exitOverride()
    .showHelpAfterError()
    // Options after a sub-command belong to it (`agents ack A S --config F`).
    .enablePositionalOptions();
  registerLintCard(program, io, setExit);
  registerAgents(program, io, setExit);
  registerTail(program, io, setExit);
  registerWorld(program, io, setExit);
  registerApprovals(program, io, setExit);
  registerStart(program, io, setExit);
  registerDispatch(program, io, setExit);
  registerFleetActions(program, io, setExit);
  registerConfigCheck(program, io, setExit);
  return program;
}

/**
 * Runs the CLI with `argv` (as in `process.argv`) and resolves to the exit code.
 *
 * @example
 * ```ts
 * process.exitCode = await main(process.argv);
 * ```
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let exitCode: number = EXIT.ok;
  const program = buildProgram(io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with exit code 0.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const code = isFleetgateError(error) ? `${error.code}: ` : '';
    io.err(`fleetgate: ${code}${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.errors;
  }
  return exitCode;
}
