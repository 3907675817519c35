/** The world-store contract against the in-memory store, a SQLite file and PostgreSQL. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createInMemoryEventBus, createOutboxRelay } from '../src/bus/index.js';
import {
  createMemoryWorldStore,
  createSqlWorldStore,
  createWorldMaterialiser,
} from '../src/world/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import type { WorldHarness } from './world-store-contract.js';
import { deltaEvent, worldStoreContract } from './world-store-contract.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';

const pgUp = await requirePostgres();

worldStoreContract('in-memory', () => {
  const bus = createInMemoryEventBus();
  const store = createMemoryWorldStore();
  return Promise.resolve<WorldHarness>({
    store,
    bus,
    flush: () => bus.idle(),
    reopen: () => Promise.resolve(store),
    close: () => bus.close(),
  });
});

/** A harness over a store opened by `open`; `reopen` opens a second connection to the same data. */
async function sqlHarness(
  open: () => Promise<GatewayStore>,
  cleanup: () => Promise<void>,
): Promise<WorldHarness> {
  const bus = createInMemoryEventBus();
  const stores: GatewayStore[] = [await open()];
  const first = stores[0]!;
  const relay = createOutboxRelay({ db: first.db, bus });
  return {
    store: createSqlWorldStore({ db: first.db, kind: first.kind }),
    bus,
    async flush() {
      await relay.drain();
      await bus.idle();
    },
    async reopen() {
      const again = await open();
      stores.push(again);
      return createSqlWorldStore({ db: again.db, kind: again.kind });
    },
    async close() {
      await relay.stop();
      await bus.close();
      await cleanup();
      for (const s of stores) await s.close();
    },
  };
}

worldStoreContract('SQLite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-'));
  const file = join(dir, 'world.db');
  return sqlHarness(
    () => openGatewayStore(`sqlite:${file}`),
    () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  );
});

if (pgUp) {
  worldStoreContract('PostgreSQL', async () => {
    const schema = uniqueName('fgworld');
    let admin: GatewayStore | undefined;
    return sqlHarness(
      async () => {
        const s = await openGatewayStore(PG_URL, { schema, poolSize: 4 });
        admin ??= s;
        return s;
      },
      async () => {
        if (admin !== undefined) await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
      },
    );
  });
}

describe('SQL audit values', () => {
  it('writes previous and next over auditValueMaxBytes as a summary, the operand whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-audit-'));
    const store = await openGatewayStore(`sqlite:${join(dir, 'w.db')}`);
    const bus = createInMemoryEventBus();
    try {
      const world = createWorldMaterialiser({
        store: createSqlWorldStore({ db: store.db, kind: store.kind, auditValueMaxBytes: 100 }),
        bus,
      });
      const big = { text: 'x'.repeat(200) };
      await world.apply(deltaEvent([{ domain: 'ci', path: 'data.big', op: 'set', value: big }]));
      await world.apply(
        deltaEvent([{ domain: 'ci', path: 'data.big', op: 'set', value: 'small' }]),
      );
      const [second, first] = await world.history('ci');
      expect(first).toMatchObject({ value: big, next: { $summary: 'object', size: 1 } });
      expect(second).toMatchObject({
        value: 'small',
        previous: { $summary: 'object' },
        next: 'small',
      });
      expect((await world.replay('ci'))?.state).toEqual({ data: { big: 'small' } });
    } finally {
      await bus.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
