/**
 * Distributed mode end to end: two gateway replicas, each with its own NATS JetStream connection
 * and PostgreSQL pool, share the materialiser's durable consumer. Events re-published with the
 * same id, and an event whose first handling fails (JetStream redelivers it), are all applied
 * exactly once with gap-free versions.
 */
import { sql } from 'kysely';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { OUTBOX_WRITERS } from '../src/bus/index.js';
import type { OpenTopics, WorldStateDeltaEvent } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import type { WorldMaterialiser, WorldStore } from '../src/world/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';

const natsUp = await requireNats();
const pgUp = await requirePostgres();

/** A store whose first unit of work fails, as a database hiccup would. */
class FailingOnceStore implements WorldStore {
  failures = 0;
  readonly durableEmit: boolean;
  constructor(private readonly inner: WorldStore) {
    this.durableEmit = inner.durableEmit;
  }
  unitOfWork: WorldStore['unitOfWork'] = (work) => {
    if (this.failures === 0) {
      this.failures += 1;
      return Promise.reject(new Error('connection reset by peer'));
    }
    return this.inner.unitOfWork(work);
  };
  seed: WorldStore['seed'] = (...args) => this.inner.seed(...args);
  domain: WorldStore['domain'] = (name) => this.inner.domain(name);
  domains: WorldStore['domains'] = () => this.inner.domains();
  history: WorldStore['history'] = (...args) => this.inner.history(...args);
  appliedSinceBase: WorldStore['appliedSinceBase'] = (name) => this.inner.appliedSinceBase(name);
  prune: WorldStore['prune'] = (options) => this.inner.prune(options);
}

describe.skipIf(!natsUp || !pgUp)('world state on JetStream + PostgreSQL, two replicas', () => {
  const name = uniqueName('fgworldjs');
  const stream = name.toUpperCase();
  const buses: JetStreamEventBus<OpenTopics>[] = [];
  const stores: GatewayStore[] = [];
  const worlds: WorldMaterialiser[] = [];

  afterAll(async () => {
    for (const w of worlds) await w.stop();
    for (const b of buses) await b.close();
    await deleteNatsStream(stream);
    if (stores[0] !== undefined) {
      await sql`drop schema if exists ${sql.id(name)} cascade`.execute(stores[0].db);
    }
    for (const s of stores) await s.close();
  });

  it('applies every event once across replicas, redeliveries and re-sends', async () => {
    for (let i = 0; i < 2; i++) {
      buses.push(
        await createJetStreamEventBus<OpenTopics>({
          servers: NATS_URL,
          stream,
          subjectPrefix: name,
          redeliveryDelayMs: 20,
        }),
      );
      stores.push(await openGatewayStore(PG_URL, { schema: name, poolSize: 4 }));
    }
    const flaky = new FailingOnceStore(
      createSqlWorldStore({ db: stores[0]!.db, kind: 'postgres', outbox: OUTBOX_WRITERS }),
    );
    // The loose topic map of the test buses carries the typed world.state.delta events.
    const asBus = (b: JetStreamEventBus<OpenTopics>) =>
      b as unknown as Parameters<typeof createWorldMaterialiser>[0]['bus'];
    worlds.push(
      createWorldMaterialiser({ store: flaky, bus: asBus(buses[0]!) }),
      createWorldMaterialiser({
        store: createSqlWorldStore({ db: stores[1]!.db, kind: 'postgres', outbox: OUTBOX_WRITERS }),
        bus: asBus(buses[1]!),
      }),
    );
    // Replica A alone takes the first events (so its failing unit of work is exercised), then
    // replica B joins the same durable consumer and they share the rest.
    await worlds[0]!.start();

    const publisher = buses[1]!;
    for (let i = 0; i < 30; i++) {
      const payload: WorldStateDeltaEvent = {
        source: i % 2 === 0 ? 'quinn' : 'ava',
        skill: 'triage',
        taskId: `t${i}`,
        correlationId: `c${i}`,
        deltas: [
          { domain: 'ci', path: 'data.count', op: 'inc', value: 1 },
          { domain: 'ci', path: 'data.seen', op: 'push', value: i },
        ],
      };
      await publisher.publish('world.state.delta', payload, { id: `delta-${i}` });
      // Every third event is published again with the same id (another replica's re-send).
      if (i % 3 === 0) await publisher.publish('world.state.delta', payload, { id: `delta-${i}` });
      if (i === 5) await worlds[1]!.start();
    }

    const world = worlds[1]!;
    await vi.waitFor(
      async () => {
        expect((await world.getDomain('ci'))?.version).toBe(30);
      },
      { timeout: 15_000, interval: 50 },
    );
    const ci = await world.getDomain('ci');
    expect(ci?.state.data).toMatchObject({ count: 30 });
    const seen = (ci?.state.data as { seen: number[] }).seen;
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(flaky.failures).toBe(1);
    const versions = (await world.history('ci', { order: 'asc', limit: 1000, path: 'data.count' }))
      .map((r) => r.version)
      .sort((a, b) => a! - b!);
    expect(versions).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect((await world.replay('ci'))?.state).toEqual(ci?.state);
  });
});
