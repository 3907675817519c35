/**
 * The README's command table and docs/cli.md are generated from the command definitions, so a
 * command or flag cannot be added, renamed or dropped without the docs following.
 * `npm run docs:cli` (FLEETGATE_WRITE_DOCS=1) rewrites both.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { describe, expect, it } from 'vitest';
import { buildProgram, commandTable, helpPages } from '../src/cli/index.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const CLI_DOC = fileURLToPath(new URL('../docs/cli.md', import.meta.url));
const BEGIN = '<!-- commands:begin (generated from the command definitions: npm run docs:cli) -->';
const END = '<!-- commands:end -->';
const write = process.env.FLEETGATE_WRITE_DOCS === '1';

/** Formats markdown the way `prettier --check .` wants it. */
async function prettierMarkdown(text: string, file: string): Promise<string> {
  return format(text, { ...(await resolveConfig(file)), filepath: file });
}

/** The lines between the markers (the generated part). */
function section(readme: string): string {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  expect(begin, `README.md needs the line ${BEGIN}`).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(begin);
  return readme.slice(begin + BEGIN.length, end).trim();
}

/** Every command with an action, by its full name (`fleetgate approvals approve`). */
function commandNames(): string[] {
  const program = buildProgram(
    { out: () => undefined, err: () => undefined, color: false, version: '' },
    () => undefined,
  );
  const names: string[] = [];
  const visit = (cmd: typeof program, prefix: string): void => {
    for (const sub of cmd.commands) {
      const name = `${prefix} ${sub.name()}`;
      if (sub.commands.length === 0 || sub.registeredArguments.length > 0 || sub.options.length > 0)
        names.push(name);
      visit(sub, name);
    }
  };
  visit(program, 'fleetgate');
  return names;
}

describe('command reference', () => {
  it('the README command table is the one the command definitions generate', async () => {
    const readme = readFileSync(README, 'utf8');
    section(readme); // the markers are there
    const generated = `${readme.slice(0, readme.indexOf(BEGIN) + BEGIN.length)}\n\n${commandTable()}\n\n${readme.slice(readme.indexOf(END))}`;
    const expected = await prettierMarkdown(generated, README);
    if (write) writeFileSync(README, expected);
    expect(section(readFileSync(README, 'utf8'))).toBe(section(expected));
    // Every command and every flag of it is in the table.
    const table = section(expected);
    for (const name of commandNames()) expect(table).toContain(`\`${name}`);
    for (const flag of ['--history', '--timeout', '--count', '--from', '--stream', '--prefix']) {
      expect(table).toContain(flag);
    }
  });

  it('docs/cli.md holds every command’s --help as the command prints it', async () => {
    const expected = await prettierMarkdown(helpPages(), CLI_DOC);
    if (write) writeFileSync(CLI_DOC, expected);
    expect(readFileSync(CLI_DOC, 'utf8')).toBe(expected);
    for (const name of commandNames()) expect(expected).toContain(`## ${name}\n`);
  });
});
