/**
 * Property tests over random delta sequences: replaying the audit log rebuilds exactly the live
 * state; a rejected entry never changes the domain; a SQLite store ends in the same state as the
 * in-memory one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createInMemoryEventBus, OUTBOX_WRITERS } from '../bus/index.js';
import type { WorldStateDeltaEntry } from '../protocol/index.js';
import { applyDelta } from './apply.js';
import type { JsonObject } from './json.js';
import type { WorldStateDeltaEnvelope } from './materialiser.js';
import { createWorldMaterialiser } from './materialiser.js';
import { createMemoryWorldStore } from './memory-world-store.js';
import { createSqlWorldStore } from './sql-world-store.js';
import type { WorldStore } from './types.js';
import { openGatewayStore } from '../service/index.js';

const segment = fc.constantFrom('a', 'b', 'items', '0', '1', '2', 'n');
const path = fc
  .array(segment, { minLength: 0, maxLength: 3 })
  .map((rest) => ['data', ...rest].join('.'));
const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 2 })
  .map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const entry: fc.Arbitrary<WorldStateDeltaEntry> = fc
  .record({
    domain: fc.constantFrom('ci', 'board', 'deploy'),
    path,
    op: fc.constantFrom('set', 'inc', 'push'),
    value: fc.oneof(fc.integer({ min: -5, max: 5 }), json, fc.constant([]), fc.constant({})),
  })
  .map((e) => (e.op === 'inc' ? { ...e, value: typeof e.value === 'number' ? e.value : 1 } : e));
const events = fc.array(fc.array(entry, { minLength: 1, maxLength: 6 }), {
  minLength: 1,
  maxLength: 25,
});

function envelopes(batches: WorldStateDeltaEntry[][]): WorldStateDeltaEnvelope[] {
  return batches.map((deltas, i) => ({
    id: `e${i}`,
    topic: 'world.state.delta',
    time: '2026-11-30T05:00:00.000Z',
    correlationId: `c${i}`,
    payload: {
      source: 'quinn',
      skill: 'pr_review',
      taskId: `t${i}`,
      correlationId: `c${i}`,
      deltas,
    },
  }));
}

async function materialise(store: WorldStore, batches: WorldStateDeltaEntry[][]) {
  const bus = createInMemoryEventBus();
  const world = createWorldMaterialiser({
    store,
    bus,
    seeds: { ci: { data: { items: [1, 2], n: 0, a: { b: 'x' } } } },
  });
  await world.start();
  for (const e of envelopes(batches)) await world.apply(e);
  await world.stop();
  await bus.close();
  return world;
}

describe('world-state properties', () => {
  it('replaying the audit log rebuilds exactly the live state of every domain', async () => {
    await fc.assert(
      fc.asyncProperty(events, async (batches) => {
        const world = await materialise(createMemoryWorldStore(), batches);
        const live = await world.getWorld();
        for (const [name, domain] of Object.entries(live)) {
          const replayed = await world.replay(name);
          expect(replayed?.state).toEqual(domain.state);
          expect(replayed?.version).toBe(domain.version);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a rejected entry leaves the domain exactly as it was', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 30 }), (entries) => {
        const state: JsonObject = { data: { items: [1, { a: 1 }], n: 1, s: 'text' } };
        for (const e of entries) {
          const before = JSON.stringify(state);
          const outcome = applyDelta(state, e.path, e.op, e.value);
          if (!outcome.ok) expect(JSON.stringify(state)).toBe(before);
        }
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('a SQLite store ends in the same state and versions as the in-memory store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-world-prop-'));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(events, async (batches) => {
          run += 1;
          const store = await openGatewayStore(`sqlite:${join(dir, `w${run}.db`)}`);
          try {
            const sqlWorld = await materialise(
              createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
              batches,
            );
            const memWorld = await materialise(createMemoryWorldStore(), batches);
            const strip = (w: Record<string, { version: number; state: JsonObject }>) =>
              Object.fromEntries(Object.entries(w).map(([k, v]) => [k, [v.version, v.state]]));
            expect(strip(await sqlWorld.getWorld())).toEqual(strip(await memWorld.getWorld()));
            for (const name of ['ci', 'board', 'deploy']) {
              expect((await sqlWorld.replay(name))?.state).toEqual(
                (await sqlWorld.getDomain(name))?.state,
              );
            }
          } finally {
            await store.close();
          }
        }),
        { numRuns: 25 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
