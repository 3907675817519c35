/**
 * The `fleetgate` command. Each sub-command lives in `commands/` and is listed once in
 * `commands/index.ts`; an action returns its exit code instead of calling `process.exit`, so the
 * CLI can be driven in-process by tests and always flushes its output. Only the command the line
 * names is loaded (`commands/lazy.ts`); help and an unknown command load them all. Whatever goes wrong — a
 * command's error, commander's usage errors, anything unexpected — goes through the one printer
 * in `errors.ts`.
 */
import type { Command } from 'commander';
import { CommanderError } from 'commander';
import { COMMAND_LOADERS, loadAllCommands } from './commands/lazy.js';
import { EXIT, printError, usageError } from './errors.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';
import { createProgram } from './program.js';

export { EXIT } from './errors.js';

/** The words of the command `args` run (`fleetgate approvals approve`), for a usage hint. */
function commandOf(program: Command, args: readonly string[]): string {
  const words = [program.name()];
  let current = program;
  for (const arg of args) {
    if (arg.startsWith('-')) continue;
    const sub = current.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (sub === undefined) break;
    words.push(sub.name());
    current = sub;
  }
  return words.join(' ');
}

/** `--json` among the arguments (before a `--`): errors are then JSON on stdout too. */
function wantsJson(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json');
}

/**
 * Runs the CLI with `argv` (as in `process.argv`) and resolves to the exit code: 0 done, 1 ran and
 * found problems, 2 could not do its work (see docs/errors.md).
 *
 * @example
 * ```ts
 * process.exitCode = await main(process.argv);
 * ```
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let exitCode: number = EXIT.ok;
  const args = argv.slice(2);
  const named = args.find((a) => !a.startsWith('-'));
  const loader = named === undefined ? undefined : COMMAND_LOADERS[named];
  const program = createProgram(
    io,
    (code) => {
      exitCode = code;
    },
    loader !== undefined
      ? [await loader()]
      : named === undefined && (args.includes('-V') || args.includes('--version'))
        ? []
        : await loadAllCommands(),
  );
  const report = { json: wantsJson(args), command: commandOf(program, args) };
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with exit code 0.
      if (error.exitCode === 0) return EXIT.ok;
      printError(
        io,
        error.code === 'commander.help'
          ? usageError(
              new CommanderError(2, error.code, `${report.command} needs a command (listed above)`),
            )
          : usageError(error),
        report,
      );
      return EXIT.errors;
    }
    printError(io, error, report);
    return EXIT.errors;
  }
  return exitCode;
}
