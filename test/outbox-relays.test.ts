/** Several outbox relays on one PostgreSQL outbox share the rows instead of each sending all. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus, PublishOptions, PublishResult } from '../src/bus/index.js';
import type { OpenTopics } from '../src/protocol/index.js';
import { createOutboxRelay, createOutboxWriter } from '../src/bus/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';

const pgUp = await requirePostgres();

/** A bus that counts publishes per id and is a little slow, as a real broker round trip is. */
function countingBus(): { bus: EventBus<OpenTopics>; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const bus = {
    async publish(
      _topic: string,
      _payload: unknown,
      options: PublishOptions = {},
    ): Promise<PublishResult> {
      await new Promise((r) => setTimeout(r, 1));
      const id = options.id ?? '';
      counts.set(id, (counts.get(id) ?? 0) + 1);
      return { id, duplicate: false };
    },
    subscribe: () => Promise.reject(new Error('not used')),
    close: () => Promise.resolve(),
  } as unknown as EventBus<OpenTopics>;
  return { bus, counts };
}

describe.skipIf(!pgUp)('outbox relays on PostgreSQL', () => {
  const schema = uniqueName('relays');
  let store: GatewayStore;
  beforeAll(async () => {
    store = await openGatewayStore(PG_URL, { schema });
  });
  afterAll(async () => {
    await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
    await store.close();
  });

  it('with lockRows, three relays publish each of 300 rows exactly once between them', async () => {
    const writer = createOutboxWriter<OpenTopics>();
    for (let i = 0; i < 300; i += 1)
      await writer.write(store.db, 'test.event', { i }, { id: `e-${i}` });
    const { bus, counts } = countingBus();
    const relays = [0, 1, 2].map(() =>
      createOutboxRelay({ db: store.db, bus, batchSize: 20, lockRows: true }),
    );
    const sent = await Promise.all(relays.map((r) => r.drain()));
    expect(sent.reduce((a, b) => a + b, 0)).toBe(300);
    expect(counts.size).toBe(300);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    // The work was shared.
    expect(sent.filter((n) => n > 0).length).toBeGreaterThan(1);
  });
});
