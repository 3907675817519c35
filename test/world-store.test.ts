/** The world-store contract against the in-memory store, a SQLite file and PostgreSQL. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KyselyPlugin } from 'kysely';
import { CompiledQuery, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createInMemoryEventBus, createOutboxRelay, OUTBOX_WRITERS } from '../src/bus/index.js';
import {
  createMemoryWorldStore,
  createSqlWorldStore,
  createWorldMaterialiser,
} from '../src/world/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import type { WorldHarness } from './world-store-contract.js';
import { deltaEvent, worldStoreContract } from './world-store-contract.js';
import type { GatewayStore } from '../src/service/index.js';
import { GATEWAY_MIGRATIONS, openGatewayStore } from '../src/service/index.js';

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

/**
 * A harness over a store opened by `open`; `reopen` opens a second connection to the same data.
 * With `direct`, the world store and the relay use the SQLite store's direct statements (as the
 * gateway does) instead of the SQL builder.
 */
async function sqlHarness(
  open: () => Promise<GatewayStore>,
  cleanup: () => Promise<void>,
  direct = false,
): Promise<WorldHarness> {
  const bus = createInMemoryEventBus();
  const stores: GatewayStore[] = [await open()];
  const first = stores[0]!;
  const sqliteOf = (s: GatewayStore) => (direct ? s.sqlite : undefined);
  const relay = createOutboxRelay({ db: first.db, sqlite: sqliteOf(first), bus });
  return {
    store: createSqlWorldStore({
      db: first.db,
      kind: first.kind,
      outbox: OUTBOX_WRITERS,
      sqlite: sqliteOf(first),
    }),
    bus,
    async flush() {
      await relay.drain();
      await bus.idle();
    },
    async reopen() {
      const again = await open();
      stores.push(again);
      return createSqlWorldStore({
        db: again.db,
        kind: again.kind,
        outbox: OUTBOX_WRITERS,
        sqlite: sqliteOf(again),
      });
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

worldStoreContract('SQLite file, direct statements', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-direct-'));
  const file = join(dir, 'world.db');
  return sqlHarness(
    async () => {
      const store = await openGatewayStore(`sqlite:${file}`);
      if (store.sqlite === undefined) throw new Error('a SQLite store has direct access');
      return store;
    },
    () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
    true,
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
        store: createSqlWorldStore({
          db: store.db,
          kind: store.kind,
          outbox: OUTBOX_WRITERS,
          auditValueMaxBytes: 100,
        }),
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

/** Sums the string bytes in every statement built through `db` and in every row it read. */
function meter(): {
  plugin: KyselyPlugin;
  written: () => number;
  read: () => number;
  reset(): void;
} {
  let written = 0;
  let read = 0;
  const strings = (value: unknown, seen = new Set<unknown>()): number => {
    if (typeof value === 'string') return value.length;
    if (value === null || typeof value !== 'object' || seen.has(value)) return 0;
    seen.add(value);
    let total = 0;
    for (const item of Object.values(value)) total += strings(item, seen);
    return total;
  };
  return {
    plugin: {
      transformQuery(args) {
        written += strings(args.node);
        return args.node;
      },
      transformResult(args) {
        read += strings(args.result.rows);
        return Promise.resolve(args.result);
      },
    },
    written: () => written,
    read: () => read,
    reset() {
      written = 0;
      read = 0;
    },
  };
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pgUp)(
    `SQL world store on ${backend}: updates in proportion to the change`,
    () => {
      it('reads and writes a few bytes for a tiny inc in a domain of megabytes', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-rows-'));
        const schema = uniqueName('fgrows');
        const store =
          backend === 'sqlite'
            ? await openGatewayStore(`sqlite:${join(dir, 'w.db')}`)
            : await openGatewayStore(PG_URL, { schema });
        const bus = createInMemoryEventBus();
        const m = meter();
        try {
          const world = createWorldMaterialiser({
            store: createSqlWorldStore({
              db: store.db.withPlugin(m.plugin),
              kind: store.kind,
              outbox: OUTBOX_WRITERS,
            }),
            bus,
          });
          const big = 'x'.repeat(60 * 1024);
          for (let i = 0; i < 10; i += 1) {
            await world.apply(
              deltaEvent(
                Array.from({ length: 10 }, () => ({
                  domain: 'huge',
                  path: 'data.log',
                  op: 'push',
                  value: big,
                })),
              ),
            );
          }
          await world.apply(
            deltaEvent([{ domain: 'huge', path: 'data.owner', op: 'set', value: { name: 'a' } }]),
          );
          // About 6 MB of pushes in one domain.
          m.reset();
          const report = await world.apply(
            deltaEvent([{ domain: 'huge', path: 'data.count', op: 'inc', value: 1 }]),
          );
          expect(report.applied).toBe(1);
          expect(m.written()).toBeLessThan(4096);
          expect(m.read()).toBeLessThan(4096);
          // A push appends a row: it costs the item, not the array.
          m.reset();
          await world.apply(
            deltaEvent([{ domain: 'huge', path: 'data.log', op: 'push', value: 'y' }]),
          );
          expect(m.written()).toBeLessThan(4096);
          expect(m.read()).toBeLessThan(4096);
          // A change deep in a small value costs that value.
          m.reset();
          await world.apply(
            deltaEvent([{ domain: 'huge', path: 'data.owner.name', op: 'set', value: 'b' }]),
          );
          expect(m.written()).toBeLessThan(4096);
          const live = await world.getDomain('huge');
          const data = live?.state.data as {
            log: string[];
            count: number;
            owner: { name: string };
          };
          expect(data.log).toHaveLength(101);
          expect(data.log[100]).toBe('y');
          expect(data.count).toBe(1);
          expect(data.owner).toEqual({ name: 'b' });
          expect((await world.replay('huge'))?.state).toEqual(live?.state);
        } finally {
          await bus.close();
          if (backend === 'postgres') {
            await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
          }
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      });

      it.skipIf(backend === 'postgres')(
        'looks up the rows a unit of work needs by (domain, path), never by the domain alone',
        async () => {
          const dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-plan-'));
          const store = await openGatewayStore(`sqlite:${join(dir, 'w.db')}`);
          const bus = createInMemoryEventBus();
          const selects: CompiledQuery[] = [];
          const capture: KyselyPlugin = {
            transformQuery(args) {
              const compiled = store.db.getExecutor().compileQuery(args.node, args.queryId);
              if (compiled.sql.includes('from "fleetgate_world_values"')) selects.push(compiled);
              return args.node;
            },
            transformResult: (args) => Promise.resolve(args.result),
          };
          try {
            const world = createWorldMaterialiser({
              store: createSqlWorldStore({
                db: store.db.withPlugin(capture),
                kind: store.kind,
                outbox: OUTBOX_WRITERS,
              }),
              bus,
            });
            // A domain of many rows: a long list and a wide object.
            for (let i = 0; i < 20; i += 1) {
              await world.applyBatch(
                Array.from({ length: 10 }, (_, j) =>
                  deltaEvent([
                    { domain: 'big', path: 'data.log', op: 'push', value: i * 10 + j },
                    { domain: 'big', path: `data.map.k${i * 10 + j}`, op: 'set', value: { i } },
                  ]),
                ),
              );
            }
            selects.length = 0;
            await world.apply(
              deltaEvent([
                { domain: 'big', path: 'data.log', op: 'push', value: 'x' },
                { domain: 'big', path: 'data.map.k3', op: 'set', value: 'y' },
                { domain: 'big', path: 'data.count', op: 'inc', value: 1 },
                { domain: 'big', path: 'data.owner', op: 'set', value: { name: 'a' } },
                { domain: 'other', path: 'data.n', op: 'inc', value: 1 },
              ]),
            );
            expect(selects).toHaveLength(1);
            const explained = await store.db.executeQuery<{ detail: string }>(
              CompiledQuery.raw(`explain query plan ${selects[0]!.sql}`, [
                ...selects[0]!.parameters,
              ]),
            );
            const searches = explained.rows.filter((r) => /^(SEARCH|SCAN)/u.test(r.detail));
            expect(searches.length).toBeGreaterThan(0);
            for (const { detail } of searches) expect(detail).toMatch(/\(domain=\? AND path[=><]/u);
            const big = (await world.getDomain('big'))?.state.data as {
              log: unknown[];
              map: Record<string, unknown>;
            };
            expect(big.log).toHaveLength(201);
            expect(big.map.k3).toBe('y');
            expect(big.map.k4).toEqual({ i: 0 });
          } finally {
            await bus.close();
            await store.close();
            rmSync(dir, { recursive: true, force: true });
          }
        },
      );

      it('moves domains an earlier release kept whole into rows when it migrates', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-migrate-'));
        const schema = uniqueName('fgmig');
        const url = backend === 'sqlite' ? `sqlite:${join(dir, 'w.db')}` : PG_URL;
        const options = backend === 'sqlite' ? {} : { schema };
        const names = Object.keys(GATEWAY_MIGRATIONS);
        const before = Object.fromEntries(
          names.filter((n) => n < '0102').map((n) => [n, GATEWAY_MIGRATIONS[n]!]),
        );
        const old = await openGatewayStore(url, { ...options, migrations: before });
        const state = { data: { n: 1, items: [{ a: 1 }, 'two'], 'odd.key': true }, meta: 'm' };
        await old.db
          .insertInto('fleetgate_world_domains')
          .values({
            name: 'legacy',
            version: 4,
            state: JSON.stringify(state),
            base_state: '{}',
            base_version: 0,
            updated_at: 1,
          })
          .execute();
        await old.close();
        const store = await openGatewayStore(url, options);
        const bus = createInMemoryEventBus();
        try {
          const world = createWorldMaterialiser({
            store: createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
            bus,
          });
          expect(await world.getDomain('legacy')).toMatchObject({ version: 4, state });
          await world.apply(
            deltaEvent([{ domain: 'legacy', path: 'data.n', op: 'inc', value: 1 }]),
          );
          expect((await world.getDomain('legacy'))?.state).toEqual({
            ...state,
            data: { ...state.data, n: 2 },
          });
        } finally {
          await bus.close();
          if (backend === 'postgres') {
            await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
          }
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      });
    },
  );
}
