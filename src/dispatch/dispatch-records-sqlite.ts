/**
 * The dispatch records on a SQLite store's direct access: every query a prepared statement, every
 * write one group-committed unit with its outbox rows (`store/sqlite-access.ts`). The store's
 * SQLite implementation; `dispatch-records-kysely.ts` is its PostgreSQL one, and
 * `test/dispatch-records.test.ts` holds both to one contract.
 */
import { insertOutboxRows } from '../bus/index.js';
import type { SqliteAccess } from '../store/index.js';
import {
  announced,
  callColumns,
  DISPATCH_READ_COLUMNS,
  ENDED,
  eventOf,
  fromRow,
  heldFromRow,
  movable,
  movedRow,
  type DispatchChange,
  type DispatchQuery,
  type DispatchRecord,
  type DispatchRecordStore,
  type DispatchRow,
  type DispatchSend,
  type DispatchSendTable,
  type DispatchUpdate,
  type RecordEvents,
} from './dispatch-record-types.js';

/** The dispatch row's columns the records read. */
const READ_COLUMNS = DISPATCH_READ_COLUMNS.map((c) => `"fleetgate_dispatch"."${c}"`).join(', ');
const SELECT_ROWS =
  `select ${READ_COLUMNS}, "fleetgate_dispatch_trace"."traceparent" from "fleetgate_dispatch" ` +
  'left join "fleetgate_dispatch_trace" on "fleetgate_dispatch_trace"."dispatch_id" = "fleetgate_dispatch"."id" ';
const SELECT_BY_ID = `${SELECT_ROWS}where "fleetgate_dispatch"."id" = ?`;
const SELECT_BY_TASK = `${SELECT_ROWS}where "fleetgate_dispatch"."agent" = ? and "fleetgate_dispatch"."task_id" = ? limit 1`;
const SELECT_HELD =
  `select ${READ_COLUMNS}, "fleetgate_dispatch_trace"."traceparent", ` +
  '"fleetgate_dispatch_send"."owner", "fleetgate_dispatch_send"."message_id", ' +
  '"fleetgate_dispatch_send"."context_id", "fleetgate_dispatch_send"."sent_at" ' +
  'from "fleetgate_dispatch" ' +
  'left join "fleetgate_dispatch_trace" on "fleetgate_dispatch_trace"."dispatch_id" = "fleetgate_dispatch"."id" ' +
  'inner join "fleetgate_dispatch_send" on "fleetgate_dispatch_send"."dispatch_id" = "fleetgate_dispatch"."id" ' +
  `where "fleetgate_dispatch"."status" in ('running', 'awaiting-input') `;
const SELECT_HELD_BY_ID = `${SELECT_HELD}and "fleetgate_dispatch"."id" = ?`;
const SELECT_ORPHANS = `${SELECT_HELD}and "fleetgate_dispatch"."task_id" is null order by "fleetgate_dispatch"."created_at" limit ?`;
/** {@link DispatchRecordStore.adrift}'s query for `living` holders. */
function selectAdrift(living: number): string {
  return (
    `${SELECT_HELD}and "fleetgate_dispatch"."task_id" is not null ` +
    `and "fleetgate_dispatch_send"."owner" not in (${Array.from({ length: living }, () => '?').join(', ')}) ` +
    'order by "fleetgate_dispatch"."created_at" limit ?'
  );
}
const INSERT =
  'insert into "fleetgate_dispatch" ("id", "agent", "skill", "correlation_id", "status", "task_id", ' +
  '"created_at", "updated_at", "result", "requested_by", "door", ' +
  '"owner", "message_id", "context_id", "sent_at", "traceparent") ' +
  'values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
const INSERT_TRACE =
  'insert into "fleetgate_dispatch_trace" ("dispatch_id", "traceparent") values (?, ?)';
/**
 * A move of a dispatch in a given status. A task id or result left out of a change keeps the
 * stored one (neither is ever cleared).
 */
const UPDATE_FROM =
  'update "fleetgate_dispatch" set "status" = ?, "updated_at" = ?, ' +
  '"task_id" = coalesce(?, "task_id"), "result" = coalesce(?, "result") ' +
  'where "id" = ? and "status" = ?';
const UPSERT_SEND =
  'insert into "fleetgate_dispatch_send" ("dispatch_id", "owner", "message_id", "context_id", "sent_at") ' +
  'values (?, ?, ?, ?, ?) on conflict ("dispatch_id") do update set "owner" = excluded."owner", ' +
  '"message_id" = excluded."message_id", "context_id" = excluded."context_id", "sent_at" = excluded."sent_at"';
const TAKE_OVER =
  'update "fleetgate_dispatch_send" set "owner" = ? where "dispatch_id" = ? and "owner" = ?';
/** The send and holder on the dispatch's own row, written with {@link UPSERT_SEND}. */
const SEND_COLUMNS =
  'update "fleetgate_dispatch" set "owner" = ?, "message_id" = ?, "context_id" = ?, "sent_at" = ? ' +
  'where "id" = ?';
/** The holder on the dispatch's own row, written with a won {@link TAKE_OVER}. */
const OWNER_COLUMN = 'update "fleetgate_dispatch" set "owner" = ? where "id" = ?';
// Retention in batches: one huge delete would hold the connection (and grow the log) for long.
// Who held an ended dispatch goes with it.
const ENDED_BATCH =
  `select "id" from "fleetgate_dispatch" where "status" in (${ENDED.map(() => '?').join(', ')}) ` +
  // In id order, so the holders' batch and the dispatches' batch are the same rows.
  'and "updated_at" < ? order by "id" limit ?';
const PRUNE_SEND = `delete from "fleetgate_dispatch_send" where "dispatch_id" in (${ENDED_BATCH})`;
const PRUNE = `delete from "fleetgate_dispatch" where "id" in (${ENDED_BATCH})`;

function sendParams(id: string, send: DispatchSend): unknown[] {
  return [id, send.owner, send.messageId, send.contextId, send.sentAt];
}

/** The filters of a {@link DispatchQuery} as SQL conditions and their parameters. */
function listFilters(query: DispatchQuery, after: DispatchRecord | undefined): [string, unknown[]] {
  const where: string[] = [];
  const params: unknown[] = [];
  const columns = [
    ['agent', query.agent],
    ['skill', query.skill],
    ['status', query.status],
    ['correlation_id', query.correlationId],
  ] as const;
  for (const [column, value] of columns) {
    if (value === undefined) continue;
    where.push(`"fleetgate_dispatch"."${column}" = ?`);
    params.push(value);
  }
  if (query.idEndsWith !== undefined) {
    // Its tail compared (as on PostgreSQL): no pattern, so no character of it is special.
    where.push(
      'lower(substr("fleetgate_dispatch"."id", length("fleetgate_dispatch"."id") - ?)) = ?',
    );
    params.push(query.idEndsWith.length - 1, query.idEndsWith.toLowerCase());
  }
  if (after !== undefined) {
    // Keyset paging, newest first: the page starts after the dispatch named.
    where.push(
      '("fleetgate_dispatch"."created_at" < ? or ' +
        '("fleetgate_dispatch"."created_at" = ? and "fleetgate_dispatch"."id" < ?))',
    );
    params.push(after.createdAt, after.createdAt, after.id);
  }
  return [where.length === 0 ? '' : `where ${where.join(' and ')} `, params];
}

/** Dispatch records on `direct`; see the file comment. */
export function sqliteDispatchRecords(
  direct: SqliteAccess,
  events: RecordEvents,
): DispatchRecordStore {
  const readOne = async (
    sql: string,
    params: readonly unknown[],
  ): Promise<DispatchRecord | undefined> => {
    const row = await direct.read((q) => q.get<DispatchRow>(sql, params));
    return row === undefined ? undefined : fromRow(row);
  };
  return {
    async create(record, { announce, send } = {}) {
      const result = record.result === null ? null : JSON.stringify(record.result);
      // The record, its trace context, who holds it and its events in one unit, committed with
      // the writes of this turn.
      const call = callColumns(record, send);
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
          record.requestedBy ?? null,
          record.door ?? null,
          call.owner,
          call.message_id,
          call.context_id,
          call.sent_at,
          call.traceparent,
        ]);
        if (record.traceparent !== undefined) {
          sql.run(INSERT_TRACE, [record.id, record.traceparent]);
        }
        if (send !== undefined) sql.run(UPSERT_SEND, sendParams(record.id, send));
        if (announce !== undefined) {
          const rows = announce.map((a) => eventOf(record, a, events.eventId()));
          insertOutboxRows(sql, rows, record.createdAt);
        }
      });
      if (announce !== undefined) events.committed();
    },
    async sending(record, send, announce) {
      const at = send.sentAt ?? record.updatedAt;
      await direct.write((sql) => {
        sql.run(UPSERT_SEND, sendParams(record.id, send));
        sql.run(SEND_COLUMNS, [send.owner, send.messageId, send.contextId, send.sentAt, record.id]);
        if (announce !== undefined) {
          insertOutboxRows(sql, [eventOf(record, announce, events.eventId())], at);
        }
      });
      if (announce !== undefined) events.committed();
    },
    async orphans(limit) {
      const rows = await direct.read((sql) =>
        sql.all<DispatchRow & Omit<DispatchSendTable, 'dispatch_id'>>(SELECT_ORPHANS, [limit]),
      );
      return rows.map(heldFromRow);
    },
    async held(id) {
      const row = await direct.read((sql) =>
        sql.get<DispatchRow & Omit<DispatchSendTable, 'dispatch_id'>>(SELECT_HELD_BY_ID, [id]),
      );
      return row === undefined ? undefined : heldFromRow(row);
    },
    async adrift(limit, living) {
      const rows = await direct.read((sql) =>
        sql.all<DispatchRow & Omit<DispatchSendTable, 'dispatch_id'>>(selectAdrift(living.length), [
          ...living,
          limit,
        ]),
      );
      return rows.map(heldFromRow);
    },
    takeOver(id, from, to) {
      return direct.write((sql) => {
        // The side row decides (a replica of the previous release takes calls over by it alone).
        if (sql.run(TAKE_OVER, [to, id, from]).changes !== 1) return false;
        sql.run(OWNER_COLUMN, [to, id]);
        return true;
      });
    },
    get: (id) => readOne(SELECT_BY_ID, [id]),
    byTask: (agent, taskId) => readOne(SELECT_BY_TASK, [agent, taskId]),
    async list(query) {
      const after =
        query.before === undefined ? undefined : await readOne(SELECT_BY_ID, [query.before]);
      if (query.before !== undefined && after === undefined) return [];
      const [where, params] = listFilters(query, after);
      const text =
        `${SELECT_ROWS}${where}` +
        'order by "fleetgate_dispatch"."created_at" desc, "fleetgate_dispatch"."id" desc limit ?';
      const rows = await direct.read((sql) => sql.all<DispatchRow>(text, [...params, query.limit]));
      return rows.map(fromRow);
    },
    update: (id, change) => update(direct, events, id, change),
    async prune(before, batchSize = 1_000) {
      const batch = [...ENDED, before, batchSize];
      let total = 0;
      for (;;) {
        const n = await direct.write((sql) => {
          sql.run(PRUNE_SEND, batch);
          return sql.run(PRUNE, batch).changes;
        });
        total += n;
        if (n < batchSize) return total;
      }
    },
  };
}

/** {@link DispatchRecordStore.update}: the read, the move and its event in one unit. */
async function update(
  direct: SqliteAccess,
  events: RecordEvents,
  id: string,
  change: DispatchChange,
): Promise<DispatchUpdate> {
  const result = change.result === undefined ? null : JSON.stringify(change.result);
  // Nothing comes between the read and the change, so `changed` says whether this call moved the
  // dispatch to a new status, and the record after it is the row read with the update's own
  // assignments (`UPDATE_FROM`) applied.
  const moved = await direct.write((sql) => {
    let row = sql.get<DispatchRow>(SELECT_BY_ID, [id]);
    const before = row?.status;
    let changed = false;
    let announce = false;
    if (row !== undefined && movable(before, change.from)) {
      sql.run(UPDATE_FROM, [change.status, change.at, change.taskId ?? null, result, id, before]);
      changed = before !== change.status;
      announce = announced(before, change);
      row = movedRow(row, change, result);
    }
    const record = row === undefined ? undefined : fromRow(row);
    if (announce && record !== undefined) {
      insertOutboxRows(sql, [eventOf(record, change.announce!, events.eventId())], change.at);
    }
    return { changed, record, announce };
  });
  if (moved.announce) events.committed();
  return { changed: moved.changed, record: moved.record };
}
