/**
 * What importing the library loads: database drivers only when a store URL names them, Node's
 * fetch implementation only when something fetches; and a pooled PostgreSQL connection that dies
 * while idle never takes the process down.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openGatewayStore } from '../src/service/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { until } from './support/gateway.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pgUp = await requirePostgres();

/** Runs `code` as an ES module in a fresh Node process (TypeScript through tsx); its stdout. */
function runFresh(code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', code],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) =>
      status === 0 ? resolve(stdout) : reject(new Error(`exit ${status}: ${stderr}`)),
    );
  });
}

describe('store drivers', () => {
  it('loads neither driver on import, and only better-sqlite3 for a sqlite: URL', async () => {
    const out = await runFresh(`
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      const drivers = () => [...new Set(Object.keys(require.cache)
        .map((k) => /node_modules\\/(pg|better-sqlite3)\\//.exec(k)?.[1])
        .filter(Boolean))];
      const { openStore } = await import('./src/store/index.ts');
      const afterImport = drivers();
      const store = await openStore('sqlite::memory:', { migrations: {} });
      await store.close();
      console.log(JSON.stringify({ afterImport, afterSqlite: drivers() }));
    `);
    expect(JSON.parse(out)).toEqual({ afterImport: [], afterSqlite: ['better-sqlite3'] });
  });
});

describe('importing the library', () => {
  it("does not load Node's fetch implementation (naming the global Response would)", async () => {
    const out = await runFresh(`
      const undici = () => process.moduleLoadList.filter((m) => m.includes('undici')).length;
      const before = undici();
      await import('./src/index.ts');
      console.log(JSON.stringify({ before, after: undici() }));
    `);
    expect(JSON.parse(out)).toEqual({ before: 0, after: 0 });
  });
});

describe.skipIf(!pgUp)('store on PostgreSQL', () => {
  it('survives the server ending an idle pooled connection, and the next query works', async () => {
    const applicationName = uniqueName('fgidle');
    const errors: Error[] = [];
    const store = await openGatewayStore(PG_URL, {
      migrate: false,
      poolSize: 1,
      applicationName,
      onError: (error) => errors.push(error),
    });
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      await store.db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
      // The pooled connection is idle now; end it from another session, as a restart or an
      // operator would. pg then emits 'error' on the pool.
      const ended = await admin.query(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
        [applicationName],
      );
      expect(ended.rowCount).toBe(1);
      await until(() => store.idleErrors === 1, 10_000, 'the pool to report the ended connection');
      expect(errors).toHaveLength(1);
      const row = await store.db.selectNoFrom((eb) => eb.lit(2).as('two')).executeTakeFirst();
      expect(row).toEqual({ two: 2 });
    } finally {
      await admin.end();
      await store.close();
    }
  });
});
