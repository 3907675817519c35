/**
 * The contract every `WorldStore` honours, exercised through the materialiser: apply semantics at
 * the event level, rejections, idempotency, gap-free versions, the audit log, replay, retention
 * and seeding. `test/world-store.test.ts` runs it against the in-memory store, a SQLite file and
 * PostgreSQL.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InMemoryEventBus } from '../src/bus/index.js';
import type {
  EventEnvelope,
  WorldStateDeltaEvent,
  WorldStateDeltaRejectedEvent,
  WorldStateUpdatedEvent,
} from '../src/protocol/index.js';
import type { WorldStateDeltaEntry } from '../src/protocol/index.js';
import { LIMITS } from '../src/protocol/index.js';
import type {
  WorldMaterialiser,
  WorldMaterialiserOptions,
  WorldStateDeltaEnvelope,
  WorldStore,
} from '../src/world/index.js';
import { createWorldMaterialiser } from '../src/world/index.js';

/** One store under test, with the bus its emissions reach. */
export interface WorldHarness {
  store: WorldStore;
  bus: InMemoryEventBus;
  /** Publishes what the store emitted (outbox relay for SQL) and waits for every subscriber. */
  flush(): Promise<void>;
  /** A second store instance over the same data (another replica, or a restart). */
  reopen(): Promise<WorldStore>;
  close(): Promise<void>;
}

let sequence = 0;

/** A `world.state.delta` envelope with a fresh id unless one is given. */
export function deltaEvent(
  deltas: unknown[],
  init: { id?: string; source?: string; skill?: string; taskId?: string; time?: string } = {},
): WorldStateDeltaEnvelope {
  sequence += 1;
  const taskId = init.taskId ?? `task-${sequence}`;
  return {
    id: init.id ?? `evt-${sequence}-${Math.random().toString(36).slice(2)}`,
    topic: 'world.state.delta',
    time: init.time ?? '2026-11-30T05:00:00.000Z',
    correlationId: `corr-${taskId}`,
    payload: {
      source: init.source ?? 'quinn',
      skill: init.skill ?? 'pr_review',
      taskId,
      correlationId: `corr-${taskId}`,
      deltas: deltas as WorldStateDeltaEntry[],
    } satisfies WorldStateDeltaEvent,
  };
}

/** Runs the world-store contract against the harness `make` builds. */
export function worldStoreContract(name: string, make: () => Promise<WorldHarness>): void {
  describe(`WorldStore contract: ${name}`, () => {
    let h: WorldHarness;
    let clock: number;
    let updated: EventEnvelope<string, WorldStateUpdatedEvent>[];
    let rejected: EventEnvelope<string, WorldStateDeltaRejectedEvent>[];
    const extra: WorldMaterialiser[] = [];

    function materialiser(
      overrides: Partial<WorldMaterialiserOptions> = {},
      store: WorldStore = h.store,
    ): WorldMaterialiser {
      const m = createWorldMaterialiser({ store, bus: h.bus, now: () => clock, ...overrides });
      extra.push(m);
      return m;
    }

    beforeEach(async () => {
      clock = Date.parse('2026-11-30T05:00:00.000Z');
      h = await make();
      updated = [];
      rejected = [];
      await h.bus.subscribe(
        'world.state.updated',
        (e) => {
          updated.push(e);
        },
        { name: 'test-updated' },
      );
      await h.bus.subscribe(
        'world.state.delta.rejected',
        (e) => {
          rejected.push(e);
        },
        { name: 'test-rejected' },
      );
    });

    afterEach(async () => {
      for (const m of extra.splice(0)) await m.stop();
      await h.close();
    });

    it('applies set, inc and push to their domains and publishes world.state.updated per domain', async () => {
      const world = materialiser();
      await world.start();
      const event = deltaEvent([
        { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: 3 },
        { domain: 'board', path: 'data.untriaged', op: 'set', value: 7 },
        { domain: 'ci', path: 'data.failures', op: 'push', value: { job: 'lint' } },
        { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 },
      ]);
      await h.bus.publish('world.state.delta', event.payload, {
        id: event.id,
        correlationId: event.correlationId,
      });
      await h.bus.idle();
      await h.flush();
      expect(await world.getDomain('ci')).toMatchObject({
        version: 1,
        state: { data: { blockedPRs: 2, failures: [{ job: 'lint' }] } },
      });
      expect((await world.getWorld()).board).toMatchObject({
        version: 1,
        state: { data: { untriaged: 7 } },
      });
      expect(
        updated.map((e) => e.payload).sort((a, b) => a.domain.localeCompare(b.domain)),
      ).toEqual([
        { domain: 'board', version: 1, paths: ['data.untriaged'] },
        { domain: 'ci', version: 1, paths: ['data.blockedPRs', 'data.failures'] },
      ]);
      expect(updated.every((e) => e.correlationId === event.correlationId)).toBe(true);
      expect(rejected).toEqual([]);
    });

    it('rejects entries that cannot apply, applies the rest, and publishes the rejections', async () => {
      const world = materialiser({ seeds: { ci: { data: { label: 'x', list: {} } } } });
      await world.start();
      const event = deltaEvent([
        { domain: 'ci', path: 'data.label', op: 'inc', value: 1 },
        { domain: 'ci', path: 'data.ok', op: 'set', value: true },
        { domain: 'ci', path: 'data.list', op: 'push', value: 1 },
        { domain: 'ci', path: 'data.label.deeper', op: 'set', value: 1 },
        { domain: 'ci', path: 'data.__proto__.polluted', op: 'set', value: 1 },
        {
          domain: 'ci',
          path: 'data.big',
          op: 'set',
          value: 'x'.repeat(LIMITS.deltaValueBytes + 1),
        },
        { domain: 'ci', path: 'data.n', op: 'inc', value: 'one' },
        'not an entry',
      ]);
      const report = await world.apply(event);
      await h.flush();
      expect(report.applied).toBe(1);
      expect(report.rejected.map((r) => r.index)).toEqual([0, 2, 3, 4, 5, 6, 7]);
      expect(report.rejected[0]!.reason).toMatch(/inc needs a number at data\.label/);
      expect(report.rejected[1]!.reason).toMatch(/push needs an array/);
      expect(report.rejected[2]!.reason).toMatch(/goes through data\.label/);
      expect(report.rejected[3]!.reason).toMatch(/__proto__/);
      expect(report.rejected[4]!.reason).toMatch(/limit of 65536/);
      const ci = await world.getDomain('ci');
      expect(ci).toMatchObject({ version: 1, state: { data: { label: 'x', list: {}, ok: true } } });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(rejected).toHaveLength(1);
      expect(rejected[0]!.payload).toMatchObject({
        source: 'quinn',
        skill: 'pr_review',
        taskId: event.payload.taskId,
      });
      expect(rejected[0]!.payload.rejected.map((r) => r.index)).toEqual([0, 2, 3, 4, 5, 6, 7]);
      // The oversized entry travels as a summary, not as 64 KiB on the bus and in the outbox.
      expect(rejected[0]!.payload.rejected[4]!.entry).toMatchObject({ $summary: 'object' });
      expect(rejected[0]!.payload.rejected[0]!.entry).toEqual({
        domain: 'ci',
        path: 'data.label',
        op: 'inc',
        value: 1,
      });
      const history = await world.history('ci', { status: 'rejected', order: 'asc' });
      expect(history.map((r) => r.index)).toEqual([0, 2, 3, 4, 5, 6]);
      expect(history[4]!.value).toEqual({ $summary: 'string', size: LIMITS.deltaValueBytes + 1 });
      // The non-object entry has no domain; it is audited under the empty domain name.
      expect(await world.history('', { status: 'rejected' })).toHaveLength(1);
    });

    it('does not create a domain that only rejected entries touched', async () => {
      const world = materialiser();
      const report = await world.apply(
        deltaEvent([{ domain: 'ghost', path: 'data.a.b', op: 'inc', value: Number.NaN }]),
      );
      expect(report.rejected).toHaveLength(1);
      const nested = await world.apply(
        deltaEvent([
          { domain: 'ghost2', path: 'data.x', op: 'set', value: 1 },
          { domain: 'ghost2', path: 'data.x.y', op: 'set', value: 1 },
        ]),
      );
      expect(nested.applied).toBe(1);
      const other = await world.apply(
        deltaEvent([{ domain: 'ghost3', path: 'data', op: 'push', value: 1 }]),
      );
      expect(other.rejected).toHaveLength(1);
      expect(Object.keys(await world.getWorld())).toEqual(['ghost2']);
    });

    it('applies the same event once, also when a second replica sees it', async () => {
      const world = materialiser();
      const event = deltaEvent([{ domain: 'ci', path: 'data.runs', op: 'inc', value: 1 }]);
      const first = await world.apply(event);
      const second = await world.apply(event);
      const replica = materialiser({}, await h.reopen());
      const third = await replica.apply(event);
      await h.flush();
      expect([first.skipped, second.skipped, third.skipped]).toEqual([false, true, true]);
      expect(await world.getDomain('ci')).toMatchObject({
        version: 1,
        state: { data: { runs: 1 } },
      });
      expect(updated).toHaveLength(1);
      expect(await world.history('ci')).toHaveLength(1);
    });

    it('skips a duplicate inside one batch', async () => {
      const world = materialiser();
      const event = deltaEvent([{ domain: 'ci', path: 'data.runs', op: 'inc', value: 1 }]);
      const reports = await world.applyBatch([event, event]);
      expect(reports.map((r) => r.skipped)).toEqual([false, true]);
      expect((await world.getDomain('ci'))?.state).toEqual({ data: { runs: 1 } });
    });

    it('applies events of different tasks in bus order with gap-free versions', async () => {
      const world = materialiser();
      await world.start();
      for (let i = 0; i < 20; i++) {
        const e = deltaEvent(
          [
            { domain: 'board', path: 'data.log', op: 'push', value: i },
            { domain: 'board', path: 'data.last', op: 'set', value: i },
          ],
          { taskId: `t${i}`, source: i % 2 === 0 ? 'quinn' : 'ava' },
        );
        await h.bus.publish('world.state.delta', e.payload, { id: e.id });
      }
      await h.bus.idle();
      await h.flush();
      const board = await world.getDomain('board');
      expect(board?.version).toBe(20);
      expect(board?.state).toEqual({
        data: { log: Array.from({ length: 20 }, (_, i) => i), last: 19 },
      });
      expect(updated.map((e) => e.payload.version)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      const versions = (await world.history('board', { order: 'asc', path: 'data.last' })).map(
        (r) => r.version,
      );
      expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    });

    it('keeps an audit record per entry naming agent, skill, task, event, previous and next', async () => {
      const world = materialiser({ seeds: { ci: { data: { blockedPRs: 4 } } } });
      await world.start();
      const e1 = deltaEvent([{ domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 }], {
        source: 'quinn',
        skill: 'pr_review',
        taskId: 'task-a',
        time: '2026-11-30T05:01:00.000Z',
      });
      const e2 = deltaEvent([{ domain: 'ci', path: 'data.owner.name', op: 'set', value: 'ava' }], {
        source: 'ava',
        skill: 'triage',
        taskId: 'task-b',
      });
      await world.apply(e1);
      clock += 1000;
      await world.apply(e2);
      const all = await world.history('ci');
      expect(all.map((r) => r.taskId)).toEqual(['task-b', 'task-a']); // newest first
      expect(all[1]).toMatchObject({
        domain: 'ci',
        path: 'data.blockedPRs',
        op: 'inc',
        value: -1,
        previous: 4,
        next: 3,
        status: 'applied',
        version: 1,
        agent: 'quinn',
        skill: 'pr_review',
        taskId: 'task-a',
        eventId: e1.id,
        index: 0,
        time: '2026-11-30T05:01:00.000Z',
      });
      expect(all[0]).toMatchObject({ previous: undefined, next: 'ava', agent: 'ava', version: 2 });
      // Per path (a prefix matches what lies below it), since, and paging.
      expect((await world.history('ci', { path: 'data.owner' })).map((r) => r.path)).toEqual([
        'data.owner.name',
      ]);
      expect(await world.history('ci', { path: 'data.own' })).toEqual([]);
      expect((await world.history('ci', { since: clock })).map((r) => r.taskId)).toEqual([
        'task-b',
      ]);
      expect(
        (await world.history('ci', { since: new Date(clock).toISOString() })).map((r) => r.taskId),
      ).toEqual(['task-b']);
      const page = await world.history('ci', { order: 'asc', limit: 1 });
      expect(page.map((r) => r.taskId)).toEqual(['task-a']);
      const next = await world.history('ci', { order: 'asc', afterSeq: page[0]!.seq });
      expect(next.map((r) => r.taskId)).toEqual(['task-b']);
      await expect(world.history('ci', { since: 'yesterday' })).rejects.toMatchObject({
        code: 'FLEETGATE_WORLD_QUERY_INVALID',
      });
      expect(await world.history('other')).toEqual([]);
    });

    it('rebuilds every domain from the audit log to exactly the live state', async () => {
      const world = materialiser({ seeds: { ci: { data: { n: 1, list: [] } } } });
      await world.start();
      for (let i = 0; i < 10; i++) {
        await world.apply(
          deltaEvent([
            { domain: 'ci', path: 'data.n', op: 'inc', value: i },
            { domain: 'ci', path: 'data.list', op: 'push', value: { i } },
            { domain: 'ci', path: `data.map.k${i % 3}`, op: 'set', value: [i] },
            { domain: 'ci', path: 'data.n.bad', op: 'set', value: 0 },
            { domain: 'board', path: `data.items.${i}`, op: 'set', value: i },
          ]),
        );
      }
      for (const name of ['ci', 'board']) {
        const live = await world.getDomain(name);
        const replayed = await world.replay(name);
        expect(replayed?.state).toEqual(live?.state);
        expect(replayed?.version).toEqual(live?.version);
      }
      expect(await world.replay('missing')).toBeUndefined();
    });

    it('prunes old audit records by retention and replay still gives the live state', async () => {
      const day = 86_400_000;
      const world = materialiser({
        retention: { auditMaxAgeMs: 2 * day, eventIdMaxAgeMs: 2 * day },
      });
      const old = deltaEvent([{ domain: 'ci', path: 'data.log', op: 'push', value: 'old' }]);
      await world.apply(old);
      await world.apply(deltaEvent([{ domain: 'ci', path: 'data.n', op: 'inc', value: 2 }]));
      clock += 3 * day;
      await world.apply(deltaEvent([{ domain: 'ci', path: 'data.log', op: 'push', value: 'new' }]));
      await world.apply(deltaEvent([{ domain: 'ci', path: 'data.n', op: 'bad', value: 1 }]));
      const result = await world.prune();
      expect(result).toEqual({ auditRecords: 2, eventIds: 2 });
      const history = await world.history('ci', { order: 'asc' });
      expect(history.map((r) => r.status)).toEqual(['applied', 'rejected']);
      const live = await world.getDomain('ci');
      expect(live?.state).toEqual({ data: { log: ['old', 'new'], n: 2 } });
      expect(await world.replay('ci')).toMatchObject({ state: live?.state, version: 3 });
      // Pruning again changes nothing.
      expect(await world.prune()).toEqual({ auditRecords: 0, eventIds: 0 });
      expect((await world.replay('ci'))?.state).toEqual(live?.state);
    });

    it('seeds configured domains once and never overwrites them', async () => {
      const world = materialiser({ seeds: { deploy: { data: { frozen: false } } } });
      await world.start();
      expect(await world.getDomain('deploy')).toMatchObject({
        version: 0,
        state: { data: { frozen: false } },
      });
      await world.apply(
        deltaEvent([{ domain: 'deploy', path: 'data.frozen', op: 'set', value: true }]),
      );
      await world.stop();
      const restarted = materialiser(
        { seeds: { deploy: { data: { frozen: false } } } },
        await h.reopen(),
      );
      await restarted.start();
      expect(await restarted.getDomain('deploy')).toMatchObject({
        version: 1,
        state: { data: { frozen: true } },
      });
    });

    it('leaves no trace of a unit of work that fails', async () => {
      const world = materialiser({ seeds: { ci: { data: { n: 1 } } } });
      await world.start();
      await world.apply(deltaEvent([{ domain: 'ci', path: 'data.n', op: 'inc', value: 1 }]));
      await expect(
        h.store.unitOfWork(async (uow) => {
          expect(await uow.claim(['doomed'], clock)).toEqual(new Set(['doomed']));
          const loaded = await uow.load(['ci', 'fresh'], (name) => ({
            name,
            version: 0,
            state: { data: {} },
            updatedAt: clock,
            base: { data: {} },
            baseVersion: 0,
          }));
          const ci = loaded.get('ci')!.domain;
          (ci.state.data as Record<string, unknown>).n = 99;
          ci.version += 1;
          await uow.save([ci, loaded.get('fresh')!.domain]);
          await uow.audit([
            {
              domain: 'ci',
              path: 'data.n',
              op: 'set',
              value: 99,
              previous: 2,
              next: 99,
              status: 'applied',
              version: ci.version,
              agent: 'a',
              skill: 's',
              taskId: 't',
              eventId: 'doomed',
              index: 0,
              time: new Date(clock).toISOString(),
              recordedAt: clock,
            },
          ]);
          throw new Error('crash before commit');
        }),
      ).rejects.toThrow('crash before commit');
      expect(await world.getDomain('ci')).toMatchObject({ version: 1, state: { data: { n: 2 } } });
      expect(await world.getDomain('fresh')).toBeUndefined();
      expect(await world.history('ci')).toHaveLength(1);
      // The id was not claimed, so the event can still be applied.
      const retry = await world.apply(
        deltaEvent([{ domain: 'ci', path: 'data.n', op: 'inc', value: 10 }], { id: 'doomed' }),
      );
      expect(retry.skipped).toBe(false);
      expect((await world.getDomain('ci'))?.state).toEqual({ data: { n: 12 } });
      expect((await world.replay('ci'))?.state).toEqual({ data: { n: 12 } });
    });

    it('rejects entries that would grow a domain past its limit, with a code and one alert, and applies the rest', async () => {
      const alerts: EventEnvelope[] = [];
      await h.bus.subscribe('ops.alert.world_domain_full', (e) => void alerts.push(e), {
        name: 'test-domain-full',
      });
      const world = materialiser({ maxDomainBytes: 13_000 });
      await world.start();
      const chunk = 'z'.repeat(4000);
      await world.apply(
        deltaEvent([
          { domain: 'log', path: 'data.lines', op: 'push', value: chunk },
          { domain: 'log', path: 'data.lines', op: 'push', value: chunk },
        ]),
      );
      const report = await world.apply(
        deltaEvent(
          [
            { domain: 'log', path: 'data.lines', op: 'push', value: chunk },
            { domain: 'log', path: 'data.lines', op: 'push', value: chunk },
            { domain: 'log', path: 'data.count', op: 'inc', value: 2 },
            { domain: 'other', path: 'data.lines', op: 'push', value: chunk },
          ],
          { source: 'chatty', skill: 'log_all', taskId: 'task-full' },
        ),
      );
      await h.bus.idle();
      await h.flush();
      // The third line fits (about 12,100 bytes of 13,000), the fourth does not; the inc is tiny.
      expect(report.applied).toBe(3);
      expect(report.rejected).toEqual([
        expect.objectContaining({
          index: 1,
          code: 'FLEETGATE_WORLD_DOMAIN_FULL',
          reason: expect.stringMatching(
            /domain log would grow to about \d+ bytes, more than its limit of 13000/,
          ),
        }),
      ]);
      const log = await world.getDomain('log');
      expect((log?.state.data as { lines: string[] }).lines).toHaveLength(3);
      expect(log?.state.data).toMatchObject({ count: 2 });
      expect((await world.getDomain('other'))?.state).toEqual({ data: { lines: [chunk] } });
      expect(alerts).toHaveLength(1);
      expect(alerts[0]!.payload).toMatchObject({
        kind: 'world_domain_full',
        agent: 'chatty',
        skill: 'log_all',
        evidence: { domain: 'log', limit: 13_000, rejected: 1, taskId: 'task-full' },
      });
      expect(rejected.at(-1)?.payload.rejected).toEqual(report.rejected);
      // A set that shrinks the domain applies, and makes room again.
      await world.apply(deltaEvent([{ domain: 'log', path: 'data.lines', op: 'set', value: [] }]));
      const after = await world.apply(
        deltaEvent([{ domain: 'log', path: 'data.lines', op: 'push', value: chunk }]),
      );
      expect(after.applied).toBe(1);
      expect((await world.replay('log'))?.state).toEqual((await world.getDomain('log'))?.state);
    });

    it('keeps keys no path can name, and key order, through every change', async () => {
      const world = materialiser({ seeds: { odd: { 'a.b': 1, data: { z: 1 } } } });
      await world.start();
      await world.apply(
        deltaEvent([
          { domain: 'odd', path: 'data.obj', op: 'set', value: { '.': 'dot', '': 'empty', k: 1 } },
          { domain: 'odd', path: 'data.obj.k', op: 'inc', value: 1 },
          { domain: 'odd', path: 'data.a', op: 'set', value: 1 },
          { domain: 'odd', path: 'data.z', op: 'set', value: 2 },
          { domain: 'odd', path: 'data.list', op: 'push', value: { x: [1, { y: 2 }] } },
          { domain: 'odd', path: 'data.list.0.x.1.y', op: 'inc', value: 1 },
        ]),
      );
      const state = (await world.getDomain('odd'))?.state;
      expect(JSON.stringify(state)).toBe(
        JSON.stringify({
          'a.b': 1,
          data: {
            z: 2,
            obj: { '.': 'dot', '': 'empty', k: 2 },
            a: 1,
            list: [{ x: [1, { y: 3 }] }],
          },
        }),
      );
      expect((await world.replay('odd'))?.state).toEqual(state);
    });

    it('refuses an invalid seed at construction', () => {
      expect(() =>
        createWorldMaterialiser({ store: h.store, bus: h.bus, seeds: { ci: [1, 2] } }),
      ).toThrow(expect.objectContaining({ code: 'FLEETGATE_WORLD_SEED_INVALID' }) as Error);
      expect(() =>
        createWorldMaterialiser({
          store: h.store,
          bus: h.bus,
          seeds: { ci: JSON.parse('{"data":{"__proto__":{}}}') as unknown },
        }),
      ).toThrow(/__proto__/);
    });

    /** `store` counting its units of work; the ones whose ids include `poison` fail. */
    function counting(
      store: WorldStore,
      poison?: string,
    ): { store: WorldStore; units: () => number } {
      let units = 0;
      const wrapped: WorldStore = {
        durableEmit: store.durableEmit,
        seed: (...args) => store.seed(...args),
        domain: (name) => store.domain(name),
        domains: () => store.domains(),
        history: (...args) => store.history(...args),
        appliedSinceBase: (name) => store.appliedSinceBase(name),
        prune: (options) => store.prune(options),
        unitOfWork: (work) => store.unitOfWork(work),
      };
      wrapped.unitOfWork = (work) => {
        units += 1;
        return store.unitOfWork((uow) =>
          work({
            claim: (ids, now) => {
              if (poison !== undefined && ids.includes(poison)) {
                return Promise.reject(new Error(`poisoned ${poison}`));
              }
              return uow.claim(ids, now);
            },
            load: (...args) => uow.load(...args),
            save: (domains) => uow.save(domains),
            discard: (names) => uow.discard(names),
            audit: (records) => uow.audit(records),
            emit: (events) => uow.emit(events),
          }),
        );
      };
      return { store: wrapped, units: () => units };
    }

    it('applies the events queued behind a delivered one in one unit of work, in order', async () => {
      const { store, units } = counting(h.store);
      const world = materialiser({}, store);
      await world.start();
      const events = Array.from({ length: 5 }, (_, i) =>
        deltaEvent([{ domain: 'ci', path: 'data.log', op: 'push', value: i }]),
      );
      // Published together: the first is delivered at once, the other four wait behind it.
      await Promise.all(
        events.map((e) => h.bus.publish('world.state.delta', e.payload, { id: e.id })),
      );
      await h.bus.idle();
      await h.flush();
      expect((await world.getDomain('ci'))?.state).toEqual({ data: { log: [0, 1, 2, 3, 4] } });
      expect((await world.getDomain('ci'))?.version).toBe(5);
      expect(units()).toBeLessThan(5);
      expect(updated.map((e) => e.payload.version)).toEqual([1, 2, 3, 4, 5]);
    });

    it('applies a batch one event at a time when its unit of work fails: only the bad one fails', async () => {
      const errors: unknown[] = [];
      await h.bus.subscribe('system.error', (e) => void errors.push(e.payload), { name: 'errs' });
      const events = Array.from({ length: 4 }, (_, i) =>
        deltaEvent([{ domain: 'ci', path: 'data.log', op: 'push', value: i }]),
      );
      const { store } = counting(h.store, events[2]!.id);
      const world = materialiser({}, store);
      await world.start();
      await Promise.all(
        events.map((e) => h.bus.publish('world.state.delta', e.payload, { id: e.id })),
      );
      await h.bus.idle();
      await h.flush();
      expect((await world.getDomain('ci'))?.state).toEqual({ data: { log: [0, 1, 3] } });
      expect(errors).toEqual([
        expect.objectContaining({
          source: 'subscription:world-materialiser',
          message: expect.stringContaining(`poisoned ${events[2]!.id}`) as unknown,
        }),
      ]);
    });

    it('reports a malformed event on system.error through the bus and keeps going', async () => {
      const errors: unknown[] = [];
      await h.bus.subscribe('system.error', (e) => void errors.push(e.payload), { name: 'errs' });
      const world = materialiser();
      await world.start();
      const loose = h.bus as unknown as {
        publish(topic: string, payload: unknown, options?: { id?: string }): Promise<unknown>;
      };
      await loose.publish('world.state.delta', { source: 'quinn', deltas: 'nope' });
      const good = deltaEvent([{ domain: 'ci', path: 'data.ok', op: 'set', value: 1 }]);
      await h.bus.publish('world.state.delta', good.payload, { id: good.id });
      await h.bus.idle();
      await h.flush();
      expect(errors).toEqual([
        expect.objectContaining({
          source: 'subscription:world-materialiser',
          message: expect.stringContaining('FLEETGATE_WORLD_EVENT_INVALID') as unknown,
        }),
      ]);
      expect((await world.getDomain('ci'))?.state).toEqual({ data: { ok: 1 } });
    });
  });
}
