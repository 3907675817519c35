/**
 * The task records on a SQLite store's direct access: every query a prepared statement, every
 * write group-committed with the rest of the turn of the loop (`store/sqlite-access.ts`). The
 * store's SQLite implementation; `task-records-kysely.ts` is its PostgreSQL one, and
 * `test/task-records.test.ts` holds both to one contract.
 */
import type { OutboxEventInput } from '../bus/index.js';
import { insertOutboxRows } from '../bus/index.js';
import type { SqliteAccess } from '../store/index.js';
import {
  fromTaskRow,
  type TaskClaim,
  type TaskRecordStore,
  type TaskTable,
} from './task-record-types.js';

const INSERT =
  'insert into "fleetgate_task" ("agent", "task_id", "skill", "correlation_id", "state", ' +
  '"push_token_hash", "created_at", "updated_at", "terminal_at", "terminal_via") ' +
  'values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict ("agent", "task_id") do nothing';
const CLAIM_UPDATE =
  'update "fleetgate_task" set "state" = ?, "updated_at" = ?, "terminal_at" = ?, "terminal_via" = ? ' +
  'where "agent" = ? and "task_id" = ? and "terminal_at" is null';
const NOTE_STATE =
  'update "fleetgate_task" set "state" = ?, "updated_at" = ? ' +
  'where "agent" = ? and "task_id" = ? and "terminal_at" is null';
const SELECT_ONE = 'select * from "fleetgate_task" where "agent" = ? and "task_id" = ? limit 1';
const SELECT_BY_TASK_ID = 'select * from "fleetgate_task" where "task_id" = ?';
// Keyset paging on (created_at, agent, task_id): stable while records come and go.
const IN_FLIGHT_ORDER = 'order by "created_at", "agent", "task_id" limit ?';
const IN_FLIGHT_FIRST = `select * from "fleetgate_task" where "terminal_at" is null ${IN_FLIGHT_ORDER}`;
const IN_FLIGHT_AFTER =
  'select * from "fleetgate_task" where "terminal_at" is null ' +
  `and ("created_at", "agent", "task_id") > (?, ?, ?) ${IN_FLIGHT_ORDER}`;
const PRUNE =
  'delete from "fleetgate_task" where "rowid" in (select "rowid" from "fleetgate_task" ' +
  'where "terminal_at" is not null and "terminal_at" < ? limit ?)';

/** The claim: the record written terminal (or claimed by compare-and-set) with its outbox rows. */
function claimIn(
  direct: SqliteAccess,
  agent: string,
  taskId: string,
  claim: TaskClaim,
  events: readonly OutboxEventInput[],
): Promise<boolean> {
  // The claims of one turn of the loop share a transaction (each in a savepoint) and its
  // commit; the promise resolves after that commit.
  return direct.write(
    (sql) => {
      const { state, at, via, call } = claim;
      // With the call, the record is written terminal unless one exists (a reply's task is
      // usually new: one statement); an existing record is claimed by compare-and-set. The
      // same outcome as the other order, one statement less for a reply.
      const won =
        (call !== undefined &&
          sql.run(INSERT, [
            agent,
            taskId,
            call.skill,
            call.correlationId,
            state,
            null,
            call.startedAt,
            at,
            at,
            via,
          ]).changes === 1) ||
        sql.run(CLAIM_UPDATE, [state, at, at, via, agent, taskId]).changes === 1;
      if (won && events.length > 0) insertOutboxRows(sql, events, Date.now());
      return won;
    },
    { group: claim.group ?? 'loop' },
  );
}

/** Task records on `direct`; see the file comment. */
export function sqliteTaskRecords(direct: SqliteAccess): TaskRecordStore {
  return {
    async create(record) {
      await direct.write((sql) =>
        sql.run(INSERT, [
          record.agent,
          record.taskId,
          record.skill,
          record.correlationId,
          record.state,
          record.pushTokenHash,
          record.createdAt,
          record.updatedAt,
          null,
          null,
        ]),
      );
    },
    async get(agent, taskId) {
      const row = await direct.read((sql) => sql.get<TaskTable>(SELECT_ONE, [agent, taskId]));
      return row === undefined ? undefined : fromTaskRow(row);
    },
    async byTaskId(taskId) {
      const rows = await direct.read((sql) => sql.all<TaskTable>(SELECT_BY_TASK_ID, [taskId]));
      return rows.map(fromTaskRow);
    },
    async inFlight(page = {}) {
      const { after, limit = 1_000 } = page;
      const rows = await direct.read((sql) =>
        after === undefined
          ? sql.all<TaskTable>(IN_FLIGHT_FIRST, [limit])
          : sql.all<TaskTable>(IN_FLIGHT_AFTER, [
              after.createdAt,
              after.agent,
              after.taskId,
              limit,
            ]),
      );
      return rows.map(fromTaskRow);
    },
    async prune(before, batchSize = 1_000) {
      let total = 0;
      for (;;) {
        // One batch a unit: a long prune never holds the connection for all of it.
        const n = await direct.write((sql) => sql.run(PRUNE, [before, batchSize]).changes);
        total += n;
        if (n < batchSize) return total;
      }
    },
    async noteState(agent, taskId, state, at) {
      await direct.write((sql) => sql.run(NOTE_STATE, [state, at, agent, taskId]));
    },
    claim(agent, taskId, claim, events = []) {
      return claimIn(direct, agent, taskId, claim, events);
    },
  };
}
