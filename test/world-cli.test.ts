/** `fleetgate world`: domains, one domain, its history, JSON output, and usage errors. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInMemoryEventBus, OUTBOX_WRITERS } from '../src/bus/index.js';
import { main } from '../src/cli/index.js';
import type { CliIo } from '../src/cli/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';
import { deltaEvent } from './world-store-contract.js';
import { openGatewayStore } from '../src/service/index.js';

function capture(): CliIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    color: false,
    version: '0.0.0-test',
    out(text: string) {
      io.stdout += text;
    },
    err(text: string) {
      io.stderr += text;
    },
  };
  return io;
}

describe('fleetgate world', () => {
  let dir: string;
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-cli-'));
    url = `sqlite:${join(dir, 'fleetgate.db')}`;
    const store = await openGatewayStore(url);
    const bus = createInMemoryEventBus();
    const world = createWorldMaterialiser({
      store: createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
      bus,
    });
    await world.apply(
      deltaEvent(
        [
          { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: 3 },
          { domain: 'ci', path: 'data.label', op: 'set', value: 'x' },
          { domain: 'ci', path: 'data.label', op: 'inc', value: 1 },
          { domain: 'board', path: 'data.untriaged', op: 'set', value: 7 },
        ],
        { source: 'quinn', skill: 'pr_review', taskId: 'task-cli' },
      ),
    );
    await bus.close();
    await store.close();
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists the domains with their versions', async () => {
    const io = capture();
    expect(await main(['node', 'fleetgate', 'world', '--store', url], io)).toBe(0);
    expect(io.stdout).toMatch(/DOMAIN\s+VERSION/);
    expect(io.stdout).toMatch(/board\s+1\s/);
    expect(io.stdout).toMatch(/ci\s+1\s.*blockedPRs, label/);
  });

  it('prints one domain as JSON', async () => {
    const io = capture();
    expect(await main(['node', 'fleetgate', 'world', 'ci', '--store', url, '--json'], io)).toBe(0);
    expect(JSON.parse(io.stdout)).toMatchObject({
      name: 'ci',
      version: 1,
      state: { data: { blockedPRs: 3, label: 'x' } },
    });
  });

  it('prints the audit log with the agent, task and rejections', async () => {
    const io = capture();
    expect(await main(['node', 'fleetgate', 'world', 'ci', '--history', '--store', url], io)).toBe(
      0,
    );
    expect(io.stdout).toMatch(/quinn\/pr_review\s+task-cli\s+inc data\.blockedPRs\s+- → 3 v1/);
    expect(io.stdout).toMatch(/rejected: inc needs a number at data\.label/);
    const json = capture();
    await main(
      [
        'node',
        'fleetgate',
        'world',
        'ci',
        '--history',
        '--path',
        'data.label',
        '--json',
        '--store',
        url,
      ],
      json,
    );
    expect((JSON.parse(json.stdout) as unknown[]).length).toBe(2);
  });

  it('fails clearly for an unknown domain, a missing store and --history without a domain', async () => {
    const unknown = capture();
    expect(await main(['node', 'fleetgate', 'world', 'nope', '--store', url], unknown)).toBe(2);
    expect(unknown.stderr).toMatch(
      /^FLEETGATE_WORLD_DOMAIN_UNKNOWN: No world-state domain "nope" in .* \(it has board, ci\)$/m,
    );
    const missing = capture();
    const absent = join(dir, 'absent.db');
    expect(await main(['node', 'fleetgate', 'world', '--store', `sqlite:${absent}`], missing)).toBe(
      2,
    );
    expect(missing.stderr).toMatch(/^FLEETGATE_STORE_NOT_INITIALISED: No store at /m);
    // Reading creates nothing.
    expect(existsSync(absent)).toBe(false);
    const usage = capture();
    expect(await main(['node', 'fleetgate', 'world', '--history', '--store', url], usage)).toBe(2);
    expect(usage.stderr).toMatch(/--history needs a DOMAIN/);
  });
});
