/**
 * The outbox relay's handover on a SQLite store: the rows a writer's unit committed are published
 * without the relay reading them back, in order and once; a row written another way (kysely), a
 * row a round left unsent, a unit that rolled back — each is still published exactly as the table
 * says, the relay reading it where it must.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventBus, OutboxRelay, PublishResult } from '../src/bus/index.js';
import {
  createInMemoryEventBus,
  createOutboxRelay,
  insertOutboxRows,
  writeOutboxEvents,
} from '../src/bus/index.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { until } from './support/gateway.js';

type Sqlite = NonNullable<GatewayStore['sqlite']>;

describe('outbox handover (SQLite)', () => {
  let dir: string;
  let store: GatewayStore;
  let sqlite: Sqlite;
  let relay: OutboxRelay | undefined;
  /** Reads the relay made through the store's direct access. */
  let reads = 0;
  let seen: EventEnvelope[];
  let n = 0;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-handover-'));
    store = await openGatewayStore(`sqlite:${join(dir, 'fleetgate.db')}`);
    sqlite = store.sqlite!;
    reads = 0;
    seen = [];
    n = 0;
  });

  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The store's access, its reads counted. */
  function counted(): Sqlite {
    return {
      write: (work, options) => sqlite.write(work, options),
      read: (work) => {
        reads += 1;
        return sqlite.read(work);
      },
      idle: () => sqlite.idle(),
    };
  }

  async function start(bus: EventBus<OpenTopics>): Promise<OutboxRelay> {
    await bus.subscribe('ledger.>', (e) => void seen.push(e), { name: 'ledger', durable: true });
    // Polls far apart: each round here is one a writer's notice started.
    relay = createOutboxRelay({ db: store.db, sqlite: counted(), bus, pollIntervalMs: 60_000 });
    relay.start();
    return relay;
  }

  /** `count` events written in one unit through the direct statements; the relay told. */
  async function write(count: number): Promise<void> {
    const events = Array.from({ length: count }, () => {
      n += 1;
      return { topic: 'ledger.credited', payload: { n }, id: `e-${n}` };
    });
    await sqlite.write((sql) => insertOutboxRows(sql, events, Date.now()));
    relay?.notify();
  }

  const order = (): number[] => seen.map((e) => (e.payload as { n: number }).n);

  /** Rows not marked sent, as a second connection to the file sees them committed. */
  function unsent(): number {
    const other = new Database(join(dir, 'fleetgate.db'), { readonly: true });
    try {
      const row = other
        .prepare('select count(*) as n from fleetgate_outbox where sent_at is null')
        .get() as { n: number };
      return row.n;
    } finally {
      other.close();
    }
  }

  it('publishes what writers committed without reading it back, in order and once', async () => {
    await start(createInMemoryEventBus<OpenTopics>());
    await write(2);
    await until(() => seen.length === 2);
    const afterFirst = reads;
    for (let i = 0; i < 20; i += 1) {
      // Several units per turn, as concurrent calls commit them.
      await Promise.all([write(3), write(1)]);
    }
    await until(() => seen.length === 82);
    expect(order()).toEqual(Array.from({ length: 82 }, (_, i) => i + 1));
    expect(reads).toBe(afterFirst);
    await until(() => unsent() === 0);
  });

  it('reads the table where a row came another way, and takes the handover again after', async () => {
    await start(createInMemoryEventBus<OpenTopics>());
    await write(2);
    await until(() => seen.length === 2);
    // A row written through kysely is not handed over: the next round finds a gap and reads.
    n += 1;
    await writeOutboxEvents(
      store.db,
      'sqlite',
      [{ topic: 'ledger.credited', payload: { n }, id: `e-${n}` }],
      Date.now(),
    );
    await write(2);
    await until(() => seen.length === 5);
    expect(order()).toEqual([1, 2, 3, 4, 5]);
    const resynced = reads;
    await write(3);
    await write(3);
    await until(() => seen.length === 11);
    expect(order()).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(reads).toBe(resynced);
  });

  it('never hands over a unit that rolled back', async () => {
    await start(createInMemoryEventBus<OpenTopics>());
    await write(1);
    await until(() => seen.length === 1);
    const failing = sqlite.write((sql) => {
      insertOutboxRows(sql, [{ topic: 'ledger.credited', payload: { n: 99 }, id: 'lost' }], 1);
      throw new Error('no');
    });
    await expect(failing).rejects.toThrow('no');
    await write(2);
    await until(() => seen.length === 3);
    expect(order()).toEqual([1, 2, 3]);
    expect(seen.map((e) => e.id)).not.toContain('lost');
  });

  it('publishes again a row a round left unhandled, and the rows after it once', async () => {
    const inner = createInMemoryEventBus<OpenTopics>();
    let dropped = false;
    // The first publish of e-3 is let go unhandled (as a durable subscriber's queue dropping it).
    const publish = (
      topic: string,
      payload: unknown,
      options?: { id?: string },
    ): Promise<PublishResult> => {
      if (options?.id === 'e-3' && !dropped) {
        dropped = true;
        return Promise.resolve({ id: 'e-3', duplicate: false, handled: Promise.resolve(false) });
      }
      return inner.publish(topic, payload, options);
    };
    const bus = new Proxy(inner, {
      get: (target, key) => {
        if (key === 'publish') return publish;
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    await start(bus);
    await write(2);
    await until(() => seen.length === 2);
    await write(3);
    await until(() => seen.length === 4);
    expect(unsent()).toBe(1);
    // The next round reads the table, which still holds e-3.
    await write(1);
    await until(() => seen.length === 6);
    expect(order()).toEqual([1, 2, 4, 5, 3, 6]);
    await until(() => unsent() === 0);
  });
});
