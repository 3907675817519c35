/**
 * Fault campaign: a private PostgreSQL cluster is killed (immediate shutdown, crash recovery on
 * start) under load and restarted after 1 s and 30 s (`npm run test:faults`: 5 minutes). The
 * gateway process stays up, every task the agent executed gets exactly one applied delta, and the
 * world state converges once the database is back — with the in-memory bus and with JetStream.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../src/bus/index.js';
import { createJetStreamEventBus } from '../../src/nats.js';
import type { PrivateServer } from '../support/private-servers.js';
import { canRunPrivatePostgres, startPrivatePostgres } from '../support/private-servers.js';
import { NATS_URL, deleteNatsStream, requireNats, uniqueName } from '../support/services.js';
import { outagesSeconds, runOutage, startFaultFleet } from './fault-fleet.js';

const natsUp = await requireNats();
const privatePg = canRunPrivatePostgres();
if (!privatePg && process.env.FLEETGATE_REQUIRE_SERVICES) {
  throw new Error('The PostgreSQL fault campaign needs initdb/pg_ctl (FLEETGATE_PG_BIN)');
}

describe.skipIf(!privatePg)('fault: PostgreSQL killed and restarted under load', () => {
  let server: PrivateServer;
  beforeAll(async () => {
    server = await startPrivatePostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.remove();
  });

  /** A fresh database on the private cluster for one case. */
  async function database(): Promise<string> {
    const name = uniqueName('fault');
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query(`create database ${name}`);
    } finally {
      await admin.end();
    }
    return server.url.replace(/\/postgres$/u, `/${name}`);
  }

  describe.each(['memory', 'jetstream'] as const)('bus: %s', (busKind) => {
    it.skipIf(busKind === 'jetstream' && !natsUp).each(outagesSeconds())(
      '%i s outage: no crash, no delta lost or doubled, the world converges',
      async (seconds) => {
        let bus: EventBus | undefined;
        const stream = uniqueName('FGFAULT').toUpperCase();
        if (busKind === 'jetstream') {
          bus = await createJetStreamEventBus({
            servers: NATS_URL,
            stream,
            subjectPrefix: stream.toLowerCase(),
            deadLetterPrefix: `${stream.toLowerCase()}_dlq`,
          });
        }
        const fleet = await startFaultFleet({ store: await database(), bus: bus ?? 'memory' });
        try {
          const { stats, tally } = await runOutage(fleet, server, seconds);
          expect(tally).toMatchObject({ lost: 0, doubled: 0 });
          expect(tally.count).toBe(tally.executed);
          expect(tally.executed).toBeGreaterThan(0);
          expect(stats.ok).toBeGreaterThan(0);
          // While it was down, dispatches failed with a coded store error, not a crash.
          expect(stats.failed).toBeGreaterThan(0);
          expect(Object.keys(stats.codes).every((c) => c.startsWith('FLEETGATE_'))).toBe(true);
          expect(fleet.reported['FLEETGATE_STORE_UNAVAILABLE'] ?? 0).toBeGreaterThan(0);
          // And it serves again, end to end.
          const record = await fleet.gateway.dispatch({ agent: 'ops', skill: 'sitrep' }).answered();
          expect(record.status).toBe('completed');
          const final = await fleet.converge(30_000);
          expect(final).toMatchObject({ lost: 0, doubled: 0, count: final.executed });
        } finally {
          await fleet.close();
          if (bus !== undefined) {
            await bus.close();
            await deleteNatsStream(stream);
          }
        }
      },
      (Math.max(...outagesSeconds()) + 150) * 1_000,
    );
  });
});
