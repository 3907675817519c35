import type { Kysely } from 'kysely';
import type { DispatchEvent, DispatchResult, DispatchStatus } from '../protocol/index.js';
import type { SqliteAccess } from '../store/index.js';

export type { DispatchResult, DispatchStatus } from '../protocol/index.js';

/** The durable record of one dispatch: what every `skill.dispatch.*` event carries. */
export type DispatchRecord = Omit<DispatchEvent, 'reason' | 'state' | 'decision' | 'approvalId'>;

/** The table of {@link createStoreDispatchRecords} (migration `0005_dispatch`). */
export interface DispatchTable {
  id: string;
  agent: string;
  skill: string;
  correlation_id: string;
  status: string;
  task_id: string | null;
  created_at: number;
  updated_at: number;
  result: string | null;
}

/** The trace context of a dispatch, when it was asked with one (migration `0300_dispatch_trace`). */
export interface DispatchTraceTable {
  dispatch_id: string;
  traceparent: string;
}

/** The dispatch records' tables. */
export interface DispatchDatabase {
  fleetgate_dispatch: DispatchTable;
  fleetgate_dispatch_trace: DispatchTraceTable;
}

/** What {@link DispatchRecordStore.update} did: whether it moved the record, and the record now. */
export interface DispatchUpdate {
  changed: boolean;
  record: DispatchRecord | undefined;
}

/** Durable dispatch records. */
export interface DispatchRecordStore {
  create(record: DispatchRecord): Promise<void>;
  get(id: string): Promise<DispatchRecord | undefined>;
  byTask(agent: string, taskId: string): Promise<DispatchRecord | undefined>;
  /**
   * Moves a dispatch on; a dispatch that already ended is never changed again. With `from`, only a
   * dispatch in that status moves (compare-and-set: a replica that lost a race changes nothing).
   * Resolves whether this call moved it to a new status (`changed`; a change of its task id or
   * result alone is not one), and the record as it stands afterwards: of several paths or
   * replicas moving one dispatch at once, only the one that changed it announces the move.
   */
  update(
    id: string,
    change: {
      status: DispatchStatus;
      taskId?: string;
      result?: DispatchResult;
      at: number;
      from?: DispatchStatus;
    },
  ): Promise<DispatchUpdate>;
  /**
   * Retention: deletes dispatches that ended (completed, failed, rejected, canceled) before
   * `before` (epoch ms), at most `batchSize` rows per statement (default 1,000); resolves how many.
   * Dispatches still running or waiting are never deleted.
   */
  prune(before: number, batchSize?: number): Promise<number>;
}

const ENDED: readonly DispatchStatus[] = ['completed', 'failed', 'rejected', 'canceled'];

function fromRow(row: DispatchRow): DispatchRecord {
  return {
    id: row.id,
    agent: row.agent,
    skill: row.skill,
    correlationId: row.correlation_id,
    status: row.status as DispatchStatus,
    taskId: row.task_id,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    result: row.result === null ? null : (JSON.parse(row.result) as DispatchResult),
    ...(row.traceparent === null ? {} : { traceparent: row.traceparent }),
  };
}

/** Options of {@link createStoreDispatchRecords}. */
export interface StoreDispatchRecordsOptions {
  /**
   * A SQLite store's direct access (`store.sqlite`): the lookups every settled task makes run as
   * prepared statements.
   */
  sqlite?: SqliteAccess | undefined;
}

type DispatchRow = DispatchTable & { traceparent: string | null };

const SELECT_ROWS =
  'select "fleetgate_dispatch".*, "fleetgate_dispatch_trace"."traceparent" from "fleetgate_dispatch" ' +
  'left join "fleetgate_dispatch_trace" on "fleetgate_dispatch_trace"."dispatch_id" = "fleetgate_dispatch"."id" ';
const SELECT_BY_ID = `${SELECT_ROWS}where "fleetgate_dispatch"."id" = ?`;
const SELECT_BY_TASK = `${SELECT_ROWS}where "fleetgate_dispatch"."agent" = ? and "fleetgate_dispatch"."task_id" = ? limit 1`;
const INSERT =
  'insert into "fleetgate_dispatch" ("id", "agent", "skill", "correlation_id", "status", "task_id", ' +
  '"created_at", "updated_at", "result") values (?, ?, ?, ?, ?, ?, ?, ?, ?)';
const INSERT_TRACE =
  'insert into "fleetgate_dispatch_trace" ("dispatch_id", "traceparent") values (?, ?)';
const SELECT_STATUS = 'select "status" from "fleetgate_dispatch" where "id" = ?';
/**
 * A move of a dispatch in a given status. A task id or result left out of a change keeps the
 * stored one (neither is ever cleared).
 */
const UPDATE_FROM =
  'update "fleetgate_dispatch" set "status" = ?, "updated_at" = ?, ' +
  '"task_id" = coalesce(?, "task_id"), "result" = coalesce(?, "result") ' +
  'where "id" = ? and "status" = ?';

/** Dispatch records in the store (SQLite or PostgreSQL). */
export function createStoreDispatchRecords<DB extends DispatchDatabase>(
  database: Kysely<DB>,
  options: StoreDispatchRecordsOptions = {},
): DispatchRecordStore {
  // kysely's types are invariant in DB; the constraint guarantees the table exists.
  const db = database as unknown as Kysely<DispatchDatabase>;
  const direct = options.sqlite;
  const readOne = async (sql: string, params: readonly unknown[]) => {
    const row = await direct!.read((q) => q.get<DispatchRow>(sql, params));
    return row === undefined ? undefined : fromRow(row);
  };
  const rows = () =>
    db
      .selectFrom('fleetgate_dispatch')
      .leftJoin(
        'fleetgate_dispatch_trace',
        'fleetgate_dispatch_trace.dispatch_id',
        'fleetgate_dispatch.id',
      )
      .selectAll('fleetgate_dispatch')
      .select('fleetgate_dispatch_trace.traceparent');
  const get = async (id: string): Promise<DispatchRecord | undefined> => {
    if (direct !== undefined) return readOne(SELECT_BY_ID, [id]);
    const row = await rows().where('fleetgate_dispatch.id', '=', id).executeTakeFirst();
    return row === undefined ? undefined : fromRow(row);
  };
  return {
    async create(record) {
      const result = record.result === null ? null : JSON.stringify(record.result);
      if (direct !== undefined) {
        // The record and its trace context in one unit, committed with the writes of this turn.
        await direct.write((sql) => {
          sql.run(INSERT, [
            record.id,
            record.agent,
            record.skill,
            record.correlationId,
            record.status,
            record.taskId,
            record.createdAt,
            record.updatedAt,
            result,
          ]);
          if (record.traceparent !== undefined) {
            sql.run(INSERT_TRACE, [record.id, record.traceparent]);
          }
        });
        return;
      }
      await db
        .insertInto('fleetgate_dispatch')
        .values({
          id: record.id,
          agent: record.agent,
          skill: record.skill,
          correlation_id: record.correlationId,
          status: record.status,
          task_id: record.taskId,
          created_at: record.createdAt,
          updated_at: record.updatedAt,
          result,
        })
        .execute();
      if (record.traceparent !== undefined) {
        await db
          .insertInto('fleetgate_dispatch_trace')
          .values({ dispatch_id: record.id, traceparent: record.traceparent })
          .execute();
      }
    },
    get,
    async byTask(agent, taskId) {
      if (direct !== undefined) return readOne(SELECT_BY_TASK, [agent, taskId]);
      const row = await rows()
        .where('fleetgate_dispatch.agent', '=', agent)
        .where('fleetgate_dispatch.task_id', '=', taskId)
        .executeTakeFirst();
      return row === undefined ? undefined : fromRow(row);
    },
    async update(id, change) {
      // A move applies to the status read just before it (compare-and-set), so `changed` says
      // whether this call moved the dispatch to a new status, whoever else moves it meanwhile.
      const movable = (status: string | undefined): status is string =>
        status !== undefined &&
        !ENDED.includes(status as DispatchStatus) &&
        (change.from === undefined || status === change.from);
      const result = change.result === undefined ? null : JSON.stringify(change.result);
      if (direct !== undefined) {
        // Read, change and the record as it stands after, in one unit: nothing comes between.
        return direct.write((sql) => {
          const before = sql.get<{ status: string }>(SELECT_STATUS, [id])?.status;
          let changed = false;
          if (movable(before)) {
            sql.run(UPDATE_FROM, [
              change.status,
              change.at,
              change.taskId ?? null,
              result,
              id,
              before,
            ]);
            changed = before !== change.status;
          }
          const row = sql.get<DispatchRow>(SELECT_BY_ID, [id]);
          return { changed, record: row === undefined ? undefined : fromRow(row) };
        });
      }
      for (;;) {
        const before = (
          await db
            .selectFrom('fleetgate_dispatch')
            .select('status')
            .where('id', '=', id)
            .executeTakeFirst()
        )?.status;
        if (!movable(before)) return { changed: false, record: await get(id) };
        const moved = await db
          .updateTable('fleetgate_dispatch')
          .set({
            status: change.status,
            updated_at: change.at,
            ...(change.taskId === undefined ? {} : { task_id: change.taskId }),
            ...(result === null ? {} : { result }),
          })
          .where('id', '=', id)
          .where('status', '=', before)
          .executeTakeFirst();
        if (Number(moved.numUpdatedRows) === 1) {
          return { changed: before !== change.status, record: await get(id) };
        }
        // Another writer moved it between the read and the update: judged again on what it is now.
      }
    },
    async prune(before, batchSize = 1_000) {
      let total = 0;
      for (;;) {
        // In batches: one huge delete would hold its locks (and grow the log) for long.
        const result = await db
          .deleteFrom('fleetgate_dispatch')
          .where('id', 'in', (eb) =>
            eb
              .selectFrom('fleetgate_dispatch')
              .select('id')
              .where('status', 'in', [...ENDED])
              .where('updated_at', '<', before)
              .limit(batchSize),
          )
          .executeTakeFirst();
        const n = Number(result.numDeletedRows);
        total += n;
        if (n < batchSize) return total;
      }
    },
  };
}

/**
 * Moves a dispatch from one status to another inside a caller's transaction (`trx`, a kysely
 * transaction over a store holding {@link DispatchTable}); false when it was not in `from`. The
 * approvals inbox consumes an approval in the same transaction, so the two happen together or not.
 */
export async function moveDispatch(
  trx: unknown,
  id: string,
  from: DispatchStatus,
  to: DispatchStatus,
  at: number,
): Promise<boolean> {
  const result = await (trx as Kysely<DispatchDatabase>)
    .updateTable('fleetgate_dispatch')
    .set({ status: to, updated_at: at })
    .where('id', '=', id)
    .where('status', '=', from)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
