/**
 * Every bad input a user can give the `fleetgate` command, run as a child process: the code, the
 * exit status and the fix line it prints, the same error as JSON with `--json`, and never a
 * stack trace.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGatewayStore } from '../src/service/index.js';
import type { CliRun } from './support/cli.js';
import { runCli } from './support/cli.js';
import { requirePostgres } from './support/services.js';

const pgUp = await requirePostgres();

/** A child process per run: slow on a busy machine, never a hang (runCli kills it first). */
const RUN_MS = 60_000;
const TEST_MS = 2 * RUN_MS + 10_000;

interface Case {
  /** What the user did wrong. */
  name: string;
  args: (dirs: Dirs) => string[];
  env?: NodeJS.ProcessEnv;
  code: string;
  /** The message after `CODE: `. */
  message: RegExp;
  /** The fix line after `  fix: `. */
  fix: RegExp;
  /** Exit status (default 2: the command could not do its work). */
  exit?: number;
  /** Also run with `--json` appended. */
  json?: boolean;
  /** Needs PostgreSQL. */
  pg?: boolean;
}

interface Dirs {
  dir: string;
  store: string;
  closedPort: number;
}

const USAGE_FIX = (command: string): RegExp =>
  new RegExp(
    `^run \`${command.replace(/ /gu, ' ')} --help\` for the arguments and flags it takes$`,
  );

const CASES: Case[] = [
  {
    name: 'a timeout that is not a number',
    args: () => ['lint-card', '--timeout', 'abc', 'card.json'],
    code: 'FLEETGATE_USAGE',
    message: /option '--timeout <ms>' argument 'abc' is invalid\. must be a time above zero/,
    fix: USAGE_FIX('fleetgate lint-card'),
    json: true,
  },
  {
    name: 'a timeout of zero',
    args: () => ['lint-card', '--timeout', '0', 'card.json'],
    code: 'FLEETGATE_USAGE',
    message: /'--timeout <ms>' argument '0' is invalid/,
    fix: USAGE_FIX('fleetgate lint-card'),
  },
  {
    name: 'a card URL with an unsupported scheme',
    args: () => ['lint-card', 'ftp://127.0.0.1/card.json'],
    code: 'FLEETGATE_USAGE',
    message:
      /^lint-card CARD: the scheme ftp:\/\/ of ftp:\/\/127\.0\.0\.1\/card\.json is not supported; use http:\/\/, https:\/\/ or a file path$/,
    fix: USAGE_FIX('fleetgate lint-card'),
    json: true,
  },
  {
    name: 'host:port read as an agent URL, not a file',
    args: () => ['lint-card', '127.0.0.1:9', '--timeout', '2s'],
    code: 'FLEETGATE_CARD_FETCH_FAILED',
    message: /^http:\/\/127\.0\.0\.1:9\/\.well-known\/agent-card\.json: /,
    fix: /^Check the agent URL and that the agent is up/,
  },
  {
    name: 'a card file that does not exist',
    args: () => ['lint-card', 'no/such/card.json'],
    code: 'FLEETGATE_FILE_ACCESS_FAILED',
    message: /^Cannot read the card file no\/such\/card\.json \(no such file or directory/,
    fix: /^Check the path and its permissions\.$/,
    json: true,
  },
  {
    name: 'a card file that is not JSON',
    args: () => ['lint-card', 'README.md'],
    code: 'FLEETGATE_CARD_INVALID',
    message: /^README\.md: not valid JSON/,
    fix: /fleetgate lint-card/,
  },
  {
    name: 'an http:// URL for NATS',
    args: () => ['tail', '--nats', 'http://127.0.0.1:4222'],
    code: 'FLEETGATE_USAGE',
    message:
      /^--nats: the scheme http:\/\/ of http:\/\/127\.0\.0\.1:4222 is not supported; use nats:\/\/, tls:\/\/ or host:port$/,
    fix: USAGE_FIX('fleetgate tail'),
    json: true,
  },
  {
    name: 'an http:// URL for NATS in the environment',
    args: () => ['tail'],
    env: { FLEETGATE_NATS_URL: 'http://127.0.0.1:4222' },
    code: 'FLEETGATE_USAGE',
    message: /^FLEETGATE_NATS_URL: the scheme http:\/\//,
    fix: USAGE_FIX('fleetgate tail'),
  },
  {
    name: 'no NATS URL at all',
    args: () => ['tail'],
    env: { FLEETGATE_NATS_URL: '' },
    code: 'FLEETGATE_USAGE',
    message: /pass --nats URL \(or set FLEETGATE_NATS_URL\)$/,
    fix: USAGE_FIX('fleetgate tail'),
  },
  {
    name: 'a count that is not a number',
    args: () => ['tail', '--nats', 'nats://127.0.0.1:4222', '--count', 'abc'],
    code: 'FLEETGATE_USAGE',
    message: /'--count <n>' argument 'abc' is invalid\. must be a whole number of at least 1/,
    fix: USAGE_FIX('fleetgate tail'),
  },
  {
    name: 'a --from that is neither new nor all',
    args: () => ['tail', '--nats', 'nats://127.0.0.1:4222', '--from', 'yesterday'],
    code: 'FLEETGATE_USAGE',
    message: /'--from <where>' argument 'yesterday' is invalid\. Allowed choices are new, all\./,
    fix: USAGE_FIX('fleetgate tail'),
  },
  {
    name: '--path without --history',
    args: ({ store }) => ['world', 'ci', '--path', 'data.x', '--store', store],
    code: 'FLEETGATE_USAGE',
    message: /^--path applies only with --history$/,
    fix: USAGE_FIX('fleetgate world'),
    json: true,
  },
  {
    name: '--history without a domain',
    args: ({ store }) => ['world', '--history', '--store', store],
    code: 'FLEETGATE_USAGE',
    message: /^--history needs a DOMAIN$/,
    fix: USAGE_FIX('fleetgate world'),
  },
  {
    name: 'a limit below 1',
    args: ({ store }) => ['world', 'ci', '--history', '--limit', '0', '--store', store],
    code: 'FLEETGATE_USAGE',
    message: /'--limit <n>' argument '0' is invalid\. must be a whole number from 1 to 10000/,
    fix: USAGE_FIX('fleetgate world'),
  },
  {
    name: 'a store URL of an unsupported kind',
    args: () => ['world', '--store', 'mysql://db/fleet'],
    code: 'FLEETGATE_STORE_URL_INVALID',
    message: /^Store URL mysql:\/\/db\/fleet: use sqlite:PATH or postgres:\/\/…$/,
    fix: /^Use `store: sqlite:/,
    json: true,
  },
  {
    name: 'a domain the store does not have',
    args: ({ store }) => ['world', 'ci', '--store', store],
    code: 'FLEETGATE_WORLD_DOMAIN_UNKNOWN',
    message: /^No world-state domain "ci" in sqlite:.* \(it has none yet\)$/,
    fix: /^Run `fleetgate world` for the list of domains/,
    json: true,
  },
  {
    name: 'reading a store no gateway has set up',
    args: ({ dir }) => ['world', '--store', `sqlite:${join(dir, 'absent', 'fleetgate.db')}`],
    code: 'FLEETGATE_STORE_NOT_INITIALISED',
    message:
      /^No store at .*absent\/fleetgate\.db: it has not been initialised by a gateway; start a gateway on it first \(`fleetgate start`\)/,
    fix: /^Start a gateway on this store once/,
    json: true,
  },
  {
    name: 'deciding an approval in a store no gateway has set up',
    args: ({ dir }) => ['approvals', 'approve', 'a1', '--store', `sqlite:${join(dir, 'none.db')}`],
    code: 'FLEETGATE_STORE_NOT_INITIALISED',
    message: /^No store at .*none\.db/,
    fix: /^Start a gateway on this store once/,
  },
  {
    name: 'a store under /proc (used to hang at full CPU)',
    args: ({ dir }) => ['agents', '--config', join(dir, 'proc.yaml')],
    code: 'FLEETGATE_STORE_OPEN_FAILED',
    message:
      /^Cannot open the SQLite store \/proc\/fleetgate-cli-test\/x\.db: cannot create directory \/proc\/fleetgate-cli-test /,
    fix: /^Point the store at a writable directory/,
  },
  {
    name: 'a store whose directory is a file (used to print a raw EEXIST)',
    args: ({ dir }) => ['cards', 'refresh', '--config', join(dir, 'devnull.yaml')],
    code: 'FLEETGATE_STORE_OPEN_FAILED',
    message: /^Cannot open the SQLite store \/dev\/null\/x\.db: \/dev\/null is not a directory$/,
    fix: /^Point the store at a writable directory/,
    json: true,
  },
  {
    name: 'a configuration with problems',
    args: ({ dir }) => ['agents', '--config', join(dir, 'bad.yaml')],
    code: 'FLEETGATE_CONFIG_INVALID',
    message: /bad\.yaml has 2 problems$/,
    fix: /^Fix each listed key; `fleetgate config check FILE` checks again/,
    json: true,
  },
  {
    name: 'a configuration file that does not exist',
    args: ({ dir }) => ['agents', '--config', join(dir, 'absent.yaml')],
    code: 'FLEETGATE_FILE_ACCESS_FAILED',
    message: /^Cannot read the configuration file .*absent\.yaml \(no such file or directory/,
    fix: /^Check the path and its permissions\.$/,
  },
  {
    name: 'a snooze that is not a duration',
    args: ({ store }) => ['approvals', 'snooze', 'a1', '--for', 'soon', '--store', store],
    code: 'FLEETGATE_USAGE',
    message: /'--for <duration>' argument 'soon' is invalid\. must be a duration like 15m/,
    fix: USAGE_FIX('fleetgate approvals snooze'),
  },
  ...(
    [
      ['1.5', 'a port that is not a whole number (parseInt read 1.5 as port 1)'],
      ['0x1F00', 'a port in hex (parseInt read 0x1F00 as 0: any free port)'],
      ['7433abc', 'a port with letters after it (parseInt read 7433abc as 7433)'],
      ['65536', 'a port above 65535'],
    ] as const
  ).map(([port, name]): Case => ({
    name,
    args: ({ dir }) => ['start', '--config', join(dir, 'fresh.yaml'), '--port', port],
    code: 'FLEETGATE_USAGE',
    message: new RegExp(
      `^option '--port <port>' argument '${port.replace('.', '\\.')}' is invalid\\. must be a whole number from 0 to 65535$`,
    ),
    fix: USAGE_FIX('fleetgate start'),
  })),
  {
    name: 'both --store and --url (the store was read, the gateway ignored)',
    args: ({ store }) => ['world', '--store', store, '--url', 'http://127.0.0.1:1'],
    code: 'FLEETGATE_USAGE',
    message: /^option '--url <url>' cannot be used with option '--store <url>'$/,
    fix: USAGE_FIX('fleetgate world'),
  },
  {
    name: 'both --config and --url for an approval',
    args: ({ dir }) => [
      'approvals',
      'approve',
      'a1',
      '--config',
      join(dir, 'fresh.yaml'),
      '--url',
      'http://127.0.0.1:1',
    ],
    code: 'FLEETGATE_USAGE',
    message: /^option '--url <url>' cannot be used with option '--config <file>'$/,
    fix: USAGE_FIX('fleetgate approvals approve'),
  },
  {
    name: 'a dispatch timeout without a unit (was read as milliseconds)',
    args: ({ closedPort }) => [
      'dispatch',
      'ops',
      'sitrep',
      '--wait',
      '--timeout',
      '30',
      '--url',
      `http://127.0.0.1:${closedPort}`,
    ],
    code: 'FLEETGATE_USAGE',
    message:
      /^option '--timeout <duration>' argument '30' is invalid\. must be a duration with its unit, like 30s or 30m$/,
    fix: USAGE_FIX('fleetgate dispatch'),
    json: true,
  },
  {
    name: 'a dispatch timeout longer than a timer runs (gave up at once)',
    args: ({ closedPort }) => [
      'dispatch',
      'ops',
      'sitrep',
      '--wait',
      '--timeout',
      '99999999999h',
      '--url',
      `http://127.0.0.1:${closedPort}`,
    ],
    code: 'FLEETGATE_USAGE',
    message:
      /^option '--timeout <duration>' argument '99999999999h' is invalid\. must be at most 24d$/,
    fix: USAGE_FIX('fleetgate dispatch'),
    json: true,
  },
  {
    name: 'a duration after --wait, which takes none (was sent as the text)',
    args: ({ closedPort }) => [
      'dispatch',
      'ci',
      'rerun_checks',
      '--wait',
      '5s',
      'PR 7',
      '--url',
      `http://127.0.0.1:${closedPort}`,
    ],
    code: 'FLEETGATE_USAGE',
    message:
      /^--wait takes no value: '5s' after it would be sent as the start of the text; to stop waiting after 5s, write --wait --timeout 5s \(a text that starts with a duration goes before --wait\)$/,
    fix: USAGE_FIX('fleetgate dispatch'),
    json: true,
  },
  {
    name: 'a bare number after --wait',
    args: ({ closedPort }) => [
      'dispatch',
      '--skill',
      'sitrep',
      '--wait',
      '30',
      '--url',
      `http://127.0.0.1:${closedPort}`,
    ],
    code: 'FLEETGATE_USAGE',
    message: /^--wait takes no value: '30' after it .* write --wait --timeout 30s /,
    fix: USAGE_FIX('fleetgate dispatch'),
  },
  {
    name: 'a dispatch timeout that is not a duration',
    args: ({ closedPort }) => [
      'dispatch',
      'ops',
      'sitrep',
      '--wait',
      '--timeout',
      'soon',
      '--url',
      `http://127.0.0.1:${closedPort}`,
    ],
    code: 'FLEETGATE_USAGE',
    message:
      /^option '--timeout <duration>' argument 'soon' is invalid\. must be a duration above zero, like 30s, 10m or 1h$/,
    fix: USAGE_FIX('fleetgate dispatch'),
  },
  {
    name: 'how long to snooze written after the id (was: too many arguments)',
    args: ({ store }) => ['approvals', 'snooze', 'a1', '30m', '--store', store],
    code: 'FLEETGATE_USAGE',
    message:
      /^approvals snooze takes how long as --for: write --for 30m \('30m' after the id is not read\)$/,
    fix: USAGE_FIX('fleetgate approvals snooze'),
    json: true,
  },
  {
    name: 'a reason written after the id (was: too many arguments)',
    args: ({ store }) => ['approvals', 'reject', 'a1', 'wrong', 'week', '--store', store],
    code: 'FLEETGATE_USAGE',
    message:
      /^approvals reject takes one approval id; 'wrong week' after it is not read: a reason goes in --reason 'wrong week'$/,
    fix: USAGE_FIX('fleetgate approvals reject'),
  },
  {
    name: 'an empty reason for a cancel',
    args: ({ closedPort }) => [
      'cancel',
      'c1',
      '--reason',
      ' ',
      '--url',
      `http://127.0.0.1:${closedPort}`,
    ],
    code: 'FLEETGATE_USAGE',
    message: /^option '--reason <text>' argument ' ' is invalid\. must not be empty$/,
    fix: USAGE_FIX('fleetgate cancel'),
  },
  {
    name: 'a misspelt command',
    args: () => ['wrld'],
    code: 'FLEETGATE_USAGE',
    message: /^unknown command 'wrld' \(did you mean world\?\)$/,
    fix: USAGE_FIX('fleetgate'),
  },
  {
    name: 'an unknown flag',
    args: () => ['world', '--bogus'],
    code: 'FLEETGATE_USAGE',
    message: /^unknown option '--bogus'$/,
    fix: USAGE_FIX('fleetgate world'),
    json: true,
  },
  {
    name: 'a missing argument',
    args: () => ['agents', 'ack', 'quinn'],
    code: 'FLEETGATE_USAGE',
    message: /^missing required argument 'skill'$/,
    fix: USAGE_FIX('fleetgate agents ack'),
  },
  {
    name: 'a command group without its command',
    args: () => ['cards'],
    code: 'FLEETGATE_USAGE',
    message: /^fleetgate cards needs a command \(listed above\)$/,
    fix: USAGE_FIX('fleetgate cards'),
  },
  {
    name: 'an explanation without a gateway to ask',
    args: () => ['policy', 'explain', 'ops', 'sitrep'],
    code: 'FLEETGATE_USAGE',
    message: /^this command talks to a running gateway: pass --url URL or set FLEETGATE_URL$/,
    fix: USAGE_FIX('fleetgate policy explain'),
  },
  {
    name: 'a PostgreSQL server that is not there',
    args: ({ closedPort }) => [
      'world',
      '--store',
      `postgres://postgres@127.0.0.1:${closedPort}/test`,
    ],
    code: 'FLEETGATE_STORE_CONNECT_FAILED',
    message:
      /^Cannot reach PostgreSQL for store postgres:\/\/postgres@127\.0\.0\.1:\d+\/test: connect ECONNREFUSED/,
    fix: /^Check that PostgreSQL runs/,
    json: true,
  },
  {
    name: 'a PostgreSQL role that does not exist',
    args: () => ['world', '--store', 'postgres://fleetgate_no_such_role@127.0.0.1:5432/test'],
    code: 'FLEETGATE_STORE_AUTH_FAILED',
    message:
      /^PostgreSQL refused the credentials of store .*: role "fleetgate_no_such_role" does not exist$/,
    fix: /^Check the user and password in the store URL/,
    pg: true,
  },
  {
    name: 'a PostgreSQL database that does not exist',
    args: () => ['world', '--store', 'postgres://postgres@127.0.0.1:5432/fleetgate_no_such_db'],
    code: 'FLEETGATE_STORE_DATABASE_MISSING',
    message:
      /^The database of store .* does not exist: database "fleetgate_no_such_db" does not exist$/,
    fix: /^Create it \(`createdb NAME`\)/,
    pg: true,
  },
];

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The printed error of a text run: `CODE: message`, maybe problems, `  fix: …`. */
function parseText(run: CliRun): { code: string; message: string; fix: string | undefined } {
  const lines = run.stderr.trimEnd().split('\n');
  const head = lines.findIndex((l) => /^FLEETGATE_[A-Z_]+: /u.test(l));
  expect(head, `no CODE: line in ${JSON.stringify(run.stderr)}`).toBeGreaterThanOrEqual(0);
  const [, code, message] = /^(FLEETGATE_[A-Z_]+): (.*)$/u.exec(lines[head]!)!;
  const fix = lines.find((l) => l.startsWith('  fix: '))?.slice('  fix: '.length);
  return { code: code!, message: message!, fix };
}

function expectNoStackTrace(run: CliRun): void {
  expect(`${run.stdout}\n${run.stderr}`).not.toMatch(/^\s+at .+[:(]/mu);
}

describe('fleetgate: every bad input gives a code, an exit status and a fix', () => {
  const dirs: Dirs = { dir: '', store: '', closedPort: 0 };

  beforeAll(async () => {
    dirs.dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-errors-'));
    dirs.store = `sqlite:${join(dirs.dir, 'gateway.db')}`;
    await (await openGatewayStore(dirs.store)).close();
    dirs.closedPort = await closedPort();
    const write = (name: string, text: string): void => writeFileSync(join(dirs.dir, name), text);
    write('proc.yaml', 'store: sqlite:/proc/fleetgate-cli-test/x.db\n');
    write('devnull.yaml', 'store: sqlite:/dev/null/x.db\n');
    write('bad.yaml', 'lisen: {}\npolicy: { unknownRadius: everything }\n');
    write('fresh.yaml', `store: sqlite:${join(dirs.dir, 'fresh.db')}\n`);
  });
  afterAll(() => rmSync(dirs.dir, { recursive: true, force: true }));

  describe.concurrent.each(CASES.filter((c) => pgUp || c.pg !== true))('$name', (c) => {
    it(
      `prints ${c.code} with its fix and exits ${c.exit ?? 2}`,
      async () => {
        const run = await runCli(c.args(dirs), c.env ?? {}, { timeoutMs: RUN_MS });
        expectNoStackTrace(run);
        expect(run.code).toBe(c.exit ?? 2);
        const printed = parseText(run);
        expect(printed.code).toBe(c.code);
        expect(printed.message).toMatch(c.message);
        expect(printed.fix).toMatch(c.fix);
        expect(run.stdout).toBe('');
      },
      TEST_MS,
    );

    it.runIf(c.json === true)(
      'prints the same error as JSON on stdout with --json',
      async () => {
        const args = c.args(dirs);
        const run = await runCli(
          args.includes('--json') ? args : [...args, '--json'],
          c.env ?? {},
          {
            timeoutMs: RUN_MS,
          },
        );
        expectNoStackTrace(run);
        expect(run.code).toBe(c.exit ?? 2);
        const parsed = JSON.parse(run.stdout) as {
          error: { code: string; message: string; fix: string | null };
        };
        expect(parsed.error.code).toBe(c.code);
        expect(parsed.error.message).toMatch(c.message);
        expect(parsed.error.fix).toMatch(c.fix);
        expect(run.stderr).not.toMatch(/FLEETGATE_/u);
      },
      TEST_MS,
    );
  });

  it(
    'lists every problem of a configuration under the one error line',
    async () => {
      const run = await runCli(['agents', '--config', join(dirs.dir, 'bad.yaml')]);
      expect(run.stderr.split('\n').slice(0, 4)).toEqual([
        expect.stringMatching(/^FLEETGATE_CONFIG_INVALID: .*bad\.yaml has 2 problems$/),
        expect.stringMatching(/^ {2}.*bad\.yaml:1:1 lisen: unknown key; did you mean "listen"\?$/),
        expect.stringMatching(
          /^ {2}.*bad\.yaml:2:26 policy\.unknownRadius: must be one of self, project, repo, fleet, public, proceed \(got "everything"\)$/,
        ),
        expect.stringMatching(/^ {2}fix: /),
      ]);
      const json = await runCli(['agents', '--config', join(dirs.dir, 'bad.yaml'), '--json']);
      const parsed = JSON.parse(json.stdout) as { error: { problems: string[] } };
      expect(parsed.error.problems).toHaveLength(2);
    },
    TEST_MS,
  );
});
