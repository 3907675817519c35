/**
 * The value syntaxes of `fleetgate.yaml` shared by every section: durations and sizes, as
 * functions and as schema parts; the store and bus URLs with their query options, read here once
 * for the configuration check, the gateway and the commands alike.
 */
import { z } from 'zod';
import { FleetgateError, parseDuration, parseSize } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import { parseStoreUrl, redactStoreUrl } from '../store/index.js';
import { didYouMean } from './did-you-mean.js';

export { parseDuration, parseSize } from '../protocol/index.js';

const DURATION_WORDS = 'must be a duration like 5s, 10m or 1h';

/**
 * True while a configuration *file* is checked: a file writes every duration with its unit, so a
 * bare number there (`vetoWindow: 60`) is refused instead of read as 60 ms. An object handed to
 * the library keeps numbers as milliseconds (its type says so). Schemas take no parse context,
 * and a parse is synchronous, so the file checker sets this around its one parse.
 */
let unitsRequired = false;

/** Runs `check` with durations as a file must write them: with a unit. */
export function withDurationUnits<T>(check: () => T): T {
  const before = unitsRequired;
  unitsRequired = true;
  try {
    return check();
  } finally {
    unitsRequired = before;
  }
}

/**
 * A duration key: `250ms`, `5s`, `10m`, `1h`, `2d`, or (from code, not from a file) milliseconds,
 * read as milliseconds.
 */
export const duration = z
  .union([z.string(), z.number()], { error: DURATION_WORDS })
  .transform((value, ctx) => {
    if (typeof value === 'number' && unitsRequired) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a duration with its unit, like ${value}s or ${value}m`,
      });
      return z.NEVER;
    }
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `${DURATION_WORDS} (got ${JSON.stringify(value)})`,
      });
      return z.NEVER;
    }
    return ms;
  });

const SIZE_WORDS = 'must be a size like 512KiB, 4MiB or 1GiB, or a number of bytes';

/** A size key: `512KiB`, `4MiB`, `1MB` or a number of bytes, read as bytes. */
export const size = z
  .union([z.string(), z.number()], { error: SIZE_WORDS })
  .transform((value, ctx) => {
    const bytes = parseSize(value);
    if (bytes === undefined) {
      ctx.addIssue({ code: 'custom', message: `${SIZE_WORDS} (got ${JSON.stringify(value)})` });
      return z.NEVER;
    }
    return bytes;
  });

/** A duration above zero (a window or a lifetime that zero would make meaningless). */
export const positiveDuration = duration.refine((ms) => ms > 0, {
  message: 'must be a duration above zero, like 30s or 1h',
});

/** One reason a URL cannot be used. */
export interface UrlProblem {
  message: string;
  /** The query option at fault, when it is one (the message names it; the rest of the URL is not needed). */
  option?: string;
}

/** How a URL of the configuration reads, or why it cannot be used. */
export type UrlReading<T> = { ok: true; value: T } | { ok: false; problems: UrlProblem[] };

/** What a `store:` URL opens. */
export interface StoreTarget {
  /** The URL the driver connects to: the written one without `?schema=`, which it does not know. */
  url: string;
  /** PostgreSQL: the schema every table lives in (default: the server's `search_path`). */
  schema?: string;
}

/** What a `bus:` URL opens. */
export type BusTarget =
  { kind: 'memory' } | { kind: 'nats'; servers: string; stream?: string; prefix?: string };

/**
 * The query options a `postgres://` store URL takes: `schema`, then the driver's connection
 * parameters the gateway leaves to the URL (TLS, where and as whom to connect, the connections'
 * name, server settings in `options`). The driver drops any other without a word (a misspelt
 * `?shema=` would put the tables in `public`), so any other is refused.
 */
export const STORE_URL_OPTIONS = [
  'schema',
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'ssl',
  'sslnegotiation',
  'uselibpqcompat',
  'host',
  'port',
  'user',
  'password',
  'application_name',
  'options',
] as const;

/** Driver parameters the gateway sets itself, and what to write instead. */
const STORE_URL_INSTEAD: Readonly<Record<string, string>> = {
  statement_timeout: 'set storeTimeouts.statement in the configuration instead',
  query_timeout: 'set storeTimeouts.query in the configuration instead',
  connect_timeout: 'set storeTimeouts.connect in the configuration instead',
  sslpassword: 'the driver reads no key passphrase from the URL; give sslkey a key without one',
};

/** The query options a `nats://` bus URL takes. */
export const BUS_URL_OPTIONS = ['stream', 'prefix'] as const;

/** Schema names the store takes: lowercase, so no statement ever needs to quote them. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/u;
/** Stream names the JetStream bus takes (NATS itself refuses `.`, `*`, `>`, whitespace, `/`, `\`). */
const STREAM_NAME = /^[A-Za-z0-9_-]{1,255}$/u;
/** One subject token: topic `a.b` is published as `<prefix>.a.b`, dead letters as `<prefix>_dlq.…`. */
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+$/u;

const STORE_SHAPE = 'must be sqlite:PATH or postgres://user@host:port/database';
const BUS_SHAPE = 'must be memory or nats://host:port';

/**
 * Reads a store URL: `sqlite:PATH` (no query: the path runs to its end), or `postgres://…` with
 * the options of {@link STORE_URL_OPTIONS}, `?schema=` taken out for the store.
 */
export function readStoreUrl(url: string): UrlReading<StoreTarget> {
  let kind: 'sqlite' | 'postgres';
  try {
    kind = parseStoreUrl(url).kind;
  } catch {
    return { ok: false, problems: [{ message: STORE_SHAPE }] };
  }
  const at = url.indexOf('?');
  if (at < 0) return { ok: true, value: { url } };
  if (kind === 'sqlite') {
    return {
      ok: false,
      problems: [
        {
          message: `a sqlite: store takes no query options: ${quoted(url.slice(at))} would be read as part of the file name (?schema= is for postgres://)`,
          option: url.slice(at + 1),
        },
      ],
    };
  }
  const params = new URLSearchParams(url.slice(at + 1));
  const problems = optionProblems(params, STORE_URL_OPTIONS, STORE_URL_INSTEAD);
  const schema = params.get('schema') ?? undefined;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    problems.push({
      message: `?schema= must be a schema name the store takes: 1 to 63 of a-z, 0-9 and _, not starting with a digit (got ${quoted(schema)})`,
      option: 'schema',
    });
  }
  // The driver's `options` replace the search path the store sets for `schema`, silently.
  if (schema !== undefined && params.has('options')) {
    problems.push({
      message:
        '?options= cannot go with ?schema=: the driver would put its options in place of the search path ?schema= sets (drop ?options=, or drop ?schema= and set search_path in ?options=)',
      option: 'options',
    });
  }
  if (problems.length > 0) return { ok: false, problems };
  params.delete('schema');
  const rest = params.toString();
  const base = url.slice(0, at);
  return {
    ok: true,
    value: { url: rest === '' ? base : `${base}?${rest}`, ...defined({ schema }) },
  };
}

/**
 * Reads a bus URL: `memory`, or `nats://host:port` (servers comma-separated) with the options of
 * {@link BUS_URL_OPTIONS}: `?stream=NAME&prefix=name` keeps deployments apart on one server.
 */
export function readBusUrl(url: string): UrlReading<BusTarget> {
  if (url === 'memory') return { ok: true, value: { kind: 'memory' } };
  const at = url.indexOf('?');
  const servers = at < 0 ? url : url.slice(0, at);
  // tls:// too: the NATS client takes it, and `fleetgate tail --nats` always has.
  if (!/^(?:nats|tls):\/\/\S/u.test(servers))
    return { ok: false, problems: [{ message: BUS_SHAPE }] };
  if (at < 0) return { ok: true, value: { kind: 'nats', servers } };
  const params = new URLSearchParams(url.slice(at + 1));
  const problems = optionProblems(params, BUS_URL_OPTIONS, {});
  const stream = params.get('stream') ?? undefined;
  const prefix = params.get('prefix') ?? undefined;
  if (stream !== undefined && !STREAM_NAME.test(stream)) {
    problems.push({
      message: `?stream= must be a JetStream stream name: 1 to 255 letters, digits, _ and - (no ., *, >, whitespace or path separators) (got ${quoted(stream)})`,
      option: 'stream',
    });
  }
  if (prefix !== undefined && !SUBJECT_TOKEN.test(prefix)) {
    problems.push({
      message: `?prefix= must be one subject token, events being sent as <prefix>.<topic>: letters, digits, _ and - (no ., *, > or whitespace) (got ${quoted(prefix)})`,
      option: 'prefix',
    });
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: { kind: 'nats', servers, ...defined({ stream, prefix }) } };
}

/**
 * The bus a URL names, read as the gateway reads its `bus:` (and `fleetgate tail` its `--nats`).
 *
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` naming each problem.
 */
export function parseBusUrl(url: string): BusTarget {
  const read = readBusUrl(url);
  if (read.ok) return read.value;
  throw urlError('FLEETGATE_CONFIG_INVALID', `Bus URL ${redactStoreUrl(url)}`, read.problems);
}

/**
 * The store a URL names, read as the gateway reads its `store:`.
 *
 * @throws FleetgateError `FLEETGATE_STORE_URL_INVALID` naming each problem.
 */
export function parseStoreTarget(url: string): StoreTarget {
  // A URL of the wrong shape is refused in the store's own words (`use sqlite:PATH or …`).
  parseStoreUrl(url);
  const read = readStoreUrl(url);
  if (read.ok) return read.value;
  throw urlError('FLEETGATE_STORE_URL_INVALID', `Store URL ${redactStoreUrl(url)}`, read.problems);
}

function urlError(
  code: 'FLEETGATE_CONFIG_INVALID' | 'FLEETGATE_STORE_URL_INVALID',
  what: string,
  found: readonly UrlProblem[],
): FleetgateError {
  const problems = found.map((p) => p.message);
  const summary =
    problems.length === 1 ? `${what}: ${problems[0]!}` : `${what} has ${problems.length} problems`;
  return new FleetgateError(
    code,
    problems.length === 1 ? summary : `${summary}: ${problems.join('; ')}`,
    { details: { summary, problems } },
  );
}

/** Unknown and repeated query options, each named with the ones the URL takes. */
function optionProblems(
  params: URLSearchParams,
  accepted: readonly string[],
  instead: Readonly<Record<string, string>>,
): UrlProblem[] {
  const problems: UrlProblem[] = [];
  const seen = new Set<string>();
  const told = new Set<string>();
  for (const key of params.keys()) {
    const name = quoted(key);
    if (seen.has(key)) {
      if (!told.has(key))
        problems.push({ message: `query option ${name} is given twice`, option: key });
      told.add(key);
      continue;
    }
    seen.add(key);
    if (accepted.includes(key)) continue;
    const guess = didYouMean(key, accepted);
    const hint =
      instead[key] !== undefined
        ? `: ${instead[key]}`
        : guess === undefined
          ? ''
          : `; did you mean "${guess}"?`;
    problems.push({
      message: `unknown query option ${name}${hint} (allowed: ${accepted.join(', ')})`,
      option: key,
    });
  }
  return problems;
}

/** A value of a URL as a problem shows it: quoted, cut at 60 characters. */
function quoted(value: string): string {
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
