/**
 * Flag and argument parsers shared by the commands. Each refuses a bad value while commander
 * parses the command line, so the error names the flag (`option '--timeout <ms>' argument 'abc'
 * is invalid. must be …`) and no command starts with a value it cannot use.
 */
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from 'commander';
import { FleetgateError, parseDuration } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';

/** Longest timer Node runs as asked (about 24.8 days); longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** A whole number from `min` to `max`. */
export function integerFlag(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const n = /^\s*\d+\s*$/u.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `must be a whole number of at least ${min}`
          : `must be a whole number from ${min} to ${max}`,
      );
    }
    return n;
  };
}

/** Milliseconds, written `5000` or as a duration `5s`, `2m`; above zero. */
export function millisecondsFlag(value: string): number {
  const trimmed = value.trim();
  const ms = /^\d+$/u.test(trimmed) ? Number(trimmed) : parseDuration(trimmed);
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0 || ms > MAX_TIMER_MS) {
    throw new InvalidArgumentError(
      'must be a time above zero: milliseconds (5000) or a duration (5s, 2m, 1h)',
    );
  }
  return ms;
}

/** A duration (`15m`, `1h`, `2d`) in milliseconds, above zero. */
export function durationFlag(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) {
    throw new InvalidArgumentError('must be a duration like 15m, 1h or 2d');
  }
  return ms;
}

/**
 * The longest {@link waitFlag}: a whole number of days under what a Node timer holds (about 24.8
 * days; a longer one fires at once, so the command would give up at once).
 */
const MAX_WAIT_MS = 24 * 86_400_000;

/**
 * How long a command waits (`30s`, `10m`, `1h`), in milliseconds: above zero and at most 24d. A
 * duration is written with its unit, as in `fleetgate.yaml`: a bare `30` is refused rather than
 * read as 30 ms.
 */
export function waitFlag(value: string): number {
  const bare = /^\s*(\d+(?:\.\d+)?)\s*$/u.exec(value)?.[1];
  if (bare !== undefined) {
    throw new InvalidArgumentError(`must be a duration with its unit, like ${bare}s or ${bare}m`);
  }
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) {
    throw new InvalidArgumentError('must be a duration above zero, like 30s, 10m or 1h');
  }
  if (ms > MAX_WAIT_MS) throw new InvalidArgumentError('must be at most 24d');
  return ms;
}

/** A non-empty text (a name, a reason). */
export function textFlag(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return value;
}

/**
 * A store URL. The store checks it when it opens it (`FLEETGATE_STORE_URL_INVALID`), before the
 * command reads or writes anything; the parser is not loaded here so that commands which never
 * open a store do not pay for it.
 */
export function storeFlag(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return value;
}

/** `scheme://…`: an input that names a scheme, whatever it is. */
const WITH_SCHEME = /^([a-z][a-z0-9+.-]*):\/\//iu;
/** `host:port` or `[v6]:port`, optionally with a path: an address without a scheme. */
const HOST_PORT = /^(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?):\d{1,5}(?:\/.*)?$/iu;

/** What a command-line input names: a file, or a URL with a scheme the flag supports. */
export type Target = { kind: 'file'; path: string } | { kind: 'url'; url: string };

/**
 * Reads an input the way a person means it: anything with a scheme, or `host:port`, is a URL
 * (`host:port` gets `defaultScheme`), `file://` and everything else a file path.
 *
 * @param what names the input in errors (`lint-card CARD`, `--nats`).
 * @throws FleetgateError `FLEETGATE_USAGE` for a scheme the input does not support, naming the
 * ones it does.
 */
export function readTarget(
  value: string,
  options: { what: string; schemes: readonly string[]; defaultScheme: string; files?: boolean },
): Target {
  const scheme = WITH_SCHEME.exec(value)?.[1]?.toLowerCase();
  if (scheme === 'file' && options.files === true) {
    return { kind: 'file', path: fileURLToPath(value) };
  }
  const url =
    scheme !== undefined
      ? value
      : HOST_PORT.test(value)
        ? `${options.defaultScheme}://${value}`
        : undefined;
  if (url === undefined) {
    if (options.files === true) return { kind: 'file', path: value };
    throw unsupported(value, options);
  }
  const protocol = scheme ?? options.defaultScheme;
  if (!options.schemes.includes(protocol)) throw unsupported(value, options, protocol);
  try {
    new URL(url);
  } catch {
    throw new FleetgateError('FLEETGATE_USAGE', `${options.what}: ${value} is not a valid URL`);
  }
  return { kind: 'url', url };
}

function unsupported(
  value: string,
  options: { what: string; schemes: readonly string[]; files?: boolean },
  scheme?: string,
): FleetgateError {
  const allowed = options.schemes.map((s) => `${s}://`).join(', ');
  const also = options.files === true ? ' or a file path' : ' or host:port';
  return new FleetgateError(
    'FLEETGATE_USAGE',
    `${options.what}: ${scheme === undefined ? `${value} is not a URL` : `the scheme ${scheme}:// of ${value} is not supported`}; use ${allowed}${also}`,
    { details: { value, ...defined({ scheme }) } },
  );
}

/** NATS server URLs as `--nats` and `FLEETGATE_NATS_URL` take them: `nats://`, `tls://`, `host:port`, comma-separated. */
export function natsServers(value: string, what: string): string {
  const servers = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (servers.length === 0) throw new FleetgateError('FLEETGATE_USAGE', `${what} is empty`);
  return servers
    .map((s) => {
      const target = readTarget(s, { what, schemes: ['nats', 'tls'], defaultScheme: 'nats' });
      return target.kind === 'url' ? target.url : s;
    })
    .join(',');
}
