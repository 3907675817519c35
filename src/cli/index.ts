/**
 * The `fleetgate` command: the program, its I/O seam, the error printer and the commands other
 * code drives directly (tests run `main` in-process with a captured {@link CliIo}).
 */
export { EXIT, main } from './main.js';
export { COMMANDS, buildProgram, type RegisterCommand } from './commands/index.js';
export { describeError, errorFixes, printError, type PrintedError } from './errors.js';
export { processIo, type CliIo } from './io.js';
export { lintCard, type LintReport, type LintSkillRow } from './commands/lint-card.js';
export { formatEventLine, runTail, type RunTailOptions } from './commands/tail.js';
export { commandTable, helpPages } from './reference.js';
export { STARTER_CONFIG } from './commands/config.js';
