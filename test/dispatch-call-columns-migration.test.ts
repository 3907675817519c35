/**
 * `1000_dispatch_call_columns` on a store the previous release wrote, on SQLite and PostgreSQL:
 * the first of the two releases that fold a call's side rows (`fleetgate_dispatch_send`,
 * `fleetgate_dispatch_trace`) into its own. The store migrates; calls the previous release left in
 * flight are still found and taken over by their side rows; while a replica of the previous
 * release runs beside this one (a rolling upgrade), each reads and takes over the other's calls
 * and the side row decides a takeover; this release writes the same on the call's own row; undoing
 * the migration takes away only its columns.
 */
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createStoreDispatchRecords, type DispatchRecord } from '../src/dispatch/index.js';
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

const MIGRATION = '1000_dispatch_call_columns';
const COLUMNS = ['owner', 'message_id', 'context_id', 'sent_at', 'traceparent'];
const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** The migrations of the release before this one: every one before {@link MIGRATION}. */
const PREVIOUS = migrationsBefore(MIGRATION);

/** A call in flight as the previous release recorded it: the record and its side rows. */
async function writeAsBefore(db: Kysely<unknown>, id: string, owner: string): Promise<void> {
  await sql`insert into fleetgate_dispatch
      (id, agent, skill, correlation_id, status, task_id, created_at, updated_at, result)
      values (${id}, 'ops', 'sitrep', ${`c-${id}`}, 'running', null, 1000, 1000, null)`.execute(db);
  await sql`insert into fleetgate_dispatch_send
      (dispatch_id, owner, message_id, context_id, sent_at)
      values (${id}, ${owner}, ${`m-${id}`}, ${`x-${id}`}, 1000)`.execute(db);
  await sql`insert into fleetgate_dispatch_trace (dispatch_id, traceparent)
      values (${id}, ${TRACE})`.execute(db);
}

/** The previous release's takeover of a call: its side row alone, compare-and-set. */
async function takeOverAsBefore(
  db: Kysely<unknown>,
  id: string,
  from: string,
  to: string,
): Promise<boolean> {
  const moved = await sql`update fleetgate_dispatch_send set owner = ${to}
      where dispatch_id = ${id} and owner = ${from}`.execute(db);
  return Number(moved.numAffectedRows) === 1;
}

/** The previous release's read of the calls in flight with their holders (its recovery's). */
async function heldAsBefore(db: Kysely<unknown>, id: string): Promise<unknown> {
  const rows = await sql<Record<string, unknown>>`select d.id, d.status, s.owner, s.message_id,
        s.context_id, t.traceparent
      from fleetgate_dispatch d
      inner join fleetgate_dispatch_send s on s.dispatch_id = d.id
      left join fleetgate_dispatch_trace t on t.dispatch_id = d.id
      where d.status in ('running', 'awaiting-input') and d.id = ${id}`.execute(db);
  return rows.rows[0];
}

/** The call columns of a dispatch's own row, in {@link COLUMNS}' order. */
async function ownRow(db: Kysely<unknown>, id: string): Promise<unknown[]> {
  const rows = await sql<Record<string, unknown>>`select owner, message_id, context_id, sent_at,
        traceparent from fleetgate_dispatch where id = ${id}`.execute(db);
  const row = rows.rows[0]!;
  return COLUMNS.map((c) => (c === 'sent_at' && row[c] !== null ? Number(row[c]) : row[c]));
}

/** Whether the store's `fleetgate_dispatch` has the migration's columns. */
async function hasColumns(db: Kysely<unknown>, kind: StoreKind): Promise<boolean> {
  const found =
    kind === 'sqlite'
      ? await sql<{
          name: string;
        }>`select name from pragma_table_info('fleetgate_dispatch')`.execute(db)
      : await sql<{ name: string }>`select column_name as name from information_schema.columns
          where table_schema = current_schema() and table_name = 'fleetgate_dispatch'`.execute(db);
  const names = new Set(found.rows.map((r) => r.name));
  const present = COLUMNS.filter((c) => names.has(c));
  if (present.length !== 0 && present.length !== COLUMNS.length) {
    throw new Error(`only some of the columns: ${present.join(', ')}`);
  }
  return present.length === COLUMNS.length;
}

function running(id: string): DispatchRecord {
  return {
    id,
    agent: 'ops',
    skill: 'sitrep',
    correlationId: `c-${id}`,
    status: 'running',
    taskId: null,
    createdAt: 2_000,
    updatedAt: 2_000,
    result: null,
    traceparent: TRACE,
  };
}

describe.each(storeKinds(pgUp))(`${MIGRATION} ($kind)`, ({ kind, skip }) => {
  let place: StorePlace | undefined;

  afterEach(async () => {
    await place?.remove();
    place = undefined;
  });

  it.skipIf(skip)(
    'opens a store the previous release wrote and finds, reads and takes over its call in flight by its side rows',
    async () => {
      place = storePlace(kind, 'fgcallcolumns');
      const before = await place.open(PREVIOUS);
      expect(await hasColumns(before.db as Kysely<unknown>, kind)).toBe(false);
      await writeAsBefore(before.db as Kysely<unknown>, 'd-old', 'gw-gone');
      await before.close();

      const store = await place.open();
      const db = store.db as Kysely<unknown>;
      expect(store.migrated).toEqual([MIGRATION]);
      expect(await hasColumns(db, kind)).toBe(true);
      // Its own row has none of them: it was written before.
      expect(await ownRow(db, 'd-old')).toEqual([null, null, null, null, null]);
      for (const [name, records] of dispatchRecordsOf(store, kind)) {
        const orphan = (await records.orphans(10)).find((o) => o.record.id === 'd-old');
        expect(orphan?.send, name).toEqual({
          owner: 'gw-gone',
          messageId: 'm-d-old',
          contextId: 'x-d-old',
          sentAt: 1_000,
        });
        expect((await records.get('d-old'))?.traceparent, name).toBe(TRACE);
      }
      const records = dispatchRecordsOf(store, kind)[0]![1];
      expect(await records.takeOver('d-old', 'gw-gone', 'gw-new')).toBe(true);
      expect(await heldAsBefore(db, 'd-old')).toMatchObject({ owner: 'gw-new' });
      expect((await ownRow(db, 'd-old'))[0]).toBe('gw-new');
    },
  );

  it.skipIf(skip)(
    'runs beside a replica of the previous release: each finds the other’s calls, and the side row decides a takeover',
    async () => {
      place = storePlace(kind, 'fgcallcolumns');
      const store = await place.open();
      const db = store.db as Kysely<unknown>;
      for (const [name, records] of dispatchRecordsOf(store, kind)) {
        // This release's call, sent at once: the previous release's recovery finds it.
        const ours = `d-new-${name}`;
        const send = { owner: 'gw-new', messageId: `m-${ours}`, contextId: `x-${ours}`, sentAt: 7 };
        await records.create(running(ours), { send });
        expect(await heldAsBefore(db, ours), name).toMatchObject({
          id: ours,
          owner: 'gw-new',
          message_id: `m-${ours}`,
          context_id: `x-${ours}`,
          traceparent: TRACE,
        });
        expect(await ownRow(db, ours), name).toEqual([
          'gw-new',
          `m-${ours}`,
          `x-${ours}`,
          7,
          TRACE,
        ]);
        // The previous release takes it over first (its side row alone): this release's
        // takeover from the dead holder then loses, as it would against a replica of its own.
        expect(await takeOverAsBefore(db, ours, 'gw-new', 'gw-old'), name).toBe(true);
        expect(await records.takeOver(ours, 'gw-new', 'gw-other'), name).toBe(false);
        expect((await records.held(ours))?.send.owner, name).toBe('gw-old');

        // The previous release's call, written during the roll: this release finds and takes it.
        const theirs = `d-old-${name}`;
        await writeAsBefore(db, theirs, 'gw-old');
        const found = (await records.orphans(100)).find((o) => o.record.id === theirs);
        expect(found?.send.owner, name).toBe('gw-old');
        expect(await records.takeOver(theirs, 'gw-old', 'gw-new'), name).toBe(true);
        expect(await heldAsBefore(db, theirs), name).toMatchObject({ owner: 'gw-new' });
      }
    },
  );

  it.skipIf(skip)('undoes the migration: its columns go, every call stays', async () => {
    place = storePlace(kind, 'fgcallcolumns');
    const store = await place.open();
    const db = store.db as Kysely<unknown>;
    const records = createStoreDispatchRecords(store.db);
    await records.create(running('d-a'), {
      send: { owner: 'gw', messageId: 'm-a', contextId: 'x-a', sentAt: 3 },
    });

    await GATEWAY_MIGRATIONS[MIGRATION]!.down!(db, kind);
    expect(await hasColumns(db, kind)).toBe(false);
    // The previous release reads the call as it wrote its own, and writes as it did.
    expect(await heldAsBefore(db, 'd-a')).toMatchObject({ owner: 'gw', message_id: 'm-a' });
    await writeAsBefore(db, 'd-b', 'gw-old');

    // Done again, it brings the columns back; the call written meanwhile has none on its row.
    await GATEWAY_MIGRATIONS[MIGRATION]!.up!(db, kind);
    expect(await hasColumns(db, kind)).toBe(true);
    expect(await ownRow(db, 'd-b')).toEqual([null, null, null, null, null]);
    expect((await records.held('d-b'))?.send.owner).toBe('gw-old');
  });
});
