/**
 * A gateway on a store a newer release migrated: `fleetgate start` as a child process on a SQLite
 * store whose migration table records a migration this release does not know, as a rollback (or
 * an old replica restarted mid-roll) meets it. Migrations only add, so the store opens as it is —
 * the migrations named in the log, nothing migrated — and calls run; a store whose unknown
 * migration sorts among this release's own (another branch's) is refused, naming it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/harness.js';
import { startOpsAgent } from '../examples/agents/ops-agent.js';
import { startServiceProcess } from './support/gateway-service.js';
import { startOutcome } from './support/start-outcome.js';

describe('a gateway on a store a newer release migrated', () => {
  let dir: string;
  let agent: RunningAgent;
  let file: string;
  let config: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-newer-store-'));
    agent = await startOpsAgent();
    file = join(dir, 'fleetgate.db');
    config = join(dir, 'fleetgate.yaml');
    writeFileSync(
      config,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        `store: sqlite:${file}`,
        `agents: [{ name: ops, url: ${agent.url} }]`,
      ].join('\n'),
    );
    // This release sets the store up.
    const first = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 });
    expect(await first.stop('SIGTERM')).toBe(0);
  }, 90_000);

  afterAll(async () => {
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Records `name` as run in the store's migration table, as another release would have. */
  function record(name: string): void {
    const db = new Database(file);
    try {
      db.prepare('insert into fleetgate_migration (name, timestamp) values (?, ?)').run(
        name,
        new Date().toISOString(),
      );
    } finally {
      db.close();
    }
  }

  function forget(name: string): void {
    const db = new Database(file);
    try {
      db.prepare('delete from fleetgate_migration where name = ?').run(name);
    } finally {
      db.close();
    }
  }

  it('starts on it as it is, names the newer migrations in its log, and runs calls', async () => {
    record('9990_from_a_newer_release');
    const g = await startServiceProcess({ args: ['--config', config], timeoutMs: 60_000 });
    try {
      const log = g.stdout() + g.stderr();
      expect(log).toContain('store migrated by a newer release');
      expect(log).toContain('9990_from_a_newer_release');
      const response = await fetch(`${g.url}/api/dispatch?wait=30s`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'ops', skill: 'sitrep', text: 'status' }),
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { status: string }).status).toBe('completed');
    } finally {
      await g.stop('SIGTERM');
      forget('9990_from_a_newer_release');
    }
  }, 90_000);

  it('refuses a store with a migration of another line among its own, naming it', async () => {
    record('0001a_from_another_branch');
    try {
      const run = await startOutcome(['--config', config]);
      expect(run.listened, run.stdout).toBe(false);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(
        /^FLEETGATE_STORE_MIGRATION_FAILED: The store was migrated by another release of Fleetgate: it records migration 0001a_from_another_branch, which this release does not know\./m,
      );
    } finally {
      forget('0001a_from_another_branch');
    }
  }, 90_000);
});
