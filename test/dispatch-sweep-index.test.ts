/**
 * The recovery sweep asks the dispatch records, every sweep, for the calls in flight a dead holder
 * may have left (`orphans`: no task id yet; `adrift`: a task followed by no living process). Those
 * are a handful among every call the store keeps, so on SQLite (both implementations) and on
 * PostgreSQL the queries the stores really run go through the index of `0900_dispatch_requester`
 * by status, not through every dispatch. The queries are caught as the stores send them and asked
 * for their plan with the same parameters.
 */
import {
  CompiledQuery,
  createQueryId,
  sql,
  type Kysely,
  type KyselyPlugin,
  type RootOperationNode,
} from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreDispatchRecords, type DispatchRecordStore } from '../src/dispatch/index.js';
import type { GatewayStore } from '../src/service/index.js';
import type { SqliteAccess } from '../src/store/index.js';
import { requirePostgres } from './support/services.js';
import { openTestStore, storeVariants, type TestStore } from './support/stores.js';

const pgUp = await requirePostgres();

const INDEX = 'fleetgate_dispatch_in_flight';
/**
 * Calls that ended (most of a store) and calls in flight (the few the sweep is after): enough
 * that PostgreSQL's planner, too, finds a scan of every call (or every holder) costs more.
 */
const ENDED = 40_000;
const IN_FLIGHT = 40;
const STATUSES = ['completed', 'failed', 'rejected', 'canceled'];

async function seed(db: Kysely<unknown>): Promise<void> {
  for (let from = 0; from < ENDED + IN_FLIGHT; from += 500) {
    const n = Array.from({ length: Math.min(500, ENDED + IN_FLIGHT - from) }, (_, i) => from + i);
    const status = (i: number) =>
      i >= ENDED ? (i % 2 === 0 ? 'running' : 'awaiting-input') : STATUSES[i % 4]!;
    // Half the calls in flight know their task (adrift when their holder is gone).
    const task = (i: number) => (i >= ENDED && i % 4 < 2 ? null : `t-${i}`);
    await sql`insert into fleetgate_dispatch
        (id, agent, skill, correlation_id, status, task_id, created_at, updated_at, result)
        values ${sql.join(
          n.map(
            (i) =>
              sql`(${`d-${i}`}, ${`agent-${i % 7}`}, 'sitrep', ${`c-${i}`}, ${status(i)},
                ${task(i)}, ${i}, ${i}, null)`,
          ),
        )}`.execute(db);
    await sql`insert into fleetgate_dispatch_send
        (dispatch_id, owner, message_id, context_id, sent_at)
        values ${sql.join(
          n.map((i) => sql`(${`d-${i}`}, ${`gw-${i % 3}`}, ${`m-${i}`}, ${`x-${i}`}, ${i})`),
        )}`.execute(db);
  }
}

/** A statement as a store sent it: its text and parameters. */
interface Sent {
  text: string;
  params: readonly unknown[];
}

/** The records on `store` as `variant` runs them, and the statements they send, caught. */
function caughtRecords(
  store: GatewayStore,
  direct: boolean,
): { records: DispatchRecordStore; sent: Sent[]; plan: (s: Sent) => Promise<string> } {
  const sent: Sent[] = [];
  if (direct) {
    const real = store.sqlite!;
    const spy: SqliteAccess = {
      write: (work, options) => real.write(work, options),
      idle: () => real.idle(),
      read: (work) =>
        real.read((q) =>
          work({
            ...q,
            all: (text, params = []) => {
              sent.push({ text, params });
              return q.all(text, params);
            },
          }),
        ),
    };
    return {
      records: createStoreDispatchRecords(store.db, { sqlite: spy }),
      sent,
      plan: async (s) =>
        (
          await real.read((q) =>
            q.all<{ detail: string }>(`explain query plan ${s.text}`, s.params),
          )
        )
          .map((r) => r.detail)
          .join('\n'),
    };
  }
  const nodes: RootOperationNode[] = [];
  const catcher: KyselyPlugin = {
    transformQuery: ({ node }) => {
      nodes.push(node);
      return node;
    },
    transformResult: ({ result }) => Promise.resolve(result),
  };
  const db = store.db.withPlugin(catcher);
  const postgres = store.sqlite === undefined;
  return {
    records: createStoreDispatchRecords(db),
    get sent() {
      return nodes.map((node) => {
        const compiled = store.db.getExecutor().compileQuery(node, createQueryId());
        return { text: compiled.sql, params: compiled.parameters };
      });
    },
    plan: async (s) => {
      const explain = CompiledQuery.raw(
        `${postgres ? 'explain' : 'explain query plan'} ${s.text}`,
        [...s.params],
      );
      const rows = (await store.db.executeQuery<Record<string, string>>(explain)).rows;
      return rows.map((r) => (postgres ? r['QUERY PLAN'] : r.detail)).join('\n');
    },
  };
}

describe.each(storeVariants(pgUp))(
  'the recovery sweep’s reads ($kind, direct: $direct)',
  ({ kind, direct, skip }) => {
    let opened: TestStore;

    beforeAll(async () => {
      if (skip) return;
      opened = await openTestStore({ kind, direct, skip }, 'fgsweepindex', 2);
      const db = opened.store.db as Kysely<unknown>;
      await seed(db);
      // Statistics as a running gateway's autovacuum would have gathered them.
      if (kind === 'postgres') await sql`analyze`.execute(db);
    }, 60_000);

    afterAll(async () => {
      if (!skip) await opened.remove();
    });

    /** The plan of the one query `read` sent, after checking what it answered. */
    async function planOf(read: (records: DispatchRecordStore) => Promise<number>) {
      const caught = caughtRecords(opened.store, direct);
      expect(await read(caught.records)).toBeGreaterThan(0);
      const sent = caught.sent.filter((s) => /fleetgate_dispatch_send/.test(s.text));
      expect(sent).toHaveLength(1);
      return caught.plan(sent[0]!);
    }

    /** `taskId`: how SQLite's plan names the task id's part of the index's search. */
    function expectIndexed(plan: string, taskId: string): void {
      if (kind === 'sqlite') {
        expect(plan).toContain(
          `SEARCH fleetgate_dispatch USING INDEX ${INDEX} (status=? AND ${taskId})`,
        );
        expect(plan).not.toMatch(/SCAN fleetgate_dispatch(_send)?\b/);
      } else {
        expect(plan).toMatch(
          new RegExp(`Index (Only )?Scan using ${INDEX}|Bitmap Index Scan on ${INDEX}`),
        );
        expect(plan).not.toMatch(/Seq Scan on fleetgate_dispatch(_send)?\b/);
      }
    }

    it.skipIf(skip)('finds orphans through the index by status', async () => {
      const plan = await planOf(async (records) => (await records.orphans(500)).length);
      // `task_id is null`
      expectIndexed(plan, 'task_id=?');
    });

    it.skipIf(skip)('finds calls adrift through the index by status', async () => {
      const plan = await planOf(
        async (records) => (await records.adrift(500, ['gw-0', 'gw-1'])).length,
      );
      // `task_id is not null`
      expectIndexed(plan, 'task_id>?');
    });
  },
);
