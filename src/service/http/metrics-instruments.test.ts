import { sql } from 'kysely';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { OUTBOX_MIGRATIONS } from '../../bus/index.js';
import { openStore } from '../../store/index.js';
import type { GatewayPorts } from '../gateway-types.js';
import { registerInstruments } from './metrics-instruments.js';

describe('outbox gauges', () => {
  it('show the outbox as it is at the scrape, both from one read', async () => {
    const store = await openStore('sqlite::memory:', { migrations: OUTBOX_MIGRATIONS });
    try {
      const createdAt = Date.now() - 7_000;
      for (const id of ['e1', 'e2', 'e3']) {
        await sql`insert into fleetgate_outbox (id, topic, payload, correlation_id, time, created_at)
          values (${id}, 'skill.dispatch.requested', '{}', 'c', '2026-12-07T00:00:00.000Z', ${createdAt})`.execute(
          store.db,
        );
      }
      const registry = new Registry();
      const ports = { store, leaseHeld: () => false, trackedTasks: () => 0 };
      registerInstruments(registry, { ports: ports as unknown as GatewayPorts });
      // The first scrape already counts the three unsent events (it showed the previous one's).
      const text = await registry.metrics();
      expect(text).toMatch(/^fleetgate_outbox_unsent 3$/m);
      const lag = Number(/^fleetgate_outbox_lag_seconds (\S+)$/m.exec(text)?.[1]);
      expect(lag).toBeGreaterThanOrEqual(7);
      await sql`update fleetgate_outbox set sent_at = 1 where id = 'e1'`.execute(store.db);
      expect(await registry.metrics()).toMatch(/^fleetgate_outbox_unsent 2$/m);
    } finally {
      await store.close();
    }
  });
});
