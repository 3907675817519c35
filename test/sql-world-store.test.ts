/**
 * The SQL world store's contract, one suite for every implementation: SQLite's prepared statements,
 * kysely on SQLite, and kysely on PostgreSQL, each called through the `WorldStore` port as the
 * gateway builds it. What the materialiser, replay and retention rely on: a unit of work claims an
 * event id once and commits its domains, audit records and outbox rows together or not at all; a
 * seed creates a domain once; history filters by path (characters, not bytes), time, seq and
 * status, in either order and up to a limit; and retention folds the applied records it removes
 * into the domain's base. (`test/world-store.test.ts` holds every store to the materialiser's
 * contract.)
 */
import type { KyselyPlugin } from 'kysely';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTBOX_WRITERS } from '../src/bus/index.js';
import type {
  AuditRecord,
  JsonObject,
  NewAuditRecord,
  StoredDomain,
  WorldEmission,
  WorldStore,
  WorldUnitOfWork,
} from '../src/world/index.js';
import { createSqlWorldStore, replayRecords } from '../src/world/index.js';
import { requirePostgres } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();

/** Epoch ms of the units of work outside the retention test (after every cut it makes). */
const NOW = 1_000_000;

/** A domain as the materialiser's `init` makes one: empty, at version 0. */
function init(name: string): StoredDomain {
  return {
    name,
    version: 0,
    state: { data: {} },
    updatedAt: NOW,
    base: { data: {} },
    baseVersion: 0,
  };
}

/** An audit record of `domain` at `path`; applied, version 1, unless `over` says otherwise. */
function record(domain: string, path: string, over: Partial<NewAuditRecord> = {}): NewAuditRecord {
  return {
    domain,
    path,
    op: 'set',
    value: 1,
    previous: undefined,
    next: 1,
    status: 'applied',
    version: 1,
    agent: 'quinn',
    skill: 'pr_review',
    taskId: 'task-1',
    eventId: 'evt-1',
    index: 0,
    time: '2026-11-30T05:00:00.000Z',
    recordedAt: NOW,
    ...over,
  };
}

/** A rejected record: no version, no `next`, a reason. */
function rejected(
  domain: string,
  path: string,
  over: Partial<NewAuditRecord> = {},
): NewAuditRecord {
  const { version: _version, ...rest } = record(domain, path, over);
  return { ...rest, status: 'rejected', next: undefined, reason: 'not a number', ...over };
}

/** A `world.state.updated` emission. */
function updated(id: string, domain: string, version: number): WorldEmission {
  return {
    topic: 'world.state.updated',
    payload: { domain, version, paths: ['data.n'] },
    id,
    correlationId: `corr-${id}`,
  };
}

/** Counts the queries built through kysely. */
function queryCounter(): { plugin: KyselyPlugin; count: () => number } {
  let count = 0;
  return {
    plugin: {
      transformQuery(args) {
        count += 1;
        return args.node;
      },
      transformResult: (args) => Promise.resolve(args.result),
    },
    count: () => count,
  };
}

describe.each(storeVariants(pgUp))('SQL world store ($kind, direct: $direct)', (variant) => {
  const { direct, skip } = variant;
  const counter = queryCounter();
  let opened: TestStore;
  let world: WorldStore;
  let committed = 0;

  beforeAll(async () => {
    if (skip) return;
    opened = await openTestStore(variant, 'fgworldsql', 2);
    const { store } = opened;
    // As the gateway builds it (src/service/gateway-start.ts), counting what goes through kysely.
    world = createSqlWorldStore({
      db: store.db.withPlugin(counter.plugin),
      kind: store.kind,
      outbox: OUTBOX_WRITERS,
      onCommitted: () => {
        committed += 1;
      },
      ...(direct ? { sqlite: store.sqlite } : {}),
    });
  });

  afterAll(async () => {
    if (!skip) await opened.remove();
  });

  async function unit<T>(work: (uow: WorldUnitOfWork) => Promise<T>): Promise<T> {
    const { result, emitted } = await world.unitOfWork(work);
    // The emissions went to the outbox: there is nothing for the caller to publish.
    expect(emitted).toEqual([]);
    return result;
  }

  async function outbox(): Promise<{ id: string; topic: string; payload: unknown }[]> {
    const rows = await sql<{ id: string; topic: string; payload: string }>`
      select id, topic, payload from fleetgate_outbox order by seq`.execute(opened.store.db);
    return rows.rows.map((r) => ({ id: r.id, topic: r.topic, payload: JSON.parse(r.payload) }));
  }

  /** The indexes of the records, in the order given. */
  const indexes = (records: readonly AuditRecord[]) => records.map((r) => r.index);

  it.skipIf(skip)('is a durable store that loads by path', () => {
    expect(world.durableEmit).toBe(true);
    expect(world.loadsByPath).toBe(true);
  });

  it.skipIf(skip)('claims each event id once, across units of work and within one', async () => {
    const first = await unit((uow) => uow.claim(['evt-b', 'evt-a', 'evt-b'], NOW));
    expect([...first].sort()).toEqual(['evt-a', 'evt-b']);
    const second = await unit((uow) => uow.claim(['evt-b', 'evt-c'], NOW));
    expect([...second]).toEqual(['evt-c']);
    expect(await unit((uow) => uow.claim([], NOW))).toEqual(new Set());
  });

  it.skipIf(skip)(
    'creates, saves, audits and emits in one unit, then loads only what a need names',
    async () => {
      const before = committed;
      const state = {
        data: { n: 1, list: [1, 'two', { three: 3 }], deep: { a: { b: { c: 'é🚀' } } } },
      };
      const saved = await unit(async (uow) => {
        const fresh = await uow.claim(['evt-create'], NOW);
        const loaded = await uow.load(['ci', 'ci'], init);
        expect([...loaded.keys()]).toEqual(['ci']);
        const { domain, created } = loaded.get('ci')!;
        expect(created).toBe(true);
        expect(domain).toMatchObject({ name: 'ci', version: 0, state: { data: {} } });
        domain.state = state;
        domain.version = 1;
        domain.updatedAt = NOW + 1;
        await uow.save([domain]);
        await uow.audit([record('ci', 'data', { value: state.data, next: state.data })]);
        await uow.emit([updated('upd-ci-1', 'ci', 1)]);
        return { fresh, bytes: domain.bytes };
      });
      expect([...saved.fresh]).toEqual(['evt-create']);
      expect(saved.bytes).toBeGreaterThan(0);
      expect(committed).toBe(before + 1);
      expect(await world.domain('ci')).toEqual({
        name: 'ci',
        version: 1,
        state,
        updatedAt: NOW + 1,
        base: { data: {} },
        baseVersion: 0,
        bytes: saved.bytes,
      });
      expect(await outbox()).toContainEqual({
        id: 'upd-ci-1',
        topic: 'world.state.updated',
        payload: { domain: 'ci', version: 1, paths: ['data.n'] },
      });
      const [audited] = await world.history('ci');
      expect(audited).toEqual({
        ...record('ci', 'data'),
        value: state.data,
        next: state.data,
        seq: expect.any(Number),
      });

      // A second unit loads only data.n (and what an inc needs), changes it, leaves the rest.
      await unit(async (uow) => {
        const needs = new Map([['ci', [{ segments: ['data', 'n'], op: 'inc' }]]]);
        const { domain, created } = (await uow.load(['ci'], init, needs)).get('ci')!;
        expect(created).toBe(false);
        expect(domain.version).toBe(1);
        expect(domain.bytes).toBe(saved.bytes);
        const data = domain.state.data as JsonObject;
        expect(data.n).toBe(1);
        expect(data.list).toBeUndefined();
        data.n = 2;
        domain.version = 2;
        domain.updatedAt = NOW + 2;
        await uow.save([domain]);
      });
      // Nothing emitted: nothing to tell the relay.
      expect(committed).toBe(before + 1);
      expect(await world.domain('ci')).toMatchObject({
        version: 2,
        updatedAt: NOW + 2,
        state: { data: { ...state.data, n: 2 } },
      });
    },
  );

  it.skipIf(skip)(
    'discards a domain it created, and commits nothing of a unit that throws',
    async () => {
      await unit(async (uow) => {
        const loaded = await uow.load(['unused', 'kept'], init);
        expect(loaded.get('unused')?.created).toBe(true);
        const kept = loaded.get('kept')!.domain;
        kept.version = 1;
        kept.state = { data: { k: true } };
        await uow.save([kept]);
        await uow.discard(['unused']);
      });
      expect(await world.domain('unused')).toBeUndefined();
      expect(await world.domain('kept')).toMatchObject({
        version: 1,
        state: { data: { k: true } },
      });

      await expect(
        world.unitOfWork(async (uow) => {
          await uow.claim(['evt-undone'], NOW);
          const { domain } = (await uow.load(['undone'], init)).get('undone')!;
          domain.version = 1;
          domain.state = { data: { x: 1 } };
          await uow.save([domain]);
          await uow.audit([record('undone', 'data.x')]);
          await uow.emit([updated('upd-undone', 'undone', 1)]);
          throw new Error('the unit fails');
        }),
      ).rejects.toThrow('the unit fails');
      expect(await world.domain('undone')).toBeUndefined();
      expect(await world.history('undone')).toEqual([]);
      expect((await outbox()).map((r) => r.id)).not.toContain('upd-undone');
      expect([...(await unit((uow) => uow.claim(['evt-undone'], NOW)))]).toEqual(['evt-undone']);
    },
  );

  it.skipIf(skip)('seeds a domain once, its state readable as rows', async () => {
    const seed = {
      data: { owner: 'ops', tags: ['a', 'b'], nested: { deep: { deeper: { x: 1 } } } },
    };
    expect(await world.seed('seeded', seed, NOW + 5)).toBe(true);
    expect(await world.seed('seeded', { data: { other: true } }, NOW + 6)).toBe(false);
    const domain = await world.domain('seeded');
    expect(domain).toEqual({
      name: 'seeded',
      version: 0,
      state: seed,
      updatedAt: NOW + 5,
      base: seed,
      baseVersion: 0,
      bytes: expect.any(Number),
    });
    expect(domain!.bytes).toBeGreaterThan(0);
    // A unit of work reads the seeded rows like any others.
    const loaded = await unit(async (uow) => (await uow.load(['seeded'], init)).get('seeded')!);
    expect(loaded).toMatchObject({ created: false, domain: { state: seed, bytes: domain!.bytes } });
    expect(await world.domain('no-such-domain')).toBeUndefined();
  });

  it.skipIf(skip)('lists every domain in name order, each as domain() reads it', async () => {
    const all = await world.domains();
    const names = all.map((d) => d.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['ci', 'kept', 'seeded']));
    for (const d of all) expect(d).toEqual(await world.domain(d.name));
  });

  describe('history', () => {
    const T = 2_000_000;
    const paths = [
      'data.a',
      'data.a.b',
      'data.ab',
      'data.café',
      'data.café.x',
      'data.cafex',
      'data.🚀',
      'data.🚀.x',
      'data.🚀x',
    ];
    const isRejected = (i: number) => i === 2 || i === 4 || i === 8;
    let seqs: number[] = [];

    beforeAll(async () => {
      if (skip) return;
      const records = paths.map((path, index) => {
        const over = { index, recordedAt: T + index * 10, value: { i: index, list: [index] } };
        return isRejected(index) ? rejected('hist', path, over) : record('hist', path, over);
      });
      await unit((uow) => uow.audit([...records, record('hist-other', 'data.a')]));
      seqs = (await world.history('hist', { order: 'asc' })).map((r) => r.seq);
    });

    it.skipIf(skip)('returns the records, newest first, as they were written', async () => {
      const all = await world.history('hist');
      expect(indexes(all)).toEqual([8, 7, 6, 5, 4, 3, 2, 1, 0]);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(new Set(seqs).size).toBe(9);
      expect(all[6]).toEqual({
        ...rejected('hist', 'data.ab', {
          index: 2,
          recordedAt: T + 20,
          value: { i: 2, list: [2] },
        }),
        seq: seqs[2],
      });
      expect(all[8]).toEqual({
        ...record('hist', 'data.a', { index: 0, recordedAt: T, value: { i: 0, list: [0] } }),
        seq: seqs[0],
      });
      expect(await world.history('no-such-domain')).toEqual([]);
    });

    it.skipIf(skip)('filters by path: the path and below it, counted in characters', async () => {
      expect(indexes(await world.history('hist', { path: 'data.a' }))).toEqual([1, 0]);
      expect(indexes(await world.history('hist', { path: 'data.café' }))).toEqual([4, 3]);
      expect(indexes(await world.history('hist', { path: 'data.🚀' }))).toEqual([7, 6]);
      expect(indexes(await world.history('hist', { path: 'data.🚀.x' }))).toEqual([7]);
      expect(indexes(await world.history('hist', { path: 'data' }))).toHaveLength(9);
      expect(await world.history('hist', { path: 'data.c' })).toEqual([]);
    });

    it.skipIf(skip)('filters by time, seq and status', async () => {
      expect(indexes(await world.history('hist', { since: T + 50 }))).toEqual([8, 7, 6, 5]);
      const iso = new Date(T + 50).toISOString();
      expect(indexes(await world.history('hist', { since: iso }))).toEqual([8, 7, 6, 5]);
      expect(indexes(await world.history('hist', { afterSeq: seqs[5]! }))).toEqual([8, 7, 6]);
      expect(indexes(await world.history('hist', { status: 'rejected' }))).toEqual([8, 4, 2]);
      expect(indexes(await world.history('hist', { status: 'applied' }))).toEqual([
        7, 6, 5, 3, 1, 0,
      ]);
    });

    it.skipIf(skip)('orders both ways and stops at the limit', async () => {
      expect(indexes(await world.history('hist', { order: 'asc' }))).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8,
      ]);
      expect(indexes(await world.history('hist', { order: 'asc', limit: 3 }))).toEqual([0, 1, 2]);
      expect(indexes(await world.history('hist', { order: 'desc', limit: 2 }))).toEqual([8, 7]);
      expect(
        indexes(await world.history('hist', { path: 'data.🚀', status: 'applied', order: 'asc' })),
      ).toEqual([6, 7]);
      expect(
        indexes(
          await world.history('hist', {
            afterSeq: seqs[1]!,
            since: T + 30,
            limit: 2,
            order: 'asc',
          }),
        ),
      ).toEqual([3, 4]);
      await expect(world.history('hist', { limit: 0 })).rejects.toThrow(/limit/u);
    });

    it.skipIf(skip)('gives the applied records since the base, oldest first', async () => {
      expect(indexes(await world.appliedSinceBase('hist'))).toEqual([0, 1, 3, 5, 6, 7]);
      expect(await world.appliedSinceBase('no-such-domain')).toEqual([]);
    });
  });

  it.skipIf(skip)(
    'prunes: folds the old applied records into the base, keeps the later ones',
    async () => {
      // Times before any other test's (NOW and later): only these records and ids are cut.
      const base = { data: { n: 0 } };
      expect(await world.seed('old', base, 50)).toBe(true);
      expect(await world.seed('only-rejected', base, 50)).toBe(true);
      const inc = (n: number, version: number, recordedAt: number) =>
        record('old', 'data.n', { op: 'inc', value: n, version, recordedAt, index: version });
      await unit(async (uow) => {
        await uow.claim(['old-1', 'old-2'], 10);
        await uow.claim(['old-3'], 30);
        await uow.audit([
          inc(1, 1, 100),
          rejected('only-rejected', 'data.n', { recordedAt: 110 }),
          record('ghost', 'data.g', { recordedAt: 120 }),
          rejected('old', 'data.n', { recordedAt: 150, index: 9 }),
          inc(2, 2, 200),
          record('old', 'data.m', { value: 'x', version: 3, recordedAt: 300, index: 3 }),
        ]);
      });
      const folds: { base: JsonObject; applied: AuditRecord[] }[] = [];
      const result = await world.prune({
        before: 250,
        eventIdsBefore: 25,
        fold: (from, applied) => {
          folds.push({ base: structuredClone(from), applied: [...applied] });
          return replayRecords(from, applied);
        },
      });
      expect(result).toEqual({ auditRecords: 5, eventIds: 2 });
      // Once, for the domain with applied records before the cut and a row ('ghost' has none).
      expect(folds).toHaveLength(1);
      expect(folds[0]!.base).toEqual(base);
      expect(folds[0]!.applied.map((r) => [r.domain, r.value, r.version])).toEqual([
        ['old', 1, 1],
        ['old', 2, 2],
      ]);
      expect(await world.domain('old')).toMatchObject({ base: { data: { n: 3 } }, baseVersion: 2 });
      expect(await world.domain('only-rejected')).toMatchObject({ base, baseVersion: 0 });
      expect(indexes(await world.history('old'))).toEqual([3]);
      expect(indexes(await world.appliedSinceBase('old'))).toEqual([3]);
      expect(await world.history('only-rejected')).toEqual([]);
      expect(await world.history('ghost')).toEqual([]);
      // Later records of other domains are kept.
      expect(await world.history('hist')).toHaveLength(9);
      expect(await world.history('ci')).toHaveLength(1);
      // The old ids are forgotten (claimable again), the later one is not.
      const fresh = await unit((uow) => uow.claim(['old-1', 'old-2', 'old-3'], 40));
      expect([...fresh].sort()).toEqual(['old-1', 'old-2']);
      expect(await world.prune({ before: 250, eventIdsBefore: 25, fold: () => ({}) })).toEqual({
        auditRecords: 0,
        eventIds: 0,
      });
    },
  );

  it.skipIf(skip)(
    direct
      ? 'runs every method as prepared statements, none through kysely'
      : 'runs through kysely',
    () => {
      if (direct) expect(counter.count()).toBe(0);
      else expect(counter.count()).toBeGreaterThan(0);
    },
  );
});
