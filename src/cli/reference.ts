/**
 * The command reference, generated from the command definitions themselves: the README's command
 * table and docs/cli.md (every command's `--help`). `npm run docs:cli` writes both; a test
 * regenerates them and fails when the files differ, so a new command or flag cannot go
 * undocumented.
 */
import type { Command } from 'commander';
import { buildProgram } from './commands/index.js';
import type { CliIo } from './io.js';

/** Width of the generated help pages, whatever the terminal. */
const HELP_WIDTH = 100;

/** A program built only to be described: no output, no colour, a fixed width. */
function describedProgram(): Command {
  const silent: CliIo = { out: () => undefined, err: () => undefined, color: false, version: '' };
  const program = buildProgram(silent, () => undefined);
  const fix = (cmd: Command): void => {
    cmd.configureOutput({
      ...cmd.configureOutput(),
      getOutHelpWidth: () => HELP_WIDTH,
      getErrHelpWidth: () => HELP_WIDTH,
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    });
    cmd.commands.forEach(fix);
  };
  fix(program);
  return program;
}

/** Every command that does something (has an action), with its full name, depth first. */
function runnable(program: Command): { name: string; cmd: Command }[] {
  const found: { name: string; cmd: Command }[] = [];
  const visit = (cmd: Command, prefix: string): void => {
    for (const sub of cmd.commands) {
      const name = `${prefix} ${sub.name()}`;
      // Commander keeps the action in a private field; a command without one only groups others.
      if ((sub as unknown as { _actionHandler: unknown })._actionHandler !== null) {
        found.push({ name, cmd: sub });
      }
      visit(sub, name);
    }
  };
  visit(program, program.name());
  return found;
}

/** `fleetgate world [domain] [--store <url>] …`: arguments, then every flag. */
function usageOf(name: string, cmd: Command): string {
  const args = cmd.registeredArguments.map((a) => {
    const text = `${a.name()}${a.variadic ? '…' : ''}`;
    return a.required ? `<${text}>` : `[${text}]`;
  });
  const flags = cmd.options
    .filter((o) => !o.hidden)
    .map((o) => {
      const text = `${o.long ?? o.short ?? o.flags}${o.required || o.optional ? ` ${o.flags.replace(/^.*?\s(?=[<[])/u, '')}` : ''}`;
      // A flag the command cannot run without is not shown as optional.
      return o.mandatory ? text : `[${text}]`;
    });
  return [name, ...args, ...flags].join(' ');
}

/** A table cell: one line, `|` escaped. */
function cell(text: string): string {
  return text.replace(/\s+/gu, ' ').replace(/\|/gu, '\\|');
}

/**
 * The README's command table (markdown, before formatting): every command with its arguments and
 * flags, and what it does.
 */
export function commandTable(program: Command = describedProgram()): string {
  const rows = runnable(program).map(
    ({ name, cmd }) => `| \`${cell(usageOf(name, cmd))}\` | ${cell(cmd.description())} |`,
  );
  return ['| command | what it does |', '| --- | --- |', ...rows].join('\n');
}

/** docs/cli.md (markdown, before formatting): every command's `--help`, as the command prints it. */
export function helpPages(program: Command = describedProgram()): string {
  const pages = [program, ...runnable(program).map((r) => r.cmd)].map((cmd) => {
    const path: string[] = [];
    for (let c: Command | null = cmd; c !== null; c = c.parent) path.unshift(c.name());
    return `## ${path.join(' ')}\n\n\`\`\`text\n${cmd.helpInformation().trimEnd()}\n\`\`\`\n`;
  });
  return [
    '# Command reference',
    '',
    '<!-- Generated from the command definitions by `npm run docs:cli`; do not edit by hand. -->',
    '',
    'Every command prints `--help`; this page is the same text. Exit status: `0` done, `1` the',
    'command ran and found problems (lint errors, an agent not fresh, an invalid configuration',
    'for `config check`, a denied call), `2` it could not do its work (bad usage or input, or a',
    'store, bus or agent it needs failed). An error is printed as `CODE: message` on one line,',
    'then `  fix: …` from [errors.md](errors.md); with `--json` it is',
    '`{ "error": { "code", "message", "fix" } }` on stdout instead.',
    '',
    ...pages,
  ].join('\n');
}
