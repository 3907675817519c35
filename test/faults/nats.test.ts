/**
 * Fault campaign: a private nats-server with JetStream is killed (SIGKILL) under load and started
 * again on the same port and data after 1 s and 30 s (`npm run test:faults`: 5 minutes). The
 * gateway (PostgreSQL store) stays up; events committed meanwhile wait in the outbox, no dispatch
 * fails, and every task the agent executed gets exactly one applied delta once the server is back.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openGatewayStore } from '../../src/service/index.js';
import { NATS_SERVER, startPrivateNats } from '../support/private-servers.js';
import { PG_URL, requirePostgres, uniqueName } from '../support/services.js';
import { outagesSeconds, runOutage, startFaultFleet } from './fault-fleet.js';

const pgUp = await requirePostgres();
if (NATS_SERVER === undefined && process.env.FLEETGATE_REQUIRE_SERVICES) {
  throw new Error('The NATS fault campaign needs a nats-server binary (FLEETGATE_NATS_SERVER)');
}

describe.skipIf(NATS_SERVER === undefined || !pgUp)(
  'fault: NATS killed and restarted under load',
  () => {
    it.each(outagesSeconds())(
      '%i s outage: no crash, no delta lost or doubled, the world converges',
      async (seconds) => {
        const server = await startPrivateNats();
        const schema = uniqueName('fgnatsfault');
        const store = await openGatewayStore(PG_URL, {
          schema,
          timeouts: { connectMs: 1_000, statementMs: 10_000, queryMs: 15_000 },
        });
        const fleet = await startFaultFleet({ store, bus: server.url });
        try {
          const { stats, tally } = await runOutage(fleet, server, seconds);
          expect(tally).toMatchObject({ lost: 0, doubled: 0 });
          expect(tally.count).toBe(tally.executed);
          expect(tally.executed).toBeGreaterThan(0);
          expect(stats.ok).toBeGreaterThan(0);
          // Every event of a call goes through the outbox: a bus outage fails no dispatch.
          expect(stats).toMatchObject({ failed: 0, codes: {} });
          const record = await fleet.gateway.dispatch({ agent: 'ops', skill: 'sitrep' }).answered();
          expect(record.status).toBe('completed');
          const final = await fleet.converge(30_000);
          expect(final).toMatchObject({ lost: 0, doubled: 0, count: final.executed });
        } finally {
          await fleet.close();
          await server.remove();
          await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
          await store.close();
        }
      },
      // The outage, then the backlog it leaves to drain (every dispatch made meanwhile), then slack.
      (Math.max(...outagesSeconds()) * 2 + 150) * 1_000,
    );
  },
);
