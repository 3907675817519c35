/**
 * What the commands do to stores and files: reading commands never set a store up or write it
 * (SQLite and a fresh PostgreSQL schema), card failure counts survive from run to run so an agent
 * turns stale, and `fleetgate init` writes a configuration `fleetgate config check` accepts.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STARTER_CONFIG } from '../src/cli/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import { openGatewayStore } from '../src/service/index.js';
import type { CardServer } from './support/card-server.js';
import { cardWith, startCardServer } from './support/card-server.js';
import { runCli } from './support/cli.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';

const pgUp = await requirePostgres();

/** Several child processes per test: slow on a busy machine. */
const TEST_MS = 180_000;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-store-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('reading commands on SQLite', () => {
  it(
    'never create the store file, and leave an existing store unchanged',
    async () => {
      const absent = join(dir, 'never', 'fleetgate.db');
      for (const args of [['world'], ['approvals'], ['approvals', 'approve', 'x1']]) {
        const run = await runCli([...args, '--store', `sqlite:${absent}`]);
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/^FLEETGATE_STORE_NOT_INITIALISED: /m);
      }
      expect(existsSync(join(dir, 'never'))).toBe(false);

      const file = join(dir, 'gw.db');
      await (await openGatewayStore(`sqlite:${file}`)).close();
      const before = readFileSync(file);
      const world = await runCli(['world', '--store', `sqlite:${file}`, '--json']);
      expect(world.code).toBe(0);
      expect(JSON.parse(world.stdout)).toEqual([]);
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0).toBe(0);
    },
    TEST_MS,
  );

  it('open the store read-only: a write through it is refused', async () => {
    const url = `sqlite:${join(dir, 'ro.db')}`;
    await (await openGatewayStore(url)).close();
    const store = await openGatewayStore(url, { readOnly: true });
    try {
      await expect(
        sql`insert into fleetgate_card_failure values ('a', 'u', 1, 'c', 'm', 0)`.execute(store.db),
      ).rejects.toThrow(/readonly/i);
    } finally {
      await store.close();
    }
  });

  it(
    'refuse a store set up by an older release, naming the migrations it misses',
    async () => {
      const url = `sqlite:${join(dir, 'old.db')}`;
      const store = await openGatewayStore(url);
      await sql`delete from fleetgate_migration where name = '0101_fleet_card_failures'`.execute(
        store.db,
      );
      await store.close();
      const run = await runCli(['world', '--store', url]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(
        /^FLEETGATE_STORE_NOT_INITIALISED: The store sqlite:.*old\.db was set up by an older gateway: migration 0101_fleet_card_failures not run yet/m,
      );
    },
    TEST_MS,
  );
});

describe.skipIf(!pgUp)('reading commands on PostgreSQL', () => {
  const schema = uniqueName('fgcliro');
  const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  let admin: pg.Client;

  async function tables(): Promise<string[]> {
    const result = await admin.query<{ table_name: string }>(
      'select table_name from information_schema.tables where table_schema = $1 order by 1',
      [schema],
    );
    return result.rows.map((r) => r.table_name);
  }

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
  });
  afterAll(async () => {
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  });

  it(
    'world and approvals on an empty schema create nothing and say why they stop',
    async () => {
      for (const args of [['world'], ['approvals'], ['approvals', 'reject', 'x1']]) {
        const run = await runCli([...args, '--store', url]);
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(
          /^FLEETGATE_STORE_NOT_INITIALISED: The store postgres:\/\/.* has not been initialised by a gateway \(it has no Fleetgate tables\); start a gateway on it first/m,
        );
      }
      expect(await tables()).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'read a schema a gateway set up, through read-only sessions',
    async () => {
      await (await openGatewayStore(PG_URL, { schema })).close();
      const count = (await tables()).length;
      expect(count).toBeGreaterThan(5);
      const world = await runCli(['world', '--store', url, '--json']);
      expect(world.stderr).toBe('');
      expect(world.code).toBe(0);
      expect(JSON.parse(world.stdout)).toEqual([]);
      const store = await openGatewayStore(url, { readOnly: true });
      try {
        await expect(
          sql`insert into fleetgate_card_failure values ('a', 'u', 1, 'c', 'm', 0)`.execute(
            store.db,
          ),
        ).rejects.toThrow(/read-only transaction/);
      } finally {
        await store.close();
      }
      expect((await tables()).length).toBe(count);
    },
    TEST_MS,
  );
});

describe('card failure counts across runs', () => {
  let server: CardServer;
  let config: string;

  beforeAll(async () => {
    server = await startCardServer();
    server.set('flaky', { type: 'status', status: 503 });
    server.set('quinn', {
      type: 'card',
      card: cardWith('quinn', { sitrep: 'self' }, { hitl: { deploy: { mode: 'gated' } } }),
    });
    config = join(dir, 'fleet.yaml');
    writeFileSync(
      config,
      [
        `store: sqlite:${join(dir, 'fleet.db')}`,
        'cards: { staleAfterFailures: 3 }',
        'agents:',
        `  - { name: flaky, url: "${server.urlOf('flaky')}" }`,
        `  - { name: quinn, url: "${server.urlOf('quinn')}" }`,
        '',
      ].join('\n'),
    );
  });
  afterAll(() => server.close());

  async function flaky(): Promise<{ status: string; failures: number }> {
    const run = await runCli(['agents', '--config', config, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1); // flaky is not fresh
    const report = JSON.parse(run.stdout) as {
      agents: { name: string; status: string; failures: number }[];
    };
    return report.agents.find((a) => a.name === 'flaky')!;
  }

  it(
    'turns an agent stale after 3 failing runs, and fresh again after a good one',
    async () => {
      expect(await flaky()).toMatchObject({ status: 'failed', failures: 1 });
      expect(await flaky()).toMatchObject({ status: 'failed', failures: 2 });
      expect(await flaky()).toMatchObject({ status: 'stale', failures: 3 });
      const table = await runCli(['agents', '--config', config]);
      expect(table.stdout).toMatch(/flaky\s+stale/);
      // A skill without a declared radius shows what the policy counts it as.
      expect(table.stdout).toMatch(/deploy\s+public \(unknown\)\s+gated/);

      server.set('flaky', { type: 'card', card: cardWith('flaky', { x: 'self' }) });
      const refreshed = await runCli(['cards', 'refresh', '--config', config]);
      expect(refreshed.stdout).toContain('2 agents: 1 new, 0 changed, 1 unchanged, 0 failed');
      expect(refreshed.code).toBe(0);
      server.set('flaky', { type: 'status', status: 503 });
      expect(await flaky()).toMatchObject({ status: 'failed', failures: 1 });
    },
    TEST_MS,
  );
});

describe('fleetgate init and config check', () => {
  it(
    'writes a commented starter that config check accepts, and never overwrites by accident',
    async () => {
      const cwd = mkdtempSync(join(dir, 'init-'));
      const init = await runCli(['init'], {}, { cwd });
      expect(init.code).toBe(0);
      expect(init.stdout).toContain('wrote fleetgate.yaml');
      expect(readFileSync(join(cwd, 'fleetgate.yaml'), 'utf8')).toBe(STARTER_CONFIG);
      expect(STARTER_CONFIG).toMatch(/^# /m);

      const check = await runCli(['config', 'check'], {}, { cwd });
      expect(check.stderr).toBe('');
      expect(check.code).toBe(0);
      expect(check.stdout).toBe(
        'valid fleetgate.yaml: 0 agents, store sqlite:./data/fleetgate.db, bus memory\n',
      );

      const again = await runCli(['init'], {}, { cwd });
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(
        /^FLEETGATE_USAGE: fleetgate\.yaml already exists; pass --force to replace it$/m,
      );
      writeFileSync(join(cwd, 'fleetgate.yaml'), 'bus: kafka\n');
      expect((await runCli(['init', '--force'], {}, { cwd })).code).toBe(0);
      expect(readFileSync(join(cwd, 'fleetgate.yaml'), 'utf8')).toBe(STARTER_CONFIG);
    },
    TEST_MS,
  );

  it(
    'refuses a duration without its unit and a zero approval lifetime, veto window or sweep',
    async () => {
      const file = join(dir, 'durations.yaml');
      writeFileSync(file, 'policy:\n  vetoWindow: 60\n  approvalTtl: 0s\n  sweepInterval: 0s\n');
      const run = await runCli(['config', 'check', file]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/durations\.yaml has 3 problems$/m);
      expect(run.stderr).toMatch(
        /durations\.yaml:2:15 policy\.vetoWindow: must be a duration with its unit, like 60s or 60m \(got 60\)/,
      );
      expect(run.stderr).toMatch(
        /durations\.yaml:3:16 policy\.approvalTtl: must be a duration above zero, like 30s or 1h/,
      );
      // Held dispatches are never expired nor released without a sweep.
      expect(run.stderr).toMatch(
        /durations\.yaml:4:18 policy\.sweepInterval: must be a duration above zero, like 30s or 1h/,
      );
    },
    TEST_MS,
  );

  it(
    'reports every problem with exit 1, as text or JSON',
    async () => {
      const file = join(dir, 'check.yaml');
      writeFileSync(
        file,
        'bus: kafka\nagents:\n  - { name: a, url: "http://127.0.0.1:1", auth: { bearerEnv: FG_UNSET_TOKEN } }\n',
      );
      const run = await runCli(['config', 'check', file], { FG_UNSET_TOKEN: '' });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^FLEETGATE_CONFIG_INVALID: .*check\.yaml has 2 problems$/m);
      expect(run.stderr).toMatch(/check\.yaml:1:6 bus: must be memory or nats:\/\/host:port/);
      expect(run.stderr).toMatch(
        /check\.yaml:3:62 agents\[0\]\.auth\.bearerEnv: FG_UNSET_TOKEN is not set/,
      );
      const noEnv = await runCli(['config', 'check', file, '--no-env', '--json']);
      expect(noEnv.code).toBe(1);
      const single = JSON.parse(noEnv.stdout) as {
        error: { code: string; message: string; problems?: string[] };
      };
      // One problem: it is the message itself.
      expect(single.error.code).toBe('FLEETGATE_CONFIG_INVALID');
      expect(single.error.message).toMatch(/check\.yaml:1:6 bus: /);
      expect(single.error.problems).toBeUndefined();
      const unreadable = await runCli(['config', 'check', join(dir, 'nope.yaml')]);
      expect(unreadable.code).toBe(2);
      expect(unreadable.stderr).toMatch(/^FLEETGATE_FILE_ACCESS_FAILED: /m);
    },
    TEST_MS,
  );
});

describe('a store path that cannot be created', () => {
  // The path under /proc (which used to hang) runs in a child process in cli-errors.test.ts.
  it('fails at once with FLEETGATE_STORE_OPEN_FAILED naming the path', async () => {
    await expect(openGatewayStore('sqlite:/dev/null/x.db')).rejects.toSatisfy(
      (e: unknown) =>
        isFleetgateError(e, 'FLEETGATE_STORE_OPEN_FAILED') &&
        e.message.includes('/dev/null is not a directory'),
    );
  });
});
