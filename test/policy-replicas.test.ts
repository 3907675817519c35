/**
 * Approvals shared by replicas: two gateways on one PostgreSQL schema and one JetStream stream.
 * A call held on one replica is decided on the other and reaches the agent exactly once.
 */
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startOpsAgent } from '../examples/agents/index.js';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import type { Gateway } from '../src/service/index.js';
import { createGateway } from '../src/service/index.js';
import type { GatewayStore as Store } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import type { GatewayRecords } from './support/gateway.js';
import { until } from './support/gateway.js';
import { eventually } from './support/gateway-service.js';
import {
  deleteNatsStream,
  NATS_URL,
  PG_URL,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';

const natsUp = await requireNats();
const pgUp = await requirePostgres();

describe.skipIf(!natsUp || !pgUp)('approvals across replicas (PostgreSQL + JetStream)', () => {
  const name = uniqueName('fgpolicy');
  const stream = name.toUpperCase();
  const buses: JetStreamEventBus<OpenTopics>[] = [];
  const stores: Store[] = [];
  const gateways: Gateway[] = [];
  let ops: RunningAgent | undefined;

  afterAll(async () => {
    for (const g of gateways) await g.close();
    for (const b of buses) await b.close();
    await deleteNatsStream(stream);
    if (stores[0] !== undefined) {
      await sql`drop schema if exists ${sql.id(name)} cascade`.execute(stores[0].db);
    }
    for (const s of stores) await s.close();
    await ops?.close();
  });

  async function replica(
    agentUrl: string,
    records?: (built: GatewayRecords) => GatewayRecords,
  ): Promise<Gateway> {
    const bus = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: name,
    });
    const store = await openGatewayStore(PG_URL, { schema: name, poolSize: 4 });
    buses.push(bus);
    stores.push(store);
    const gw = await createGateway(
      {
        store: PG_URL,
        bus: NATS_URL,
        agents: [{ name: 'ops', url: agentUrl }],
        policy: { sweepInterval: '1h' },
      },
      { store, bus, ...(records === undefined ? {} : { records }) },
    );
    gateways.push(gw);
    return gw;
  }

  it('holds a call on one replica, decides it on the other, sends it once', async () => {
    ops = await startOpsAgent();
    const first = await replica(ops.url);
    const decided: EventEnvelope[] = [];
    await first.events.subscribe('hitl.approval.decided', (e) => void decided.push(e), {
      name: `${name}_decided`,
    });

    const record = await first
      .dispatch({
        agent: 'ops',
        skill: 'bulk_migration',
        text: 'migrate-all',
        requestedBy: 'bob',
      })
      .answered();
    expect(record.status).toBe('awaiting-approval');
    // The first replica restarts; the request is in the shared store.
    await first.close();
    const second = await replica(ops.url);
    const third = await replica(ops.url);

    const [approval] = (await second.approvals.list()).filter((a) => a.dispatchId === record.id);
    expect(approval).toMatchObject({ status: 'pending', radius: 'fleet', requestedBy: 'bob' });

    // Two approvers on two replicas at once: one decision wins, the other is told so.
    const results = await Promise.allSettled([
      second.approvals.approve(approval!.id, 'alice'),
      third.approvals.approve(approval!.id, 'carol'),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(
      isFleetgateError(
        (lost[0] as PromiseRejectedResult).reason,
        'FLEETGATE_APPROVAL_ALREADY_DECIDED',
      ),
    ).toBe(true);

    // Both replicas sweep; the call went out exactly once.
    await Promise.all([second.approvals.sweep(), third.approvals.sweep()]);
    expect(await third.dispatchRecord(record.id)).toMatchObject({ status: 'completed' });
    expect(ops.received.filter((c) => c.text === 'migrate-all')).toHaveLength(1);
    expect((await third.approvals.get(approval!.id))?.status).toBe('consumed');

    // The decision reached the bus, once, for every replica's subscribers.
    const subscriber = gateways[1]!;
    const seen: EventEnvelope[] = [];
    await subscriber.events.subscribe('hitl.approval.decided', (e) => void seen.push(e), {
      name: `${name}_seen`,
      from: 'all',
    });
    await until(() => seen.length >= 1, 10_000, 'the decided event');
    expect(seen.filter((e) => (e.payload as { id: string }).id === approval!.id)).toHaveLength(1);
    expect(decided.length).toBeLessThanOrEqual(1);
  });

  it('leaves a call another replica is sending alone when its own release finds the approval consumed', async () => {
    // The two replicas release the same approved call at once, in the order that lost the call
    // before: one reads the dispatch still held, the other consumes the approval and sends the
    // call, then the first asks the gate (the approval is consumed) and must not end the dispatch.
    let heldId = '';
    let slowRead: () => void = () => undefined;
    const slowHasRead = new Promise<void>((resolve) => (slowRead = resolve));
    const fast = await replica(ops!.url, (built) => ({
      ...built,
      dispatches: {
        ...built.dispatches,
        get: async (id) => {
          // The deciding replica reads the dispatch only once the other has read it held.
          if (id === heldId) await slowHasRead;
          return built.dispatches.get(id);
        },
      },
    }));
    const slow = await replica(ops!.url, (built) => ({
      ...built,
      dispatches: {
        ...built.dispatches,
        get: async (id) => {
          const read = await built.dispatches.get(id);
          if (id !== heldId || read?.status !== 'awaiting-approval') return read;
          slowRead();
          // Hand the read back once the other replica moved the dispatch on, and before its call
          // ends (so checked every 10 ms: `eventually` polls too slowly for that window).
          for (;;) {
            const now = await built.dispatches.get(id);
            if (now?.status !== 'awaiting-approval') return read;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        },
      },
    }));

    const record = await fast
      .dispatch({
        agent: 'ops',
        skill: 'bulk_migration',
        text: 'race-release',
        requestedBy: 'bob',
      })
      .answered();
    expect(record.status).toBe('awaiting-approval');
    heldId = record.id;
    const [approval] = (await fast.approvals.list()).filter((a) => a.dispatchId === record.id);
    let deciding = true;
    const sweeper = (async () => {
      // As the sweep timer would: the approval is found approved and the call released.
      while (deciding) await slow.approvals.sweep();
    })();
    const decided = await fast.approvals.approve(approval!.id, 'alice');
    deciding = false;
    await sweeper;
    expect(decided.dispatch?.status).not.toBe('rejected');

    const ended = await eventually(async () => {
      const now = await slow.dispatchRecord(record.id);
      return now?.status === 'completed' || now?.status === 'rejected' ? now : undefined;
    });
    expect(ended).toMatchObject({ status: 'completed' });
    expect(ops!.received.filter((c) => c.text === 'race-release')).toHaveLength(1);
  });
});
