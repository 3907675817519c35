/**
 * The dispatch records' types and what the store's two implementations share
 * (`dispatch-records-sqlite.ts`, `dispatch-records-kysely.ts`): the row's decoding, a move's rules
 * and an announcement's outbox row.
 */
import type {
  CallDoor,
  DispatchEvent,
  DispatchResult,
  DispatchStatus,
  FleetgateTopics,
} from '../protocol/index.js';

/** The durable record of one dispatch: what every `skill.dispatch.*` event carries. */
export type DispatchRecord = Omit<DispatchEvent, 'reason' | 'state' | 'decision' | 'approvalId'>;

/**
 * The table of {@link createStoreDispatchRecords} (migration `0005_dispatch`; `requested_by`
 * from `0900_dispatch_requester`; the {@link DispatchCallColumns} from `1000_dispatch_call_columns`).
 */
export interface DispatchTable extends DispatchCallColumns {
  id: string;
  agent: string;
  skill: string;
  correlation_id: string;
  status: string;
  task_id: string | null;
  created_at: number;
  updated_at: number;
  result: string | null;
  requested_by: string | null;
  /** The door the call came through (`1000_dispatch_call_columns`); null on rows from before. */
  door: string | null;
}

/**
 * Who holds a dispatch, what it sent and its trace context, on its own row (migration
 * `1000_dispatch_call_columns`): written with `fleetgate_dispatch_send` and
 * `fleetgate_dispatch_trace` in the same units, which stay the ones read while a replica of the
 * previous release, which knows only them, may run. Null on rows written before.
 */
export interface DispatchCallColumns {
  owner: string | null;
  message_id: string | null;
  context_id: string | null;
  sent_at: number | null;
  traceparent: string | null;
}

/**
 * The columns of a dispatch row the records read: all but the {@link DispatchCallColumns}, which
 * are written and not read yet (their side rows decide while the previous release may run).
 */
export const DISPATCH_READ_COLUMNS = [
  'id',
  'agent',
  'skill',
  'correlation_id',
  'status',
  'task_id',
  'created_at',
  'updated_at',
  'result',
  'requested_by',
  'door',
] as const;

/** The call columns of a new row: its holder and send, when it has one, and its trace context. */
export function callColumns(
  record: Pick<DispatchRecord, 'traceparent'>,
  send: DispatchSend | undefined,
): DispatchCallColumns {
  return {
    owner: send?.owner ?? null,
    message_id: send?.messageId ?? null,
    context_id: send?.contextId ?? null,
    sent_at: send?.sentAt ?? null,
    traceparent: record.traceparent ?? null,
  };
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

/**
 * A dispatch in flight with who holds it: {@link DispatchRecordStore.orphans} (no task id yet) and
 * {@link DispatchRecordStore.adrift} (its task followed).
 */
export interface HeldDispatch {
  record: DispatchRecord;
  send: DispatchSend;
}

/** The `skill.dispatch.*` topics. */
export type DispatchTopic = Extract<keyof FleetgateTopics, `skill.dispatch.${string}`>;

/** What a dispatch event carries beside the record. */
export type DispatchEventExtra = Pick<
  DispatchEvent,
  'reason' | 'state' | 'decision' | 'approvalId' | 'canceledBy'
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
  /** The end of the id, any case: how a short id (`fleetgate call 3f9a2c`) names a call. */
  idEndsWith?: string;
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
  /**
   * Dispatches in flight that know their task id, held by none of `living` (the processes known
   * to run): the followed tasks a dead process may have left behind. At most `limit`, oldest
   * first.
   */
  adrift(limit: number, living: readonly string[]): Promise<HeldDispatch[]>;
  /**
   * A dispatch in flight (`running`, `awaiting-input`) with who holds it and what it sent; undefined
   * when it is not in flight or no holder was recorded.
   */
  held(id: string): Promise<HeldDispatch | undefined>;
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
      /**
       * Announce the write even though it keeps the status (a note on a call that stays where it
       * is, such as a cancel request): `announce` goes with any write that applied.
       */
      keepsStatus?: boolean;
    },
  ): Promise<DispatchUpdate>;
  /**
   * Retention: deletes dispatches that ended (completed, failed, rejected, canceled) before
   * `before` (epoch ms), at most `batchSize` rows per statement (default 1,000); resolves how many.
   * Dispatches still running or waiting are never deleted.
   */
  prune(before: number, batchSize?: number): Promise<number>;
}

export const ENDED: readonly DispatchStatus[] = ['completed', 'failed', 'rejected', 'canceled'];

export function fromRow(row: DispatchRow): DispatchRecord {
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
    ...(row.requested_by === null ? {} : { requestedBy: row.requested_by }),
    ...(row.door === null ? {} : { door: row.door as CallDoor }),
  };
}

/** What a store's methods share beside its database: the events' ids and the relay's wake-up. */
export interface RecordEvents {
  /** Ids of the events written into the outbox. */
  eventId: () => string;
  /** Called after a unit that wrote an event committed (wakes the outbox relay). */
  committed: () => void;
}

/** A change of {@link DispatchRecordStore.update}. */
export type DispatchChange = Parameters<DispatchRecordStore['update']>[1];

/** A dispatch row as read, with its trace context (joined). */
export type DispatchRow = Pick<DispatchTable, (typeof DISPATCH_READ_COLUMNS)[number]> & {
  traceparent: string | null;
};

/** The outbox row of an announcement (the payload is the record as written, plus its extras). */
export function eventOf(
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

/** Whether a write that moved a dispatch from `before` by `change` carries its announcement. */
export function announced(before: string, change: DispatchChange): boolean {
  return change.announce !== undefined && (before !== change.status || change.keepsStatus === true);
}

/**
 * Whether a dispatch in `status` (undefined: there is none) may move: one that ended never moves
 * again, and with `from` only one in that status moves.
 */
export function movable(
  status: string | undefined,
  from: DispatchStatus | undefined,
): status is string {
  return (
    status !== undefined &&
    !ENDED.includes(status as DispatchStatus) &&
    (from === undefined || status === from)
  );
}

/**
 * The row of a dispatch after `UPDATE_FROM` (or its kysely twin) applied `change` to `row`: a task
 * id or result left out keeps the stored one.
 */
export function movedRow(
  row: DispatchRow,
  change: DispatchChange,
  result: string | null,
): DispatchRow {
  return {
    ...row,
    status: change.status,
    updated_at: change.at,
    task_id: change.taskId ?? row.task_id,
    result: result ?? row.result,
  };
}

/** An orphan as {@link DispatchRecordStore.orphans} reports it: the record and who held it. */
export function heldFromRow(
  row: DispatchRow & Omit<DispatchSendTable, 'dispatch_id'>,
): HeldDispatch {
  return {
    record: fromRow(row),
    send: {
      owner: row.owner,
      messageId: row.message_id,
      contextId: row.context_id,
      sentAt: row.sent_at === null ? null : Number(row.sent_at),
    },
  };
}
