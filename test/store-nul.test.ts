/**
 * NUL characters never reach PostgreSQL (which cannot store them in text): a task id with NUL is
 * refused with `FLEETGATE_TASK_ID_INVALID` where it enters (a push URL, an agent's answer), and a
 * delta entry with NUL in its domain or path is rejected on its own while the valid entries next
 * to it apply.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent } from '../examples/agents/ops-agent.js';
import type { RunningAgent } from '../examples/agents/harness.js';
import { createInMemoryEventBus, OUTBOX_WRITERS } from '../src/bus/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { GatewayStore } from '../src/service/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { createPushReceiver, createStoreTaskRecords } from '../src/tasks/index.js';
import { createSqlWorldStore, createWorldMaterialiser } from '../src/world/index.js';
import type { World } from './support/gateway.js';
import { gateway, world } from './support/gateway.js';
import { PG_URL, requirePostgres, uniqueName } from './support/services.js';
import { deltaEvent } from './world-store-contract.js';

const pgUp = await requirePostgres();

describe.skipIf(!pgUp)('NUL on PostgreSQL', () => {
  const schema = uniqueName('fgnul');
  let store: GatewayStore;
  beforeAll(async () => {
    store = await openGatewayStore(PG_URL, { schema, poolSize: 2 });
  });
  afterAll(async () => {
    if (store === undefined) return;
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
    await store.close();
  });

  it('answers a push for a task id with NUL 400 FLEETGATE_TASK_ID_INVALID, before any lookup', async () => {
    const receive = createPushReceiver({
      records: createStoreTaskRecords(store.db),
      onEvent: () => Promise.resolve(),
    });
    const answer = await receive({ taskId: 'task\u0000x', headers: {}, body: '{}' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'FLEETGATE_TASK_ID_INVALID' } });
    // The receiver still answers ordinary ids from the store.
    const unknown = await receive({ taskId: 'no-such-task', headers: {}, body: '{}' });
    expect(unknown.status).not.toBe(400);
  });

  it('rejects delta entries with NUL in domain or path alone; the valid entries of the event apply', async () => {
    const world = createWorldMaterialiser({
      store: createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
      bus: createInMemoryEventBus(),
    });
    const report = await world.apply(
      deltaEvent(
        [
          { domain: 'ci', path: 'data.count', op: 'inc', value: 1 },
          { domain: 'c\u0000i', path: 'data.count', op: 'inc', value: 1 },
          { domain: 'ci', path: 'data.\u0000x', op: 'set', value: 'x' },
          { domain: 'ci', path: 'data.label', op: 'set', value: 'nul \u0000 inside a value' },
        ],
        { taskId: 'nul-1' },
      ),
    );
    expect(report.applied).toBe(2);
    expect(report.rejected.map((r) => r.index)).toEqual([1, 2]);
    expect(report.rejected[0]!.reason).toContain('NUL');
    const ci = await world.getDomain('ci');
    expect(ci?.state).toEqual({ data: { count: 1, label: 'nul \u0000 inside a value' } });
    const history = await world.history('ci', { order: 'asc' });
    expect(history.map((h) => [h.status, h.path])).toEqual([
      ['applied', 'data.count'],
      ['rejected', 'data.\\u0000x'],
      ['applied', 'data.label'],
    ]);
    const rejectedDomain = await world.history('c\\u0000i');
    expect(rejectedDomain.map((h) => h.status)).toEqual(['rejected']);
  });

  it('refuses an event whose task id has NUL with FLEETGATE_WORLD_EVENT_INVALID, not a database error', async () => {
    const world = createWorldMaterialiser({
      store: createSqlWorldStore({ db: store.db, kind: store.kind, outbox: OUTBOX_WRITERS }),
      bus: createInMemoryEventBus(),
    });
    const error = await world
      .apply(
        deltaEvent([{ domain: 'ci', path: 'data.n', op: 'inc', value: 1 }], {
          taskId: 'bad\u0000id',
        }),
      )
      .catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_WORLD_EVENT_INVALID')).toBe(true);
  });
});

describe('a task id with NUL from an agent', () => {
  let w: World;
  let evil: RunningAgent;
  beforeAll(async () => {
    w = await world(0);
    evil = await startOpsAgent({
      decorateHandler: (handler) => {
        const renaming = Object.create(handler) as typeof handler;
        renaming.sendMessage = async (params, context) => {
          const reply = await handler.sendMessage(params, context);
          return 'messageId' in reply ? reply : { ...reply, id: `${reply.id}\u0000` };
        };
        return renaming;
      },
    });
  });
  afterAll(async () => {
    await evil.close();
    await w.close();
  });

  it('fails the call with FLEETGATE_TASK_ID_INVALID and stores nothing of it', async () => {
    const g = await gateway(w, { agents: { evil: evil.url } });
    try {
      const error = await g.gw.call('evil', 'pr_review', 'go').catch((e: unknown) => e);
      expect(isFleetgateError(error, 'FLEETGATE_TASK_ID_INVALID')).toBe(true);
      expect((error as Error).message).toContain('agent evil');
      const rows = await w.store.db.selectFrom('fleetgate_task').selectAll().execute();
      expect(rows).toEqual([]);
      expect(w.deltas).toEqual([]);
      // The honest agent next to it is unaffected.
      expect((await g.gw.call('ops', 'pr_review', 'go')).ok).toBe(true);
    } finally {
      await g.stop();
    }
  });
});
