import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { insertOutboxRows, writeOutboxEvent } from '../bus/index.js';
import type { OutboxExecutor } from '../bus/index.js';
import type {
  DispatchEvent,
  DispatchResult,
  DispatchStatus,
  FleetgateTopics,
} from '../protocol/index.js';
import type { SqliteAccess } from '../store/index.js';
import { defined } from '../protocol/fields/index.js';

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

/** Who holds a dispatch and what it sends (migration `0600_dispatch_send`). */
export interface DispatchSendTable {
  dispatch_id: string;
  /** The process (replica) that holds the dispatch: a gateway instance id. */
  owner: string;
  message_id: string;
  context_id: string;
  /** Epoch milliseconds the send began (before the first byte left); null while not sent. */
  sent_at: number | null;
}

/** The dispatch records' tables. */
export interface DispatchDatabase {
  fleetgate_dispatch: DispatchTable;
  fleetgate_dispatch_trace: DispatchTraceTable;
  fleetgate_dispatch_send: DispatchSendTable;
}

/**
 * Who holds a dispatch and what it sends. Written before any byte leaves for the agent, so a
 * process that dies mid-call leaves a dispatch that a restart or another replica can finish:
 * never sent (`sentAt` null: nothing reached the agent), or sent with these ids, to be looked up
 * at the agent by its context.
 */
export interface DispatchSend {
  owner: string;
  /** The A2A `messageId` sent (empty until the send is prepared). */
  messageId: string;
  /** The A2A `contextId` sent (empty until the send is prepared). */
  contextId: string;
  sentAt: number | null;
}

/** A dispatch in flight without a task id, with who holds it: {@link DispatchRecordStore.orphans}. */
export interface HeldDispatch {
  record: DispatchRecord;
  send: DispatchSend;
}

/** The `skill.dispatch.*` topics. */
export type DispatchTopic = Extract<keyof FleetgateTopics, `skill.dispatch.${string}`>;

/** What a dispatch event carries beside the record. */
export type DispatchEventExtra = Pick<
  DispatchEvent,
  'reason' | 'state' | 'decision' | 'approvalId'
>;

/**
 * The event that announces a write of a dispatch record: written into the outbox in the same unit
 * as the record (the relay publishes it), so a bus outage delays it and fails no dispatch, and a
 * crash never leaves a move without its event or an event without its move.
 */
export interface DispatchAnnouncement {
  topic: DispatchTopic;
  /** Carried beside the record (the event's payload is the record as written, plus these). */
  extra?: DispatchEventExtra;
}

/** Filters of {@link DispatchRecordStore.list}. */
export interface DispatchQuery {
  agent?: string;
  skill?: string;
  status?: DispatchStatus;
  correlationId?: string;
  limit: number;
  /** The last dispatch of the previous page: the page starts after it. */
  before?: string;
}

/** What {@link DispatchRecordStore.update} did: whether it moved the record, and the record now. */
export interface DispatchUpdate {
  changed: boolean;
  record: DispatchRecord | undefined;
}

/** Durable dispatch records. */
export interface DispatchRecordStore {
  /**
   * Records a new dispatch, with its announcement (`skill.dispatch.requested`, and for a call the
   * gate let go at once `skill.dispatch.started` after it) and who holds it, in one unit.
   */
  create(
    record: DispatchRecord,
    options?: {
      announce?: readonly DispatchAnnouncement[];
      send?: DispatchSend;
    },
  ): Promise<void>;
  /**
   * Commits what a dispatch is about to send, and who sends it, before the first byte leaves for
   * the agent (with `announce`, e.g. `skill.dispatch.started`, in the same unit).
   */
  sending(
    record: DispatchRecord,
    send: DispatchSend,
    announce?: DispatchAnnouncement,
  ): Promise<void>;
  /**
   * Dispatches in flight (`running`, `awaiting-input`) that know no task id, with who holds them
   * and what they sent: the calls a dead process may have left behind. At most `limit`, oldest
   * first.
   */
  orphans(limit: number): Promise<HeldDispatch[]>;
  /** Takes a dispatch over from `from` (a dead holder); false when another process took it first. */
  takeOver(id: string, from: string, to: string): Promise<boolean>;
  get(id: string): Promise<DispatchRecord | undefined>;
  byTask(agent: string, taskId: string): Promise<DispatchRecord | undefined>;
  /**
   * Dispatches matching every filter given, newest first (`createdAt`, then id), at most `limit`;
   * `before` (a dispatch id of an earlier page) pages on from that dispatch.
   */
  list(query: DispatchQuery): Promise<DispatchRecord[]>;
  /**
   * Moves a dispatch on; a dispatch that already ended is never changed again. With `from`, only a
   * dispatch in that status moves (compare-and-set: a replica that lost a race changes nothing).
   * Resolves whether this call moved it to a new status (`changed`; a change of its task id or
   * result alone is not one), and the record as it stands afterwards: of several paths or
   * replicas moving one dispatch at once, only the one that changed it announces the move:
   * `announce` is written into the outbox in the same unit, and only when `changed`.
   */
  update(
    id: string,
    change: {
      status: DispatchStatus;
      taskId?: string;
      result?: DispatchResult;
      at: number;
      from?: DispatchStatus;
      announce?: DispatchAnnouncement;
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
   * A SQLite store's direct access (`store.sqlite`): a call's records, their events and the
   * lookups every settled task makes run as prepared statements, group-committed. Buys
   * `store-paths`' `dispatch_direct_saves_us_per_call` (~350 µs, ~23% of a proxied call's
   * gateway CPU).
   */
  sqlite?: SqliteAccess | undefined;
  /** Ids of the events written into the outbox (default: random UUIDs). */
  eventId?: () => string;
  /** Called after a unit that wrote an event committed (wake the outbox relay). */
  onCommitted?: () => void;
}

/** The outbox row of an announcement (the payload is the record as written, plus its extras). */
function eventOf(
  record: DispatchRecord,
  announce: DispatchAnnouncement,
  id: string,
): { topic: DispatchTopic; payload: DispatchEvent; id: string; correlationId: string } {
  return {
    topic: announce.topic,
    payload: announce.extra === undefined ? record : { ...record, ...announce.extra },
    id,
    correlationId: record.correlationId,
  };
}

/**
 * Writes an announcement through a kysely executor (inside the caller's transaction); see
 * {@link moveDispatch}.
 */
async function writeAnnouncement(
  executor: unknown,
  record: DispatchRecord,
  announce: DispatchAnnouncement,
  id: string,
  at: number,
): Promise<void> {
  const event = eventOf(record, announce, id);
  // The store's database holds the outbox table beside the dispatch tables.
  await writeOutboxEvent(executor as OutboxExecutor, event.topic, event.payload, {
    id,
    correlationId: event.correlationId,
    now: at,
  });
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

function sendParams(id: string, send: DispatchSend): unknown[] {
  return [id, send.owner, send.messageId, send.contextId, send.sentAt];
}

/** Writes who holds a dispatch and what it sends, inside the caller's transaction. */
async function upsertSend(executor: unknown, id: string, send: DispatchSend): Promise<void> {
  const values = {
    dispatch_id: id,
    owner: send.owner,
    message_id: send.messageId,
    context_id: send.contextId,
    sent_at: send.sentAt,
  };
  await (executor as Kysely<DispatchDatabase>)
    .insertInto('fleetgate_dispatch_send')
    .values(values)
    .onConflict((oc) =>
      oc.column('dispatch_id').doUpdateSet({
        owner: send.owner,
        message_id: send.messageId,
        context_id: send.contextId,
        sent_at: send.sentAt,
      }),
    )
    .execute();
}

/** What the methods of {@link createStoreDispatchRecords} share. */
interface RecordsContext {
  db: Kysely<DispatchDatabase>;
  /** The SQLite store's direct access, when given: reads and writes run as prepared statements. */
  direct: SqliteAccess | undefined;
  /** Ids of the events written into the outbox. */
  eventId: () => string;
  /** Called after a unit that wrote an event committed (wakes the outbox relay). */
  committed: () => void;
}

/** A change of {@link DispatchRecordStore.update}. */
type DispatchChange = Parameters<DispatchRecordStore['update']>[1];

/** One record, read through the SQLite store's direct access. */
async function readOne(
  direct: SqliteAccess,
  sql: string,
  params: readonly unknown[],
): Promise<DispatchRecord | undefined> {
  const row = await direct.read((q) => q.get<DispatchRow>(sql, params));
  return row === undefined ? undefined : fromRow(row);
}

/** A query of the records with their trace context, through `executor` (store or transaction). */
function rowsOf(executor: Kysely<DispatchDatabase>) {
  return executor
    .selectFrom('fleetgate_dispatch')
    .leftJoin(
      'fleetgate_dispatch_trace',
      'fleetgate_dispatch_trace.dispatch_id',
      'fleetgate_dispatch.id',
    )
    .selectAll('fleetgate_dispatch')
    .select('fleetgate_dispatch_trace.traceparent');
}

/** Writes a record and its trace context through `executor` (a transaction or not). */
async function insertRecord(
  executor: Kysely<DispatchDatabase>,
  record: DispatchRecord,
  result: string | null,
): Promise<void> {
  await executor
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
    await executor
      .insertInto('fleetgate_dispatch_trace')
      .values({ dispatch_id: record.id, traceparent: record.traceparent })
      .execute();
  }
}

/** {@link DispatchRecordStore.create}. */
async function createRecord(
  ctx: RecordsContext,
  record: DispatchRecord,
  createOptions: {
    announce?: readonly DispatchAnnouncement[];
    send?: DispatchSend;
  } = {},
): Promise<void> {
  const { direct, db, eventId } = ctx;
  const { send, announce } = createOptions;
  const result = record.result === null ? null : JSON.stringify(record.result);
  if (direct !== undefined) {
    // The record, its trace context and its event in one unit, committed with the writes of
    // this turn.
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
      if (send !== undefined) sql.run(UPSERT_SEND, sendParams(record.id, send));
      if (announce !== undefined) {
        const events = announce.map((a) => eventOf(record, a, eventId()));
        insertOutboxRows(sql, events, record.createdAt);
      }
    });
  } else if (announce === undefined && send === undefined) {
    await insertRecord(db, record, result);
  } else {
    await db.transaction().execute(async (trx) => {
      await insertRecord(trx, record, result);
      if (send !== undefined) await upsertSend(trx, record.id, send);
      for (const a of announce ?? []) {
        await writeAnnouncement(trx, record, a, eventId(), record.createdAt);
      }
    });
  }
  if (announce !== undefined) ctx.committed();
}

/** {@link DispatchRecordStore.sending}. */
async function recordSending(
  ctx: RecordsContext,
  record: DispatchRecord,
  send: DispatchSend,
  announce: DispatchAnnouncement | undefined,
): Promise<void> {
  const { direct, eventId } = ctx;
  const at = send.sentAt ?? record.updatedAt;
  if (direct !== undefined) {
    await direct.write((sql) => {
      sql.run(UPSERT_SEND, sendParams(record.id, send));
      if (announce !== undefined) insertOutboxRows(sql, [eventOf(record, announce, eventId())], at);
    });
  } else {
    await ctx.db.transaction().execute(async (trx) => {
      await upsertSend(trx, record.id, send);
      if (announce !== undefined) await writeAnnouncement(trx, record, announce, eventId(), at);
    });
  }
  if (announce !== undefined) ctx.committed();
}

/** {@link DispatchRecordStore.orphans}. */
async function findOrphans(ctx: RecordsContext, limit: number): Promise<HeldDispatch[]> {
  const found = await rowsOf(ctx.db)
    .innerJoin(
      'fleetgate_dispatch_send',
      'fleetgate_dispatch_send.dispatch_id',
      'fleetgate_dispatch.id',
    )
    .select([
      'fleetgate_dispatch_send.owner',
      'fleetgate_dispatch_send.message_id',
      'fleetgate_dispatch_send.context_id',
      'fleetgate_dispatch_send.sent_at',
    ])
    .where('fleetgate_dispatch.status', 'in', ['running', 'awaiting-input'])
    .where('fleetgate_dispatch.task_id', 'is', null)
    .orderBy('fleetgate_dispatch.created_at')
    .limit(limit)
    .execute();
  return found.map((row) => ({
    record: fromRow(row),
    send: {
      owner: row.owner,
      messageId: row.message_id,
      contextId: row.context_id,
      sentAt: row.sent_at === null ? null : Number(row.sent_at),
    },
  }));
}

/** {@link DispatchRecordStore.takeOver}. */
async function takeOverDispatch(
  ctx: RecordsContext,
  id: string,
  from: string,
  to: string,
): Promise<boolean> {
  const moved = await ctx.db
    .updateTable('fleetgate_dispatch_send')
    .set({ owner: to })
    .where('dispatch_id', '=', id)
    .where('owner', '=', from)
    .executeTakeFirst();
  return Number(moved.numUpdatedRows) === 1;
}

/** {@link DispatchRecordStore.get}. */
async function getRecord(ctx: RecordsContext, id: string): Promise<DispatchRecord | undefined> {
  if (ctx.direct !== undefined) return readOne(ctx.direct, SELECT_BY_ID, [id]);
  const row = await rowsOf(ctx.db).where('fleetgate_dispatch.id', '=', id).executeTakeFirst();
  return row === undefined ? undefined : fromRow(row);
}

/** {@link DispatchRecordStore.list}. */
async function listRecords(ctx: RecordsContext, query: DispatchQuery): Promise<DispatchRecord[]> {
  let q = rowsOf(ctx.db);
  if (query.agent !== undefined) q = q.where('fleetgate_dispatch.agent', '=', query.agent);
  if (query.skill !== undefined) q = q.where('fleetgate_dispatch.skill', '=', query.skill);
  if (query.status !== undefined) q = q.where('fleetgate_dispatch.status', '=', query.status);
  if (query.correlationId !== undefined) {
    q = q.where('fleetgate_dispatch.correlation_id', '=', query.correlationId);
  }
  if (query.before !== undefined) {
    const after = await getRecord(ctx, query.before);
    if (after === undefined) return [];
    q = q.where((eb) =>
      eb.or([
        eb('fleetgate_dispatch.created_at', '<', after.createdAt),
        eb.and([
          eb('fleetgate_dispatch.created_at', '=', after.createdAt),
          eb('fleetgate_dispatch.id', '<', after.id),
        ]),
      ]),
    );
  }
  const found = await q
    .orderBy('fleetgate_dispatch.created_at', 'desc')
    .orderBy('fleetgate_dispatch.id', 'desc')
    .limit(query.limit)
    .execute();
  return found.map(fromRow);
}

/** {@link DispatchRecordStore.byTask}. */
async function recordByTask(
  ctx: RecordsContext,
  agent: string,
  taskId: string,
): Promise<DispatchRecord | undefined> {
  if (ctx.direct !== undefined) return readOne(ctx.direct, SELECT_BY_TASK, [agent, taskId]);
  const row = await rowsOf(ctx.db)
    .where('fleetgate_dispatch.agent', '=', agent)
    .where('fleetgate_dispatch.task_id', '=', taskId)
    .executeTakeFirst();
  return row === undefined ? undefined : fromRow(row);
}

/**
 * Whether a dispatch in `status` (undefined: there is none) may move: one that ended never moves
 * again, and with `from` only one in that status moves.
 */
function movable(status: string | undefined, from: DispatchStatus | undefined): status is string {
  return (
    status !== undefined &&
    !ENDED.includes(status as DispatchStatus) &&
    (from === undefined || status === from)
  );
}

/** {@link DispatchRecordStore.update}. */
async function updateRecord(
  ctx: RecordsContext,
  id: string,
  change: DispatchChange,
): Promise<DispatchUpdate> {
  // A move applies to the status read just before it (compare-and-set), so `changed` says
  // whether this call moved the dispatch to a new status, whoever else moves it meanwhile.
  const result = change.result === undefined ? null : JSON.stringify(change.result);
  if (ctx.direct !== undefined) return updateDirect(ctx, ctx.direct, id, change, result);
  return updateInTransactions(ctx, id, change, result);
}

/**
 * The row of a dispatch after `UPDATE_FROM` (or its kysely twin) applied `change` to `row`: a task
 * id or result left out keeps the stored one.
 */
function movedRow(row: DispatchRow, change: DispatchChange, result: string | null): DispatchRow {
  return {
    ...row,
    status: change.status,
    updated_at: change.at,
    task_id: change.taskId ?? row.task_id,
    result: result ?? row.result,
  };
}

/** {@link updateRecord} through the SQLite store's direct access (`result`: as stored, or null). */
function updateDirect(
  ctx: RecordsContext,
  direct: SqliteAccess,
  id: string,
  change: DispatchChange,
  result: string | null,
): Promise<DispatchUpdate> {
  // Read and change in one unit: nothing comes between, so the record after the change is the
  // row read with the update's own assignments (`UPDATE_FROM`) applied.
  return direct
    .write((sql) => {
      let row = sql.get<DispatchRow>(SELECT_BY_ID, [id]);
      const before = row?.status;
      let changed = false;
      if (row !== undefined && movable(before, change.from)) {
        sql.run(UPDATE_FROM, [change.status, change.at, change.taskId ?? null, result, id, before]);
        changed = before !== change.status;
        row = movedRow(row, change, result);
      }
      const record = row === undefined ? undefined : fromRow(row);
      if (changed && record !== undefined && change.announce !== undefined) {
        insertOutboxRows(sql, [eventOf(record, change.announce, ctx.eventId())], change.at);
      }
      return { changed, record };
    })
    .then((moved) => {
      if (moved.changed && change.announce !== undefined) ctx.committed();
      return moved;
    });
}

/** {@link updateRecord} through kysely transactions (`result`: as stored, or null). */
async function updateInTransactions(
  ctx: RecordsContext,
  id: string,
  change: DispatchChange,
  result: string | null,
): Promise<DispatchUpdate> {
  for (;;) {
    // Read, compare-and-set and the announcement in one transaction: the event exists exactly
    // when the move does.
    const outcome = await ctx.db
      .transaction()
      .execute((trx) => tryMove(ctx, trx, id, change, result));
    // Another writer moved it between the read and the update: judged again on what it is now.
    if (!outcome.moved) continue;
    if (outcome.changed && change.announce !== undefined) ctx.committed();
    return { changed: outcome.changed, record: outcome.record };
  }
}

/**
 * One attempt of {@link updateInTransactions} inside `trx`: `moved` false when another writer
 * moved the dispatch between the read and the update.
 */
async function tryMove(
  ctx: RecordsContext,
  trx: Transaction<DispatchDatabase>,
  id: string,
  change: DispatchChange,
  result: string | null,
): Promise<{ changed: boolean; moved: boolean; record: DispatchRecord | undefined }> {
  // The row read once: the record after the update is this row with the update's assignments.
  const row = await rowsOf(trx).where('fleetgate_dispatch.id', '=', id).executeTakeFirst();
  const before = row?.status;
  if (row === undefined || !movable(before, change.from)) {
    return { changed: false, moved: true, record: row === undefined ? undefined : fromRow(row) };
  }
  const moved = await trx
    .updateTable('fleetgate_dispatch')
    .set({
      status: change.status,
      updated_at: change.at,
      ...defined({ task_id: change.taskId }),
      ...(result === null ? {} : { result }),
    })
    .where('id', '=', id)
    .where('status', '=', before)
    .executeTakeFirst();
  if (Number(moved.numUpdatedRows) !== 1)
    return { changed: false, moved: false, record: undefined };
  const changed = before !== change.status;
  const record = fromRow(movedRow(row, change, result));
  if (changed && change.announce !== undefined) {
    await writeAnnouncement(trx, record, change.announce, ctx.eventId(), change.at);
  }
  return { changed, moved: true, record };
}

/** {@link DispatchRecordStore.prune}. */
async function pruneRecords(
  ctx: RecordsContext,
  before: number,
  batchSize = 1_000,
): Promise<number> {
  let total = 0;
  for (;;) {
    // In batches: one huge delete would hold its locks (and grow the log) for long. Who held
    // an ended dispatch goes with it.
    await ctx.db
      .deleteFrom('fleetgate_dispatch_send')
      .where('dispatch_id', 'in', (eb) =>
        eb
          .selectFrom('fleetgate_dispatch')
          .select('id')
          .where('status', 'in', [...ENDED])
          .where('updated_at', '<', before)
          .limit(batchSize),
      )
      .execute();
    const result = await ctx.db
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
}

/**
 * Dispatch records in the store (SQLite or PostgreSQL). The methods close over one context, never
 * over `this`: the records stay a plain object that callers may spread and override in part.
 */
export function createStoreDispatchRecords<DB extends DispatchDatabase>(
  database: Kysely<DB>,
  options: StoreDispatchRecordsOptions = {},
): DispatchRecordStore {
  const ctx: RecordsContext = {
    // kysely's types are invariant in DB; the constraint guarantees the table exists.
    db: database as unknown as Kysely<DispatchDatabase>,
    direct: options.sqlite,
    eventId: options.eventId ?? (() => randomUUID()),
    committed: options.onCommitted ?? (() => undefined),
  };
  return {
    create: (record, createOptions) => createRecord(ctx, record, createOptions),
    sending: (record, send, announce) => recordSending(ctx, record, send, announce),
    orphans: (limit) => findOrphans(ctx, limit),
    takeOver: (id, from, to) => takeOverDispatch(ctx, id, from, to),
    get: (id) => getRecord(ctx, id),
    list: (query) => listRecords(ctx, query),
    byTask: (agent, taskId) => recordByTask(ctx, agent, taskId),
    update: (id, change) => updateRecord(ctx, id, change),
    prune: (before, batchSize) => pruneRecords(ctx, before, batchSize),
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
  options: {
    /** The move's event: the record as moved, and the event's id. */
    announce?: { record: DispatchRecord; event: DispatchAnnouncement; id: string };
    /** The process that takes the dispatch over with this move (it sends the call next). */
    owner?: string;
  } = {},
): Promise<boolean> {
  const { announce } = options;
  const result = await (trx as Kysely<DispatchDatabase>)
    .updateTable('fleetgate_dispatch')
    .set({ status: to, updated_at: at })
    .where('id', '=', id)
    .where('status', '=', from)
    .executeTakeFirst();
  const moved = result.numUpdatedRows === 1n;
  // The move's event commits with it (and with the approval consumed in the same transaction).
  if (moved && announce !== undefined) {
    await writeAnnouncement(trx, announce.record, announce.event, announce.id, at);
  }
  if (moved && options.owner !== undefined) {
    await upsertSend(trx, id, { owner: options.owner, messageId: '', contextId: '', sentAt: null });
  }
  return moved;
}
