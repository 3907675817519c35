/**
 * Two materialiser replicas on one PostgreSQL database receive the same `world.state.delta`
 * events (a redelivering bus, a second gateway): every event applies exactly once, versions stay
 * gap-free, and the outbox holds exactly one `world.state.updated` per version.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInMemoryEventBus, OUTBOX_WRITERS } from '../src/bus/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { deltaEvent } from './world-store-contract.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';

const pgUp = await requirePostgres();

describe.skipIf(!pgUp)('world state on PostgreSQL with two replicas', () => {
  const schema = uniqueName('fgworldrep');
  let a: GatewayStore;
  let b: GatewayStore;

  beforeAll(async () => {
    a = await openGatewayStore(PG_URL, { schema, poolSize: 4 });
    b = await openGatewayStore(PG_URL, { schema, poolSize: 4 });
  });

  afterAll(async () => {
    await b?.close();
    if (a !== undefined) {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(a.db);
      await a.close();
    }
  });

  it('applies each event once with gap-free versions when both replicas race on every event', async () => {
    const bus = createInMemoryEventBus();
    const replicas = [a, b].map((s) =>
      createWorldMaterialiser({
        store: createSqlWorldStore({ db: s.db, kind: s.kind, outbox: OUTBOX_WRITERS }),
        bus,
      }),
    );
    const events = Array.from({ length: 40 }, (_, i) =>
      deltaEvent(
        [
          { domain: i % 2 === 0 ? 'ci' : 'board', path: 'data.count', op: 'inc', value: 1 },
          { domain: 'shared', path: 'data.log', op: 'push', value: i },
        ],
        { taskId: `race-${i}` },
      ),
    );
    // Each replica works through the events in bus order, concurrently with the other.
    const reports = await Promise.all(
      replicas.map(async (world) => {
        const out = [];
        for (const event of events) out.push(await world.apply(event));
        return out;
      }),
    );
    const appliedBy = events.map((_, i) => reports.filter((r) => !r[i]!.skipped).length);
    expect(appliedBy.every((n) => n === 1)).toBe(true);

    const world = replicas[0]!;
    expect(await world.getDomain('ci')).toMatchObject({
      version: 20,
      state: { data: { count: 20 } },
    });
    expect(await world.getDomain('board')).toMatchObject({
      version: 20,
      state: { data: { count: 20 } },
    });
    const shared = await world.getDomain('shared');
    expect(shared?.version).toBe(40);
    // Both replicas follow bus order, so the log is in order whichever replica applied an event.
    expect(shared?.state).toEqual({ data: { log: Array.from({ length: 40 }, (_, i) => i) } });
    const versions = (await world.history('shared', { order: 'asc', limit: 1000 })).map(
      (r) => r.version,
    );
    expect(versions).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect((await world.replay('shared'))?.state).toEqual(shared?.state);

    const outbox = await a.db
      .selectFrom('fleetgate_outbox')
      .select(['topic', 'payload'])
      .where('topic', '=', 'world.state.updated')
      .execute();
    const sharedVersions = outbox
      .map((r) => JSON.parse(r.payload) as { domain: string; version: number })
      .filter((p) => p.domain === 'shared')
      .map((p) => p.version)
      .sort((x, y) => x - y);
    expect(sharedVersions).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    await bus.close();
  });
});
