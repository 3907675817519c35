/**
 * Floor learning persisted across a restart: a blast violation raises the skill's operator floor in
 * the store (`fleetgate_learned_floors`), and after reopening the store the floors read back gate
 * the skill at the observed radius, so the same delta is no longer a violation.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { EventEnvelope, OpsAlertEvent } from '../src/protocol/index.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import {
  createReconciler,
  createStoreFloorWriter,
  listLearnedFloors,
} from '../src/alerts/index.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { FakeDeclarations } from './world-alert-fakes.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';

const pgUp = await requirePostgres();

/** The fleet directory's view after a (re)start: declarations plus the learned floors in the store. */
async function declarationsFrom(store: GatewayStore): Promise<FakeDeclarations> {
  const declarations = new FakeDeclarations({
    'quinn/pr_review': { radius: 'repo', domains: ['deploy'] },
  });
  for (const floor of await listLearnedFloors(store.db)) {
    declarations.floors.set(`${floor.agent}/${floor.skill}`, floor.radius);
  }
  return declarations;
}

async function violationsAfterRestart(open: () => Promise<GatewayStore>): Promise<void> {
  const deltas = [{ domain: 'deploy', path: 'data.frozen', op: 'set' as const, value: true }];
  // First life: the violation teaches the floor.
  let store = await open();
  let bus = createInMemoryEventBus();
  const alerts: EventEnvelope<string, OpsAlertEvent>[] = [];
  await bus.subscribe('ops.alert.>', (e) => void alerts.push(e), { name: 'alerts' });
  let reconciler = createReconciler({
    bus,
    declarations: await declarationsFrom(store),
    domains: { deploy: { minRadius: 'public' } },
    learnFloors: true,
    floorWriter: createStoreFloorWriter({ db: store.db, kind: store.kind }),
  });
  await reconciler.start();
  await bus.publish(
    'world.state.delta',
    { source: 'quinn', skill: 'pr_review', deltas, taskId: 't1', correlationId: 'c1' },
    { id: 'delta-1' },
  );
  await bus.idle();
  expect(alerts.map((a) => a.payload.kind)).toEqual(['blast_violation']);
  expect(alerts[0]!.payload.message).toMatch(/operator floor raised to public/);
  await reconciler.stop();
  await bus.close();
  await store.close();

  // Second life: a new process reads the floors back; the skill is now gated as public.
  store = await open();
  try {
    const floors = await listLearnedFloors(store.db);
    expect(floors).toEqual([
      expect.objectContaining({ agent: 'quinn', skill: 'pr_review', radius: 'public' }),
    ]);
    expect(floors[0]!.reason).toMatch(/blast violation in task t1/);
    const declarations = await declarationsFrom(store);
    expect(declarations.blast('quinn', 'pr_review').radius).toBe('public');
    bus = createInMemoryEventBus();
    reconciler = createReconciler({
      bus,
      declarations,
      domains: { deploy: { minRadius: 'public' } },
      learnFloors: true,
      floorWriter: createStoreFloorWriter({ db: store.db, kind: store.kind }),
    });
    const again = await reconciler.reconcile({
      id: 'delta-2',
      payload: { source: 'quinn', skill: 'pr_review', taskId: 't2', deltas },
    });
    expect(again).toEqual([]);
    // A narrower raise never lowers a learned floor.
    const writer = createStoreFloorWriter({ db: store.db, kind: store.kind });
    await writer.raiseFloor('quinn', 'pr_review', 'project', 'narrower');
    expect((await listLearnedFloors(store.db))[0]).toMatchObject({ radius: 'public' });
    await bus.close();
  } finally {
    await store.close();
  }
}

describe('learned floors', () => {
  it('persist across a restart in a SQLite file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-floors-'));
    try {
      await violationsAfterRestart(() => openGatewayStore(`sqlite:${join(dir, 'fleet.db')}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!pgUp)(
    'persist across a restart in PostgreSQL, and concurrent raises keep the widest',
    async () => {
      const schema = uniqueName('fgfloors');
      const open = () => openGatewayStore(PG_URL, { schema, poolSize: 4 });
      try {
        await violationsAfterRestart(open);
        const a = await open();
        const b = await open();
        try {
          const wa = createStoreFloorWriter({ db: a.db, kind: a.kind });
          const wb = createStoreFloorWriter({ db: b.db, kind: b.kind });
          await Promise.all(
            (['project', 'fleet', 'repo', 'self', 'fleet', 'project'] as const).map((r, i) =>
              (i % 2 === 0 ? wa : wb).raiseFloor('ava', 'sitrep', r, `raise ${i}`),
            ),
          );
          const floors = await listLearnedFloors(a.db);
          expect(floors.find((f) => f.agent === 'ava')).toMatchObject({ radius: 'fleet' });
        } finally {
          await b.close();
          await a.close();
        }
      } finally {
        const admin = await openGatewayStore(PG_URL, { migrate: false });
        await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(admin.db);
        await admin.close();
      }
    },
  );
});
