/**
 * The query options of a store URL, as an operator meets them: `config check`, `start` and the
 * commands' `--store` refuse one the store does not take (the driver would drop it: a misspelt
 * `?shema=` put the tables in `public`) and a schema name the store refuses, naming the option and
 * the rule, before anything connects; the password of the URL is never in what they print. The
 * CLI in child processes; the URLs point at a port nothing listens on, so nothing is reached.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliTestTimeout, runCli } from './support/cli.js';

const ALLOWED =
  '(allowed: schema, sslmode, sslrootcert, sslcert, sslkey, ssl, sslnegotiation, uselibpqcompat, host, port, user, password, application_name, options)';

/** A loopback port nothing listens on: a command that tried to connect there would fail. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('store URL options in config check, start and --store', () => {
  let dir: string;
  let nowhere: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-store-url-'));
    nowhere = `postgres://fg:hunter2@127.0.0.1:${await closedPort()}/fleet`;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'config check and start refuse a misspelt option and a schema the store refuses, at the line',
    async () => {
      const file = join(dir, 'options.yaml');
      writeFileSync(
        file,
        `listen: { port: 0 }\nstore: ${nowhere}?shema=gw_b&schema=Bad-Schema;drop\n`,
      );
      const [check, start] = await Promise.all([
        runCli(['config', 'check', file]),
        runCli(['start', '--config', file], {}, { timeoutMs: 30_000 }),
      ]);
      const lines = [
        `${file}:2:8 store: unknown query option "shema"; did you mean "schema"? ${ALLOWED}`,
        `${file}:2:8 store: ?schema= must be a schema name the store takes: 1 to 63 of a-z, 0-9 and _, not starting with a digit (got "Bad-Schema;drop")`,
      ];
      expect(check.code).toBe(1);
      expect(start.code).toBe(2);
      for (const run of [check, start]) {
        expect(run.stderr).toMatch(/^FLEETGATE_CONFIG_INVALID: /);
        for (const line of lines) expect(run.stderr).toContain(`\n  ${line}\n`);
        expect(run.stderr + run.stdout).not.toContain('hunter2');
      }
    },
    cliTestTimeout(1),
  );

  it(
    'config check refuses a query on a sqlite: URL, which would be part of the file name',
    async () => {
      const file = join(dir, 'sqlite.yaml');
      writeFileSync(file, `store: sqlite:./data/fg.db?schema=gw_b\n`);
      const check = await runCli(['config', 'check', file]);
      expect(check.code).toBe(1);
      expect(check.stderr.split('\n')[0]).toBe(
        `FLEETGATE_CONFIG_INVALID: ${file}:1:8 store: a sqlite: store takes no query options: "?schema=gw_b" would be read as part of the file name (?schema= is for postgres://)`,
      );
    },
    cliTestTimeout(1),
  );

  it(
    'world and approvals --store refuse a misspelt option before connecting',
    async () => {
      const url = `${nowhere}?shema=gw_b`;
      const runs = await Promise.all([
        runCli(['world', '--store', url], { FLEETGATE_URL: '' }),
        runCli(['approvals', '--store', url], { FLEETGATE_URL: '' }),
      ]);
      for (const run of runs) {
        expect(run.code).toBe(2);
        expect(run.stderr.split('\n')[0]).toBe(
          `FLEETGATE_STORE_URL_INVALID: Store URL ${url.replace('hunter2', '***')}: unknown query option "shema"; did you mean "schema"? ${ALLOWED}`,
        );
        expect(run.stderr).not.toContain('hunter2');
      }
    },
    cliTestTimeout(1),
  );
});
