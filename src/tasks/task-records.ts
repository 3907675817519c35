import type { Kysely } from 'kysely';
import type { OutboxDatabase, OutboxEventInput } from '../bus/index.js';
import { createOutboxWriter, insertOutboxRows } from '../bus/index.js';
import type { SettlePath, TerminalRecords } from '../dispatch/index.js';
import type { OpenTopics, TaskStateName } from '../protocol/index.js';
import { normalizeTaskState } from '../protocol/index.js';
import type { SqliteAccess } from '../store/index.js';
import { defined } from '../protocol/fields/index.js';

/** The durable record of one task the gateway follows. */
export interface TaskRecord {
  agent: string;
  taskId: string;
  skill: string;
  correlationId: string;
  /** The last state seen. */
  state: TaskStateName;
  /** sha256 (hex) of the task's push-notification secret; never the secret itself. */
  pushTokenHash: string | null;
  createdAt: number;
  updatedAt: number;
  /** When the task was claimed terminal; null while in flight. */
  terminalAt: number | null;
  terminalVia: SettlePath | null;
}

/** The table of {@link createStoreTaskRecords} (migration `0004_tasks`). */
export interface TaskTable {
  agent: string;
  task_id: string;
  skill: string;
  correlation_id: string;
  state: string;
  push_token_hash: string | null;
  created_at: number;
  updated_at: number;
  terminal_at: number | null;
  terminal_via: string | null;
}

/** The task records' table. */
export interface TasksDatabase {
  fleetgate_task: TaskTable;
}

/** What the claim's transaction can write: the task records and the outbox. */
export type ClaimDatabase = TasksDatabase & OutboxDatabase;

/** Durable task records with the terminal claim. */
export interface TaskRecordStore extends TerminalRecords {
  /** Records a task to follow; a record that exists already is kept as it is. */
  create(record: Omit<TaskRecord, 'terminalAt' | 'terminalVia'>): Promise<void>;
  get(agent: string, taskId: string): Promise<TaskRecord | undefined>;
  /** Every record with this task id (task ids are the agents', so two agents may share one). */
  byTaskId(taskId: string): Promise<TaskRecord[]>;
  /**
   * Records not yet terminal, oldest first, one page at a time (restart recovery pages through
   * all of them): `limit` records (default 1,000) after the record `after` (the last of the
   * previous page).
   */
  inFlight(page?: {
    after?: Pick<TaskRecord, 'createdAt' | 'agent' | 'taskId'>;
    limit?: number;
  }): Promise<TaskRecord[]>;
  /**
   * Retention: deletes records claimed terminal before `before` (epoch ms), at most `batchSize`
   * per statement (default 1,000); resolves how many. Records in flight are never deleted. Keep
   * terminal records longer than any path can still see the task (the tracking time, a late
   * push): the record is what makes a late sighting a no-op.
   */
  prune(before: number, batchSize?: number): Promise<number>;
  /** Notes a non-terminal state seen; no effect on a terminal record. */
  noteState(agent: string, taskId: string, state: TaskStateName, at: number): Promise<void>;
}

/** Options of {@link createStoreTaskRecords}. */
export interface StoreTaskRecordsOptions {
  /**
   * A SQLite store's direct access (`store.sqlite`): claims run as prepared statements, and the
   * claims of one turn of the event loop share one transaction and one commit; the lookups every
   * push and every terminal poll make (`get`, `byTaskId`) are prepared statements too. Buys
   * `store-paths`' `tasks_direct_saves_us_per_call` (~130 µs, ~9% of a proxied call's gateway CPU).
   */
  sqlite?: SqliteAccess | undefined;
}

const outbox = createOutboxWriter<OpenTopics>();

const CLAIM_UPDATE =
  'update "fleetgate_task" set "state" = ?, "updated_at" = ?, "terminal_at" = ?, "terminal_via" = ? ' +
  'where "agent" = ? and "task_id" = ? and "terminal_at" is null';
const CLAIM_INSERT =
  'insert into "fleetgate_task" ("agent", "task_id", "skill", "correlation_id", "state", ' +
  '"push_token_hash", "created_at", "updated_at", "terminal_at", "terminal_via") ' +
  'values (?, ?, ?, ?, ?, null, ?, ?, ?, ?) on conflict ("agent", "task_id") do nothing';

const SELECT_ONE = 'select * from "fleetgate_task" where "agent" = ? and "task_id" = ? limit 1';
const SELECT_BY_TASK_ID = 'select * from "fleetgate_task" where "task_id" = ?';

function fromRow(row: TaskTable): TaskRecord {
  return {
    agent: row.agent,
    taskId: row.task_id,
    skill: row.skill,
    correlationId: row.correlation_id,
    state: normalizeTaskState(row.state),
    pushTokenHash: row.push_token_hash,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    terminalAt: row.terminal_at === null ? null : Number(row.terminal_at),
    terminalVia: row.terminal_via as SettlePath | null,
  };
}

/** The claim {@link TaskRecordStore.claim} takes: how the task ended, and the call when known. */
type TaskClaim = Parameters<TaskRecordStore['claim']>[2];

/** The claim as prepared statements, grouped with the other writes of the turn of the loop. */
function claimByStatements(
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
          sql.run(CLAIM_INSERT, [
            agent,
            taskId,
            call.skill,
            call.correlationId,
            state,
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

/** The claim as a kysely transaction: compare-and-set, else insert, then the outbox rows. */
function claimInTransaction(
  db: Kysely<ClaimDatabase>,
  agent: string,
  taskId: string,
  claim: TaskClaim,
  events: readonly OutboxEventInput[],
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('fleetgate_task')
      .set({
        state: claim.state,
        updated_at: claim.at,
        terminal_at: claim.at,
        terminal_via: claim.via,
      })
      .where('agent', '=', agent)
      .where('task_id', '=', taskId)
      .where('terminal_at', 'is', null)
      .executeTakeFirst();
    let won = Number(updated.numUpdatedRows) === 1;
    if (!won && claim.call !== undefined) {
      // Never tracked (the reply was terminal): record it terminal now, unless a record exists.
      const inserted = await trx
        .insertInto('fleetgate_task')
        .values({
          agent,
          task_id: taskId,
          skill: claim.call.skill,
          correlation_id: claim.call.correlationId,
          state: claim.state,
          push_token_hash: null,
          created_at: claim.call.startedAt,
          updated_at: claim.at,
          terminal_at: claim.at,
          terminal_via: claim.via,
        })
        .onConflict((oc) => oc.columns(['agent', 'task_id']).doNothing())
        .executeTakeFirst();
      won = Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1;
    }
    if (!won) return false;
    for (const event of events) {
      await outbox.write(trx, event.topic, event.payload, {
        id: event.id,
        ...defined({ correlationId: event.correlationId }),
      });
    }
    return true;
  });
}

/** Deletes terminal records claimed before `before`, `batchSize` per statement (retention). */
async function pruneTerminal(
  db: Kysely<ClaimDatabase>,
  before: number,
  batchSize: number,
): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await db
      .deleteFrom('fleetgate_task')
      .where((eb) =>
        eb(
          eb.refTuple('agent', 'task_id'),
          'in',
          eb
            .selectFrom('fleetgate_task')
            .select(['agent', 'task_id'])
            .where('terminal_at', 'is not', null)
            .where('terminal_at', '<', before)
            .limit(batchSize)
            .$asTuple('agent', 'task_id'),
        ),
      )
      .executeTakeFirst();
    const n = Number(result.numDeletedRows);
    total += n;
    if (n < batchSize) return total;
  }
}

/** Task records in the store (SQLite or PostgreSQL). */
export function createStoreTaskRecords<DB extends ClaimDatabase>(
  database: Kysely<DB>,
  options: StoreTaskRecordsOptions = {},
): TaskRecordStore {
  // kysely's types are invariant in DB; the constraint guarantees the table exists.
  const db = database as unknown as Kysely<ClaimDatabase>;
  const direct = options.sqlite;
  // A plain object, not a class: callers wrap the records with a spread, which copies own
  // properties only.
  return {
    async create(record) {
      await db
        .insertInto('fleetgate_task')
        .values({
          agent: record.agent,
          task_id: record.taskId,
          skill: record.skill,
          correlation_id: record.correlationId,
          state: record.state,
          push_token_hash: record.pushTokenHash,
          created_at: record.createdAt,
          updated_at: record.updatedAt,
          terminal_at: null,
          terminal_via: null,
        })
        .onConflict((oc) => oc.columns(['agent', 'task_id']).doNothing())
        .execute();
    },
    async get(agent, taskId) {
      if (direct !== undefined) {
        const found = await direct.read((sql) => sql.get<TaskTable>(SELECT_ONE, [agent, taskId]));
        return found === undefined ? undefined : fromRow(found);
      }
      const row = await db
        .selectFrom('fleetgate_task')
        .selectAll()
        .where('agent', '=', agent)
        .where('task_id', '=', taskId)
        .executeTakeFirst();
      return row === undefined ? undefined : fromRow(row);
    },
    async byTaskId(taskId) {
      if (direct !== undefined) {
        // A push's lookup, before anything else: no query to build and compile for each one.
        const found = await direct.read((sql) => sql.all<TaskTable>(SELECT_BY_TASK_ID, [taskId]));
        return found.map(fromRow);
      }
      const rows = await db
        .selectFrom('fleetgate_task')
        .selectAll()
        .where('task_id', '=', taskId)
        .execute();
      return rows.map(fromRow);
    },
    async inFlight(page = {}) {
      const after = page.after;
      let query = db.selectFrom('fleetgate_task').selectAll().where('terminal_at', 'is', null);
      if (after !== undefined) {
        // Keyset paging on (created_at, agent, task_id): stable while records come and go.
        query = query.where((eb) =>
          eb.or([
            eb('created_at', '>', after.createdAt),
            eb.and([
              eb('created_at', '=', after.createdAt),
              eb.or([
                eb('agent', '>', after.agent),
                eb.and([eb('agent', '=', after.agent), eb('task_id', '>', after.taskId)]),
              ]),
            ]),
          ]),
        );
      }
      const rows = await query
        .orderBy('created_at')
        .orderBy('agent')
        .orderBy('task_id')
        .limit(page.limit ?? 1_000)
        .execute();
      return rows.map(fromRow);
    },
    prune(before, batchSize = 1_000) {
      return pruneTerminal(db, before, batchSize);
    },
    async noteState(agent, taskId, state, at) {
      await db
        .updateTable('fleetgate_task')
        .set({ state, updated_at: at })
        .where('agent', '=', agent)
        .where('task_id', '=', taskId)
        .where('terminal_at', 'is', null)
        .execute();
    },
    claim(agent, taskId, claim, events = []) {
      return direct !== undefined
        ? claimByStatements(direct, agent, taskId, claim, events)
        : claimInTransaction(db, agent, taskId, claim, events);
    },
  };
}
