/**
 * The `fleetgate` command: the program, its I/O seam and the commands other code drives directly
 * (tests run `main` in-process with a captured {@link CliIo}).
 */
export { EXIT, buildProgram, main } from './main.js';
export { processIo, type CliIo } from './io.js';
export { lintCard, type LintReport, type LintSkillRow } from './commands/lint-card.js';
export { formatEventLine, runTail, type RunTailOptions } from './commands/tail.js';
