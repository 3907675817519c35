import type { Command } from 'commander';
import type { CliIo } from '../io.js';

/**
 * Adds a command (or a family of them) to the program. An action returns through `setExit` with
 * its exit code, or throws: the error printer reports what it threw.
 */
export type RegisterCommand = (
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
) => void;
