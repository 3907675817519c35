/**
 * The one error printer of the `fleetgate` command. Every command, commander's own usage errors
 * and anything unexpected end here, printed the same way:
 *
 * ```text
 * FLEETGATE_STORE_NOT_INITIALISED: No store at /srv/fg.db: it has not been initialised by a gateway…
 *   fix: Start a gateway on the store once …
 * ```
 *
 * With `--json` the same error is a JSON object on stdout: `{ "error": { code, message, fix } }`.
 * The fix is the one `docs/errors.md` gives for the code (the package ships its docs), so the
 * table users read and the hint the command prints cannot drift apart.
 */
import { readFileSync } from 'node:fs';
import type { CommanderError } from 'commander';
import type { ErrorCode } from '../protocol/index.js';
import { ERROR_CODES, FleetgateError, isFleetgateError } from '../protocol/index.js';
import type { CliIo } from './io.js';

/** Exit codes shared by every command. */
export const EXIT = {
  /** Done, nothing to report. */
  ok: 0,
  /** The command ran and found problems (lint errors, an agent not fresh, a denied call…). */
  problems: 1,
  /** The command could not do its work: bad usage or input, or a store/bus/agent it needs failed. */
  errors: 2,
} as const;

/** What the printer shows of an error. */
export interface PrintedError {
  code: ErrorCode;
  /** One line. */
  message: string;
  /** What to do about it (docs/errors.md); null when the table has nothing. */
  fix: string | null;
  /** Further lines, e.g. every problem of a configuration file. */
  problems?: string[];
}

/** Found from the package's root (the built CLI is bundled: this module has no place of its own). */
const DOCS = new URL('docs/errors.md', import.meta.resolve('fleetgate/package.json'));

let fixes: ReadonlyMap<string, string> | undefined;

/**
 * The fix column of docs/errors.md by code. Markdown links become `text (docs/file.md)`; code
 * spans keep their backticks, which read well in a terminal.
 */
export function errorFixes(): ReadonlyMap<string, string> {
  if (fixes !== undefined) return fixes;
  const table = new Map<string, string>();
  let text = '';
  try {
    text = readFileSync(DOCS, 'utf8');
  } catch {
    // A package installed without its docs still prints every error, only without the hint.
  }
  for (const line of text.split('\n')) {
    const row = /^\| `(FLEETGATE_[A-Z_]+)` +\|(.*)\|\s*$/u.exec(line);
    if (row === null) continue;
    const cells = row[2]!.split(/(?<!\\)\|/u);
    const fix = cells.at(-1)?.trim();
    if (fix === undefined || fix === '') continue;
    table.set(
      row[1]!,
      fix
        .replace(/\\\|/gu, '|')
        .replace(/\[([^\]]+)\]\(([^)#]+)(#[^)]*)?\)/gu, (_, label: string, file: string) =>
          /^[a-z]+:/u.test(file) ? `${label} (${file})` : `${label} (docs/${file})`,
        ),
    );
  }
  fixes = table;
  return table;
}

/** One line: embedded newlines (multi-line driver messages) become `; `. */
function oneLine(text: string): string {
  return text
    .split(/\r?\n/u)
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join('; ');
}

/** A commander usage error (unknown option, missing argument…) as `FLEETGATE_USAGE`. */
export function usageError(error: CommanderError): FleetgateError {
  const message = oneLine(error.message.replace(/^error: /u, ''))
    // "(Did you mean --json?)" reads as part of the sentence.
    .replace(/; \(Did you mean (.+)\)$/u, ' (did you mean $1)');
  return new FleetgateError('FLEETGATE_USAGE', message, {
    cause: error,
    details: { commander: error.code },
  });
}

/** Anything thrown, as a Fleetgate error: unexpected errors become `FLEETGATE_INTERNAL`. */
export function asFleetgateError(error: unknown): FleetgateError {
  if (isFleetgateError(error)) return error;
  const message = error instanceof Error && error.message !== '' ? error.message : String(error);
  return new FleetgateError('FLEETGATE_INTERNAL', message, { cause: error });
}

/**
 * What to print for an error. `command` (e.g. `fleetgate world`) makes the fix of a usage error
 * point at that command's help.
 */
export function describeError(error: unknown, command?: string): PrintedError {
  const e = asFleetgateError(error);
  const problems = Array.isArray(e.details?.problems)
    ? e.details.problems.filter((p): p is string => typeof p === 'string').map(oneLine)
    : [];
  const summary = typeof e.details?.summary === 'string' ? e.details.summary : undefined;
  const message = oneLine(
    problems.length > 1 ? (summary ?? `${problems.length} problems`) : e.message,
  );
  const fix =
    e.code === 'FLEETGATE_USAGE' && command !== undefined
      ? `run \`${command} --help\` for the arguments and flags it takes`
      : (errorFixes().get(e.code) ?? null);
  return {
    code: e.code,
    message: message === '' ? ERROR_CODES[e.code] : message,
    fix,
    ...(problems.length > 1 ? { problems } : {}),
  };
}

/**
 * Prints an error: `CODE: message`, its problems indented, then `  fix: …`, on stderr; or with
 * `json`, `{ "error": { code, message, fix, problems? } }` on stdout. Never a stack trace.
 */
export function printError(
  io: CliIo,
  error: unknown,
  options: { json: boolean; command?: string },
): void {
  const printed = describeError(error, options.command);
  if (options.json) {
    io.out(`${JSON.stringify({ error: printed }, null, 2)}\n`);
    return;
  }
  const lines = [`${printed.code}: ${printed.message}`];
  for (const problem of printed.problems ?? []) lines.push(`  ${problem}`);
  if (printed.fix !== null) lines.push(`  fix: ${printed.fix}`);
  io.err(`${lines.join('\n')}\n`);
}
