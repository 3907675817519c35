import { readFileSync } from 'node:fs';

/** Where a command writes, and whether colour is wanted; tests pass their own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** True when stdout is a terminal that wants colour. */
  color: boolean;
  version: string;
}

function packageVersion(): string {
  // Through the package's own name: the built CLI is bundled, so this module's place in dist/
  // says nothing about where package.json is.
  const raw = readFileSync(new URL(import.meta.resolve('fleetgate/package.json')), 'utf8');
  const parsed: unknown = JSON.parse(raw);
  return typeof parsed === 'object' && parsed !== null && 'version' in parsed
    ? String(parsed.version)
    : '0.0.0';
}

/** The process's own stdout/stderr; colour follows the terminal, `NO_COLOR` and `FORCE_COLOR`. */
export function processIo(): CliIo {
  const env = process.env;
  const color =
    env.NO_COLOR === undefined && (env.FORCE_COLOR !== undefined || process.stdout.isTTY === true);
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    color,
    version: packageVersion(),
  };
}
