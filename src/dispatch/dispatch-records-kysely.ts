/**
 * The dispatch records through kysely: the store's PostgreSQL implementation (it runs on SQLite
 * too, for a caller that holds no direct access), and the move the approvals inbox makes inside its
 * own transaction ({@link moveDispatch}). `dispatch-records-sqlite.ts` is the SQLite one, and
 * `test/dispatch-records.test.ts` holds both to one contract.
 */
import type { Kysely, Transaction } from 'kysely';
import { writeOutboxEvent } from '../bus/index.js';
import type { OutboxExecutor } from '../bus/index.js';
import type { DispatchStatus } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
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
  type DispatchAnnouncement,
  type DispatchChange,
  type DispatchDatabase,
  type DispatchQuery,
  type DispatchRecord,
  type DispatchRecordStore,
  type DispatchSend,
  type DispatchUpdate,
  type HeldDispatch,
  type RecordEvents,
} from './dispatch-record-types.js';

/** What the methods share: the database, the events' ids and the relay's wake-up. */
interface RecordsContext extends RecordEvents {
  db: Kysely<DispatchDatabase>;
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

/**
 * Writes who holds a dispatch and what it sends, inside the caller's transaction: its side row,
 * and (`mirror`) the same on the dispatch's own row, where a new row has it from its insert.
 */
async function upsertSend(
  executor: unknown,
  id: string,
  send: DispatchSend,
  mirror = true,
): Promise<void> {
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
  if (!mirror) return;
  await (executor as Kysely<DispatchDatabase>)
    .updateTable('fleetgate_dispatch')
    .set({
      owner: send.owner,
      message_id: send.messageId,
      context_id: send.contextId,
      sent_at: send.sentAt,
    })
    .where('id', '=', id)
    .execute();
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
    .select(DISPATCH_READ_COLUMNS.map((c) => `fleetgate_dispatch.${c}` as const))
    .select('fleetgate_dispatch_trace.traceparent');
}

/**
 * Writes a record, its trace context and who holds it (`send`, on the record's own row: its side
 * row is the caller's) through `executor` (a transaction or not).
 */
async function insertRecord(
  executor: Kysely<DispatchDatabase>,
  record: DispatchRecord,
  result: string | null,
  send: DispatchSend | undefined,
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
      requested_by: record.requestedBy ?? null,
      door: record.door ?? null,
      ...callColumns(record, send),
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
  const { db, eventId } = ctx;
  const { send, announce } = createOptions;
  const result = record.result === null ? null : JSON.stringify(record.result);
  if (announce === undefined && send === undefined) {
    await insertRecord(db, record, result, undefined);
  } else {
    await db.transaction().execute(async (trx) => {
      await insertRecord(trx, record, result, send);
      if (send !== undefined) await upsertSend(trx, record.id, send, false);
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
  const at = send.sentAt ?? record.updatedAt;
  await ctx.db.transaction().execute(async (trx) => {
    await upsertSend(trx, record.id, send);
    if (announce !== undefined) await writeAnnouncement(trx, record, announce, ctx.eventId(), at);
  });
  if (announce !== undefined) ctx.committed();
}

/** {@link DispatchRecordStore.orphans}. */
async function findOrphans(ctx: RecordsContext, limit: number): Promise<HeldDispatch[]> {
  const found = await heldRows(ctx)
    .where('fleetgate_dispatch.task_id', 'is', null)
    .orderBy('fleetgate_dispatch.created_at')
    .limit(limit)
    .execute();
  return found.map(heldFromRow);
}

/** {@link DispatchRecordStore.adrift}. */
async function findAdrift(
  ctx: RecordsContext,
  limit: number,
  living: readonly string[],
): Promise<HeldDispatch[]> {
  let query = heldRows(ctx).where('fleetgate_dispatch.task_id', 'is not', null);
  if (living.length > 0) query = query.where('fleetgate_dispatch_send.owner', 'not in', living);
  const found = await query.orderBy('fleetgate_dispatch.created_at').limit(limit).execute();
  return found.map(heldFromRow);
}

/** Dispatches in flight with who holds them and what they sent. */
function heldRows(ctx: RecordsContext) {
  return rowsOf(ctx.db)
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
    .where('fleetgate_dispatch.status', 'in', ['running', 'awaiting-input']);
}

/** {@link DispatchRecordStore.takeOver}. */
async function takeOverDispatch(
  ctx: RecordsContext,
  id: string,
  from: string,
  to: string,
): Promise<boolean> {
  return ctx.db.transaction().execute(async (trx) => {
    // The side row decides (a replica of the previous release takes calls over by it alone).
    const moved = await trx
      .updateTable('fleetgate_dispatch_send')
      .set({ owner: to })
      .where('dispatch_id', '=', id)
      .where('owner', '=', from)
      .executeTakeFirst();
    if (Number(moved.numUpdatedRows) !== 1) return false;
    await trx.updateTable('fleetgate_dispatch').set({ owner: to }).where('id', '=', id).execute();
    return true;
  });
}

/** {@link DispatchRecordStore.get}. */
async function getRecord(ctx: RecordsContext, id: string): Promise<DispatchRecord | undefined> {
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
  if (query.idEndsWith !== undefined) {
    const ending = query.idEndsWith.toLowerCase();
    q = q.where((eb) => {
      const id = eb.ref('fleetgate_dispatch.id');
      const from = eb(eb.fn<number>('length', [id]), '-', ending.length - 1);
      return eb(eb.fn<string>('lower', [eb.fn<string>('substr', [id, from])]), '=', ending);
    });
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
  const row = await rowsOf(ctx.db)
    .where('fleetgate_dispatch.agent', '=', agent)
    .where('fleetgate_dispatch.task_id', '=', taskId)
    .executeTakeFirst();
  return row === undefined ? undefined : fromRow(row);
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
  return updateInTransactions(ctx, id, change, result);
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
    if (outcome.announced) ctx.committed();
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
): Promise<{
  changed: boolean;
  moved: boolean;
  announced: boolean;
  record: DispatchRecord | undefined;
}> {
  // The row read once: the record after the update is this row with the update's assignments.
  const row = await rowsOf(trx).where('fleetgate_dispatch.id', '=', id).executeTakeFirst();
  const before = row?.status;
  if (row === undefined || !movable(before, change.from)) {
    const record = row === undefined ? undefined : fromRow(row);
    return { changed: false, moved: true, announced: false, record };
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
    return { changed: false, moved: false, announced: false, record: undefined };
  const record = fromRow(movedRow(row, change, result));
  const announce = announced(before, change);
  if (announce) await writeAnnouncement(trx, record, change.announce!, ctx.eventId(), change.at);
  return { changed: before !== change.status, moved: true, announced: announce, record };
}

/** {@link DispatchRecordStore.prune}. */
async function pruneRecords(
  ctx: RecordsContext,
  before: number,
  batchSize = 1_000,
): Promise<number> {
  // A batch of ended dispatches: who held them goes first, then the dispatches.
  const ended = ctx.db
    .selectFrom('fleetgate_dispatch')
    .select('id')
    .where('status', 'in', [...ENDED])
    .where('updated_at', '<', before)
    // In id order, so the holders' batch and the dispatches' batch are the same rows.
    .orderBy('id')
    .limit(batchSize);
  let total = 0;
  for (;;) {
    // In batches: one huge delete would hold its locks (and grow the log) for long.
    await ctx.db.deleteFrom('fleetgate_dispatch_send').where('dispatch_id', 'in', ended).execute();
    const result = await ctx.db
      .deleteFrom('fleetgate_dispatch')
      .where('id', 'in', ended)
      .executeTakeFirst();
    const n = Number(result.numDeletedRows);
    total += n;
    if (n < batchSize) return total;
  }
}

/** Dispatch records on `db`; see the file comment. */
export function kyselyDispatchRecords(
  db: Kysely<DispatchDatabase>,
  events: RecordEvents,
): DispatchRecordStore {
  const ctx: RecordsContext = { db, ...events };
  return {
    create: (record, createOptions) => createRecord(ctx, record, createOptions),
    sending: (record, send, announce) => recordSending(ctx, record, send, announce),
    orphans: (limit) => findOrphans(ctx, limit),
    adrift: (limit, living) => findAdrift(ctx, limit, living),
    held: async (id) => {
      const row = await heldRows(ctx).where('fleetgate_dispatch.id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : heldFromRow(row);
    },
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
