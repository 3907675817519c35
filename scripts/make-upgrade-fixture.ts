/**
 * Writes `test/fixtures/store-before-holders.db`: a SQLite store as a gateway of an earlier
 * version (one that did not yet record who holds a call and what it sent) leaves it when killed
 * with calls in flight — one call at the agent (no task id yet), one held for approval.
 *
 *   git worktree add /tmp/fleetgate-old bc24356 && cp -al node_modules /tmp/fleetgate-old/
 *   npx tsx scripts/make-upgrade-fixture.ts /tmp/fleetgate-old
 *
 * `test/store-upgrade.test.ts` opens a copy with this version and finishes both calls.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { opsBehaviour, startOpsAgent } from '../examples/agents/ops-agent.js';

const old = resolve(process.argv[2] ?? '');
if (process.argv[2] === undefined) throw new Error('usage: make-upgrade-fixture.ts OLD_CHECKOUT');
const out = resolve('test/fixtures/store-before-holders.db');

let release!: () => void;
const hold = new Promise<void>((r) => (release = r));
const agent = await startOpsAgent({
  behaviour: async (call) => ({ ...(await opsBehaviour(call)), hold }),
});
const dir = mkdtempSync(join(tmpdir(), 'fleetgate-upgrade-fixture-'));
const db = join(dir, 'gw.db');
const config = join(dir, 'fleetgate.yaml');
writeFileSync(
  config,
  [
    'listen: { host: 127.0.0.1, port: 0 }',
    `store: sqlite:${db}`,
    'bus: memory',
    `agents: [{ name: ops, url: ${agent.url} }]`,
  ].join('\n'),
);
const tsx = pathToFileURL(join(old, 'node_modules/tsx/dist/loader.mjs')).href;
const child = spawn(
  process.execPath,
  ['--import', tsx, join(old, 'src/cli/run.ts'), 'start', '--config', config],
  { cwd: old, stdio: ['ignore', 'pipe', 'inherit'] },
);
let printed = '';
const url = await new Promise<string>((done) => {
  child.stdout.on('data', (d: Buffer) => {
    printed += d.toString();
    const found = /listening on (http:\/\/\S+)/.exec(printed)?.[1];
    if (found !== undefined) done(found);
  });
});
const post = (path: string, body: unknown): Promise<Response> =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

// Held for approval: bulk_migration is gated.
const held = (await (
  await post('/api/dispatch', {
    agent: 'ops',
    skill: 'bulk_migration',
    correlationId: 'upgrade-held',
  })
).json()) as { status: string };
if (held.status !== 'awaiting-approval') throw new Error(`expected a held call: ${held.status}`);
// At the agent: the agent holds the task, the blocking call waits.
void post('/api/dispatch?wait=60s', {
  agent: 'ops',
  skill: 'sitrep',
  text: 'status',
  correlationId: 'upgrade-running',
}).catch(() => undefined);
while (agent.received.length === 0) await new Promise((r) => setTimeout(r, 20));
child.kill('SIGKILL');
await new Promise((r) => child.once('exit', r));
release();
await agent.close();

// One file: the log folded into the database.
const sqlite = new Database(db);
sqlite.pragma('wal_checkpoint(TRUNCATE)');
sqlite.pragma('journal_mode = DELETE');
sqlite.close();
copyFileSync(db, out);
rmSync(dir, { recursive: true, force: true });
console.log(`wrote ${out}`);
