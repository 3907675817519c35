/**
 * The commands open a PostgreSQL store the way the gateway does: the `?schema=` of the store URL,
 * from `--config` or `--store`, is the schema the gateway writes; and the password of that URL is
 * shown nowhere (the start banner, its `gateway started` log line, `config check`). A real gateway
 * in its own process on a schema of its own, a real example agent, the CLI in child processes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent, type RunningAgent } from '../examples/agents/index.js';
import { createInMemoryEventBus, OUTBOX_WRITERS } from '../src/bus/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import { startServiceProcess, type ServiceProcess } from './support/gateway-service.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { deltaEvent } from './world-store-contract.js';

const pgUp = await requirePostgres();

const ADMIN = 'schema-cli-admin-token-0123456789';

/**
 * The store URL with a password in it: the test server's own, or (the local server trusts
 * loopback and ignores it) one made up for the test. Either must never be printed.
 */
function withPassword(url: string): { url: string; password: string; hidden: string } {
  const parsed = new URL(url);
  if (parsed.password === '') parsed.password = 'fg-never-shown-7c1e';
  const hidden = parsed.href.replace(`:${parsed.password}@`, ':***@');
  return { url: parsed.href, password: decodeURIComponent(parsed.password), hidden };
}

/** Seeds a world-state domain into `schema` the way a gateway records it, bypassing any URL. */
async function seedWorld(schema: string): Promise<void> {
  const store = await openGatewayStore(PG_URL, { schema, poolSize: 2 });
  const bus = createInMemoryEventBus();
  const world = createWorldMaterialiser({
    store: createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
    bus,
  });
  try {
    await world.apply(
      deltaEvent([{ domain: 'schema_probe', path: 'data.seen', op: 'set', value: 1 }]),
    );
  } finally {
    await bus.close();
    await store.close();
  }
}

describe.skipIf(!pgUp)('a PostgreSQL store URL with ?schema= in the commands', () => {
  const schema = uniqueName('fg_cli_schema');
  const secret = withPassword(PG_URL);
  const query = `${secret.url.includes('?') ? '&' : '?'}schema=${schema}`;
  const storeUrl = `${secret.url}${query}`;
  /** The store URL as it may be shown: its password hidden. */
  const shownUrl = `${secret.hidden}${query}`;
  let dir: string;
  let config: string;
  let agent: RunningAgent;
  let gw: ServiceProcess;
  let held: string;

  beforeAll(
    async () => {
      dir = mkdtempSync(join(tmpdir(), 'fleetgate-schema-cli-'));
      await seedWorld(schema);
      agent = await startOpsAgent();
      config = join(dir, 'fleetgate.yaml');
      writeFileSync(
        config,
        [
          'listen: { host: 127.0.0.1, port: 0 }',
          `store: ${storeUrl}`,
          `agents: [{ name: ops, url: ${agent.url} }]`,
          'auth:',
          '  tokens:',
          '    - { name: alice, tokenEnv: SCHEMA_ADMIN, roles: [admin] }',
          '',
        ].join('\n'),
      );
      gw = await startServiceProcess({ args: ['--config', config], env: { SCHEMA_ADMIN: ADMIN } });
      // A call the gateway holds for approval (bulk_migration is fleet-wide): a row of its schema.
      const run = await runCli(['dispatch', 'ops', 'bulk_migration', 'migrate repo-a', '--json'], {
        FLEETGATE_URL: gw.url,
        FLEETGATE_TOKEN: ADMIN,
      });
      expect(run.stderr).toBe('');
      held = (JSON.parse(run.stdout) as { decision: { approvalId: string } }).decision.approvalId;
    },
    cliTestTimeout(1, 90_000),
  );

  afterAll(async () => {
    await gw?.stop('SIGTERM');
    await agent?.close();
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      await admin.query(`drop schema if exists ${schema} cascade`);
    } finally {
      await admin.end();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a command from the test's directory, never asking a gateway over HTTP. */
  const cli = (args: readonly string[]) =>
    runCli(args, { FLEETGATE_URL: '', SCHEMA_ADMIN: ADMIN }, { cwd: dir });

  it(
    'world reads the domains of the gateway schema through --config and through --store',
    async () => {
      const [byConfig, byStore] = await Promise.all([
        cli(['world', '--config', config, '--json']),
        cli(['world', '--store', storeUrl, '--json']),
      ]);
      for (const run of [byConfig, byStore]) {
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        expect((JSON.parse(run.stdout) as { name: string }[]).map((d) => d.name)).toEqual([
          'schema_probe',
        ]);
      }
    },
    cliTestTimeout(1),
  );

  it(
    'approvals lists the call the gateway holds, through --config and through --store',
    async () => {
      const [byConfig, byStore] = await Promise.all([
        cli(['approvals', '--config', config, '--json']),
        cli(['approvals', '--store', storeUrl, '--json']),
      ]);
      for (const run of [byConfig, byStore]) {
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        expect((JSON.parse(run.stdout) as { id: string }[]).map((r) => r.id)).toEqual([held]);
      }
    },
    cliTestTimeout(1),
  );

  it(
    'agents and cards refresh run on the gateway schema through --config',
    async () => {
      const agents = await cli(['agents', '--config', config]);
      expect(agents.stderr).toBe('');
      expect(agents.code).toBe(0);
      expect(agents.stdout).toMatch(/^ops\s/m);
      const refresh = await cli(['cards', 'refresh', '--config', config]);
      expect(refresh.stderr).toBe('');
      expect(refresh.code).toBe(0);
      expect(refresh.stdout).toMatch(/^1 agent: /m);
    },
    cliTestTimeout(2),
  );

  it(
    'never shows the password: the start banner and log line, config check as text and as JSON',
    async () => {
      expect(gw.stdout()).toContain(`store ${shownUrl} ·`);
      const started = gw
        .stderr()
        .split('\n')
        .filter((line) => line.includes('"gateway started"'))
        .map((line) => JSON.parse(line) as { store: string });
      expect(started).toEqual([expect.objectContaining({ store: shownUrl })]);
      const [text, json] = await Promise.all([
        cli(['config', 'check', config, '--no-env']),
        cli(['config', 'check', config, '--no-env', '--json']),
      ]);
      expect(text).toMatchObject({ code: 0, stderr: '' });
      expect(text.stdout).toContain(`store ${shownUrl},`);
      expect(json).toMatchObject({ code: 0, stderr: '' });
      expect((JSON.parse(json.stdout) as { config: { store: string } }).config.store).toBe(
        shownUrl,
      );
      for (const shown of [gw.stdout(), gw.stderr(), text.stdout, json.stdout]) {
        expect(shown).not.toContain(secret.password);
      }
    },
    cliTestTimeout(1),
  );
});
