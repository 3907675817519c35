/**
 * `0900_dispatch_requester` on a store the previous release wrote, on SQLite and PostgreSQL: the
 * store opens and migrates, its call in flight reads with no requester (and recovery still finds
 * it), a replica of the previous release keeps writing and reading calls against the migrated
 * schema during a rolling upgrade, and undoing the migration takes away only what it added.
 */
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createStoreDispatchRecords,
  type DispatchRecord,
  type DispatchStatus,
} from '../src/dispatch/index.js';
import { GATEWAY_MIGRATIONS } from '../src/service/index.js';
import type { StoreKind } from '../src/store/index.js';
import { requirePostgres } from './support/services.js';
import {
  dispatchRecordsOf,
  migrationsBefore,
  storeKinds,
  storePlace,
  type StorePlace,
} from './support/stores.js';

const pgUp = await requirePostgres();

const MIGRATION = '0900_dispatch_requester';
const INDEX = 'fleetgate_dispatch_in_flight';

/** The migrations of the release before this one: every one before {@link MIGRATION}. */
const PREVIOUS = migrationsBefore(MIGRATION);
/** The migrations a store of that release runs to this one: {@link MIGRATION} and any after it. */
const SINCE = Object.keys(GATEWAY_MIGRATIONS).filter((name) => name >= MIGRATION);

/** A call as the previous release recorded it. */
interface OldCall {
  id: string;
  status: DispatchStatus;
  taskId: string | null;
  /** Who sends it. */
  owner: string;
  at: number;
}

/** Writes a call as the previous release did: the record (no requester) and who sends it. */
async function writeAsBefore(db: Kysely<unknown>, call: OldCall): Promise<void> {
  await sql`insert into fleetgate_dispatch
      (id, agent, skill, correlation_id, status, task_id, created_at, updated_at, result)
      values (${call.id}, 'ops', 'sitrep', ${`c-${call.id}`}, ${call.status}, ${call.taskId},
        ${call.at}, ${call.at}, null)`.execute(db);
  await sql`insert into fleetgate_dispatch_send
      (dispatch_id, owner, message_id, context_id, sent_at)
      values (${call.id}, ${call.owner}, ${`m-${call.id}`}, ${`x-${call.id}`}, ${call.at})`.execute(
    db,
  );
}

/** The record of a call {@link writeAsBefore} wrote, as the store reads it now. */
function recordOf(call: Omit<OldCall, 'owner'>): DispatchRecord {
  return {
    id: call.id,
    agent: 'ops',
    skill: 'sitrep',
    correlationId: `c-${call.id}`,
    status: call.status,
    taskId: call.taskId,
    createdAt: call.at,
    updatedAt: call.at,
    result: null,
  };
}

/** The previous release's read of a call: every column of the record, as it selected them. */
async function readAsBefore(db: Kysely<unknown>, id: string): Promise<Record<string, unknown>> {
  const rows = await sql<Record<string, unknown>>`select "fleetgate_dispatch".*
      from "fleetgate_dispatch" where "id" = ${id}`.execute(db);
  return rows.rows[0]!;
}

/** Whether the store's own `fleetgate_dispatch` has the requester's column and the sweep's index. */
async function shape(
  db: Kysely<unknown>,
  kind: StoreKind,
): Promise<{ requester: boolean; index: boolean }> {
  if (kind === 'sqlite') {
    const columns = await sql<{ name: string }>`select name
        from pragma_table_info('fleetgate_dispatch')`.execute(db);
    const indexes = await sql<{ name: string }>`select name from sqlite_master
        where type = 'index' and name = ${INDEX}`.execute(db);
    return {
      requester: columns.rows.some((c) => c.name === 'requested_by'),
      index: indexes.rows.length === 1,
    };
  }
  const columns = await sql<{ n: number }>`select count(*)::int as n
      from information_schema.columns where table_schema = current_schema()
        and table_name = 'fleetgate_dispatch' and column_name = 'requested_by'`.execute(db);
  const indexes = await sql<{ n: number }>`select count(*)::int as n from pg_indexes
      where schemaname = current_schema() and indexname = ${INDEX}`.execute(db);
  return { requester: columns.rows[0]!.n === 1, index: indexes.rows[0]!.n === 1 };
}

describe.each(storeKinds(pgUp))(`${MIGRATION} ($kind)`, ({ kind, skip }) => {
  let place: StorePlace | undefined;

  afterEach(async () => {
    await place?.remove();
    place = undefined;
  });

  it.skipIf(skip)(
    'opens a store the previous release wrote and reads its call in flight with no requester',
    async () => {
      place = storePlace(kind, 'fgrequester');
      const before = await place.open(PREVIOUS);
      expect(await shape(before.db as Kysely<unknown>, kind)).toEqual({
        requester: false,
        index: false,
      });
      // Sent by a gateway that stopped, no task id yet: what recovery looks for.
      const inFlight: OldCall = {
        id: 'd-old',
        status: 'running',
        taskId: null,
        owner: 'gw-gone',
        at: 1_000,
      };
      await writeAsBefore(before.db as Kysely<unknown>, inFlight);
      await before.close();

      const store = await place.open();
      expect(store.migrated).toEqual(SINCE);
      expect(await shape(store.db as Kysely<unknown>, kind)).toEqual({
        requester: true,
        index: true,
      });
      for (const [name, records] of dispatchRecordsOf(store, kind)) {
        const read = await records.get(inFlight.id);
        expect(read, name).toEqual(recordOf(inFlight));
        expect(read, name).not.toHaveProperty('requestedBy');
        const orphan = (await records.orphans(10)).find((o) => o.record.id === inFlight.id);
        expect(orphan, name).toEqual({
          record: recordOf(inFlight),
          send: { owner: 'gw-gone', messageId: 'm-d-old', contextId: 'x-d-old', sentAt: 1_000 },
        });
      }

      // A replica of the previous release, still running during the roll, writes and reads as it
      // did; the gateway of this release reads its call with no requester.
      const old: OldCall = {
        id: 'd-replica',
        status: 'running',
        taskId: 't-1',
        owner: 'gw-old',
        at: 2_000,
      };
      await writeAsBefore(store.db as Kysely<unknown>, old);
      expect(await readAsBefore(store.db as Kysely<unknown>, old.id)).toMatchObject({
        id: old.id,
        status: 'running',
        requested_by: null,
      });
      const records = createStoreDispatchRecords(store.db);
      expect(await records.get(old.id)).toEqual(recordOf(old));
      const adrift = (await records.adrift(10, ['gw-new'])).map((o) => o.record);
      expect(adrift).toEqual([recordOf(old)]);

      // This release records who asked; the previous release's read is unaffected by the column.
      const asked: DispatchRecord = { ...recordOf(old), id: 'd-new', requestedBy: 'alice' };
      await records.create(asked);
      expect(await records.get('d-new')).toEqual(asked);
      expect(await readAsBefore(store.db as Kysely<unknown>, 'd-new')).toMatchObject({
        id: 'd-new',
        status: 'running',
      });
    },
  );

  it.skipIf(skip)(
    'undoes the migration: the column and the index go, every call stays',
    async () => {
      place = storePlace(kind, 'fgrequester');
      const store = await place.open();
      const db = store.db as Kysely<unknown>;
      const records = createStoreDispatchRecords(store.db);
      await records.create(recordOf({ id: 'd-a', status: 'running', taskId: null, at: 1 }));
      await records.create({
        ...recordOf({ id: 'd-b', status: 'completed', taskId: 't-b', at: 2 }),
        requestedBy: 'alice',
      });

      await GATEWAY_MIGRATIONS[MIGRATION]!.down!(db, kind);
      expect(await shape(db, kind)).toEqual({ requester: false, index: false });
      // The calls stay, as the previous release reads them, and it writes as it did.
      expect((await readAsBefore(db, 'd-a')).status).toBe('running');
      expect((await readAsBefore(db, 'd-b')).task_id).toBe('t-b');
      await writeAsBefore(db, { id: 'd-c', status: 'running', taskId: null, owner: 'gw', at: 3 });

      // Done again, it brings both back.
      await GATEWAY_MIGRATIONS[MIGRATION]!.up!(db, kind);
      expect(await shape(db, kind)).toEqual({ requester: true, index: true });
      expect(await records.get('d-c')).toEqual(
        recordOf({ id: 'd-c', status: 'running', taskId: null, at: 3 }),
      );
    },
  );
});
