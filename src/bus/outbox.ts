/**
 * The transactional outbox: an event is written in the same database transaction as the state
 * change it describes, then a relay publishes it and marks it sent after the bus acknowledged it.
 *
 * Exactly once, end to end: a crash after the commit but before the publish leaves the row unsent
 * and the next relay run publishes it; a crash after the publish but before the mark re-sends it
 * with the same stored id, which the bus drops as a duplicate (JetStream `Nats-Msg-Id`, in-memory
 * duplicate window) and reports `duplicate: true`, and the row is then marked sent. Several relays
 * (one per replica) may run at once for the same reason.
 *
 * The table (`fleetgate_outbox`) is created by the store's `0001_outbox` migration.
 */
import { randomUUID } from 'node:crypto';
import type { Generated, Kysely } from 'kysely';
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import { parseTopic } from './topic-pattern.js';
import type { FleetgateTopics, TopicMap, TopicOf } from '../protocol/index.js';
import type { EventBus, UnreportedErrorHandler } from './types.js';
import { warnUnreportedError } from './types.js';
import { errorMessage } from './subscription-name.js';

/** Row shape of the `fleetgate_outbox` table. */
export interface OutboxTable {
  seq: Generated<number>;
  id: string;
  topic: string;
  /** The payload as JSON text. */
  payload: string;
  correlation_id: string;
  time: string;
  /** Epoch milliseconds. */
  created_at: number;
  /** Epoch milliseconds of the acknowledgement; null while unsent. */
  sent_at: number | null;
  attempts: Generated<number>;
  last_error: string | null;
}

/**
 * Row shape of `fleetgate_outbox_parked` (migration `0101_outbox_parked`): outbox rows the relay
 * set aside because no bus will ever take them (too large, not JSON, an invalid topic), moved
 * here whole so an operator can look at them; `reason` says why.
 */
export interface OutboxParkedTable {
  id: string;
  /** The row's position in the outbox when it was parked. */
  seq: number;
  topic: string;
  payload: string;
  correlation_id: string;
  time: string;
  created_at: number;
  /** Epoch milliseconds. */
  parked_at: number;
  reason: string;
}

/** The tables the outbox needs; the store's database type includes them. */
export interface OutboxDatabase {
  fleetgate_outbox: OutboxTable;
  fleetgate_outbox_parked: OutboxParkedTable;
}

/**
 * A kysely handle the outbox can write through: a `Kysely<DB>` or an open `Transaction<DB>` for
 * any schema `DB` that includes the outbox table. (Structural on purpose: kysely's types are
 * invariant in `DB`, so `Kysely<AppDatabase>` is not a `Kysely<OutboxDatabase>`.)
 */
export interface OutboxExecutor {
  insertInto(table: 'fleetgate_outbox'): unknown;
}

/** A kysely database the relay can read and mark outbox rows through. */
export interface OutboxRelayDatabase extends OutboxExecutor {
  selectFrom(table: 'fleetgate_outbox'): unknown;
  updateTable(table: 'fleetgate_outbox'): unknown;
}

/** Options of {@link writeOutboxEvent}. */
export interface OutboxWriteOptions {
  /** Event id; pass a deterministic one where the same event can be written twice. */
  id?: string;
  correlationId?: string;
  /** Epoch milliseconds used for `created_at` and the event time (default now). */
  now?: number;
}

/** What {@link writeOutboxEvent} did. */
export interface OutboxWriteResult {
  id: string;
  /** False when a row with this id already existed (the same event written twice). */
  inserted: boolean;
}

/** Writes events of topic map `M` into the outbox; see {@link writeOutboxEvent}. */
export interface OutboxWriter<M extends TopicMap> {
  write<T extends TopicOf<M>>(
    executor: OutboxExecutor,
    topic: T,
    payload: M[T],
    options?: OutboxWriteOptions,
  ): Promise<OutboxWriteResult>;
}

/**
 * An outbox writer for a topic map other than {@link FleetgateTopics} (tests, extensions).
 *
 * @example
 * ```ts
 * const outbox = createOutboxWriter<OpenTopics>();
 * await db.transaction().execute((trx) => outbox.write(trx, 'ledger.credited', { amount }));
 * ```
 */
export function createOutboxWriter<M extends TopicMap = FleetgateTopics>(): OutboxWriter<M> {
  return {
    async write(executor, topic, payload, options = {}) {
      parseTopic(topic);
      const db = executor as unknown as Kysely<OutboxDatabase>;
      const id = options.id ?? randomUUID();
      const now = options.now ?? Date.now();
      const result = await db
        .insertInto('fleetgate_outbox')
        .values({
          id,
          topic,
          payload: JSON.stringify(payload),
          correlation_id: options.correlationId ?? id,
          time: new Date(now).toISOString(),
          created_at: now,
          sent_at: null,
          last_error: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      return { id, inserted: Number(result.numInsertedOrUpdatedRows ?? 0n) > 0 };
    },
  };
}

const fleetgateWriter = createOutboxWriter<FleetgateTopics>();

/**
 * Writes one event into the outbox through `executor`: call it with the transaction that makes
 * the state change, so both commit or neither does. Writing the same id twice keeps the first row.
 *
 * @example
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto('task').values(row).execute();
 *   await writeOutboxEvent(trx, 'world.state.delta', payload, {
 *     id: deterministicEventId('world.state.delta', agent, taskId),
 *   });
 * });
 * relay.notify();
 * ```
 */
export function writeOutboxEvent<T extends TopicOf<FleetgateTopics>>(
  executor: OutboxExecutor,
  topic: T,
  payload: FleetgateTopics[T],
  options: OutboxWriteOptions = {},
): Promise<OutboxWriteResult> {
  return fleetgateWriter.write(executor, topic, payload, options);
}

/** A publish of one outbox row failed (internal: carries the row to the failure bookkeeping). */
class RelayPublishError extends Error {
  constructor(
    readonly eventId: string,
    readonly topic: string,
    override readonly cause: unknown,
  ) {
    super(`publishing ${eventId} failed`);
  }
}

/** A row set aside in a round, with the error that says why. */
interface ParkedRow {
  id: string;
  topic: string;
  bytes: number;
  payload: string;
  error: FleetgateError;
}

/** Errors no retry can fix: the bus refuses this event every time. */
function isPoisonError(error: unknown): boolean {
  return (
    isFleetgateError(error, 'FLEETGATE_EVENT_TOO_LARGE') ||
    isFleetgateError(error, 'FLEETGATE_TOPIC_INVALID')
  );
}

function parkedRow(row: { id: string; topic: string; payload: string }, error: unknown): ParkedRow {
  const reason = errorMessage(error);
  return {
    id: row.id,
    topic: row.topic,
    bytes: Buffer.byteLength(row.payload, 'utf8'),
    payload: row.payload,
    error: new FleetgateError(
      'FLEETGATE_OUTBOX_EVENT_PARKED',
      `Outbox event ${row.id} (${row.topic}) can never be published and was parked: ${reason}`,
      { cause: error, details: { eventId: row.id, topic: row.topic, reason } },
    ),
  };
}

/** The payload of a row, or why no bus will take it whatever it does: too large, not JSON. */
function readRow(
  row: { id: string; topic: string; payload: string },
  maxPayloadBytes: number | undefined,
): { payload: unknown } | { parked: ParkedRow } {
  if (maxPayloadBytes !== undefined && row.payload.length > maxPayloadBytes / 3) {
    // A string of n UTF-16 units is at most 3n UTF-8 bytes: only a long one is measured.
    const bytes = Buffer.byteLength(row.payload, 'utf8');
    if (bytes > maxPayloadBytes) {
      return {
        parked: parkedRow(
          row,
          new FleetgateError(
            'FLEETGATE_EVENT_TOO_LARGE',
            `The payload is ${bytes} bytes, more than the limit of ${maxPayloadBytes}.`,
            { details: { bytes, limit: maxPayloadBytes } },
          ),
        ),
      };
    }
  }
  try {
    return { payload: JSON.parse(row.payload) as unknown };
  } catch (error) {
    return { parked: parkedRow(row, error) };
  }
}

/** The agent, skill and task of a payload, read from its first bytes (it may be huge). */
function describePayload(payload: string): { agent: string; skill: string; taskId?: string } {
  const head = payload.slice(0, 65_536);
  const field = (name: string): string | undefined => {
    const match = new RegExp(`"${name}":"([^"\\\\]{1,256})"`).exec(head);
    return match?.[1];
  };
  const taskId = field('taskId');
  return {
    agent: field('source') ?? field('agent') ?? '',
    skill: field('skill') ?? '',
    ...(taskId === undefined ? {} : { taskId }),
  };
}

/** Options of {@link createOutboxRelay}. */
export interface OutboxRelayOptions<M extends TopicMap> {
  /** The store's database (any schema that includes the outbox table). */
  db: OutboxRelayDatabase;
  bus: EventBus<M>;
  /** Rows read per round (default 100). */
  batchSize?: number;
  /** Poll interval when idle, in ms (default 1000); {@link OutboxRelay.notify} wakes it early. */
  pollIntervalMs?: number;
  /** Delay after a failed publish before the next round, in ms (default 1000). */
  retryDelayMs?: number;
  /** Receives publish and database failures (default: a process warning). */
  onError?: UnreportedErrorHandler;
  /**
   * PostgreSQL: lock the rows of a round (`FOR UPDATE SKIP LOCKED`) so the relays of several
   * replicas share the outbox instead of each publishing every row. Needs a database with row
   * locks; leave it off for SQLite (one writer).
   */
  lockRows?: boolean;
  /**
   * Largest payload published, as JSON bytes (default: no limit of its own; the bus's still
   * applies). A row over it is parked without a publish, like a row the bus refuses as too large.
   */
  maxPayloadBytes?: number;
}

/** Publishes unsent outbox rows in order and marks them sent after the bus acknowledged them. */
export interface OutboxRelay {
  /** Starts the polling loop (idempotent). */
  start(): void;
  /** Wakes the loop now, e.g. right after committing a transaction that wrote events. */
  notify(): void;
  /**
   * One round: publishes up to `batchSize` unsent rows in `seq` order and returns how many it
   * marked sent. A row no bus will ever accept — larger than `maxPayloadBytes` or than the bus
   * takes (`FLEETGATE_EVENT_TOO_LARGE`), a payload that is not JSON, an invalid topic — is
   * **parked** (`parked_at`, `last_error`), reported as `FLEETGATE_OUTBOX_EVENT_PARKED` with an
   * `ops.alert.outbox_parked` alert, and the round goes on with the next row. Any other failure
   * (the bus is down) stops the round there (later rows wait, so per-topic order holds) and throws
   * `FLEETGATE_OUTBOX_RELAY_FAILED`.
   */
  relayOnce(): Promise<number>;
  /** Publishes until no unsent row is left; returns the number sent. */
  drain(): Promise<number>;
  /** Stops the loop and waits for the round in progress. */
  stop(): Promise<void>;
}

/**
 * Creates the relay from the outbox table to the bus.
 *
 * @example
 * ```ts
 * const relay = createOutboxRelay({ db: store.db, bus });
 * relay.start();
 * // …on shutdown
 * await relay.stop();
 * ```
 */
export function createOutboxRelay<M extends TopicMap = FleetgateTopics>(
  options: OutboxRelayOptions<M>,
): OutboxRelay {
  const { bus } = options;
  const db = options.db as unknown as Kysely<OutboxDatabase>;
  const batchSize = options.batchSize ?? 100;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const retryDelayMs = options.retryDelayMs ?? 1000;
  const onError = options.onError ?? warnUnreportedError;
  // The relay publishes whatever topic a row holds; rows were type-checked when written.
  const looseBus = bus as unknown as EventBus<Record<string, unknown> & TopicMap>;

  let running = false;
  let round: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let notified = false;

  /** Publishes the rows of one round through `q`; throws at the first failed publish. */
  async function publishRows(q: Kysely<OutboxDatabase>, lock: boolean): Promise<number> {
    let select = q
      .selectFrom('fleetgate_outbox')
      .select(['seq', 'id', 'topic', 'payload', 'correlation_id', 'time'])
      .where('sent_at', 'is', null)
      .orderBy('seq')
      .limit(batchSize);
    if (lock) select = select.forUpdate().skipLocked();
    const rows = await select.execute();
    const published: string[] = [];
    const parked: ParkedRow[] = [];
    try {
      for (const row of rows) {
        const read = readRow(row, options.maxPayloadBytes);
        if ('parked' in read) {
          parked.push(read.parked);
          continue;
        }
        try {
          await looseBus.publish(row.topic, read.payload, {
            id: row.id,
            correlationId: row.correlation_id,
            time: row.time,
          });
        } catch (error) {
          if (isPoisonError(error)) {
            parked.push(parkedRow(row, error));
            continue;
          }
          throw new RelayPublishError(row.id, row.topic, error);
        }
        published.push(row.id);
      }
    } finally {
      // Marked only after the bus acknowledged them, in one statement per round (one commit, not
      // one per row), also when a later row of the round failed. A crash before this line
      // re-sends the round's rows: their ids make the copies no-ops for every consumer.
      if (published.length > 0) {
        await q
          .updateTable('fleetgate_outbox')
          .set({ sent_at: Date.now(), last_error: null })
          .where('id', 'in', published)
          .where('sent_at', 'is', null)
          .execute();
      }
      // Parked rows leave the outbox for good (an operator looks at them); the rows after them go
      // on. Moved in one transaction: the round's own with `lockRows`, else one of their own.
      if (parked.length > 0) {
        await (q.isTransaction
          ? parkRows(q, parked)
          : q.transaction().execute((trx) => parkRows(trx, parked)));
      }
    }
    for (const row of parked) await announceParked(row);
    return published.length;
  }

  /** Moves parked rows from the outbox into `fleetgate_outbox_parked`. */
  async function parkRows(q: Kysely<OutboxDatabase>, rows: readonly ParkedRow[]): Promise<void> {
    const at = Date.now();
    for (const row of rows) {
      await q
        .insertInto('fleetgate_outbox_parked')
        .columns([
          'id',
          'seq',
          'topic',
          'payload',
          'correlation_id',
          'time',
          'created_at',
          'parked_at',
          'reason',
        ])
        .expression((eb) =>
          eb
            .selectFrom('fleetgate_outbox')
            .select((s) => [
              'id',
              'seq',
              'topic',
              'payload',
              'correlation_id',
              'time',
              'created_at',
              s.val(at).as('parked_at'),
              s.val(row.error.message.slice(0, 1000)).as('reason'),
            ])
            .where('id', '=', row.id)
            .where('sent_at', 'is', null),
        )
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      await q
        .deleteFrom('fleetgate_outbox')
        .where('id', '=', row.id)
        .where('sent_at', 'is', null)
        .execute();
    }
  }

  /** Tells the operator: the error to `onError`, and an `ops.alert.outbox_parked` on the bus. */
  async function announceParked(row: ParkedRow): Promise<void> {
    onError(row.error, { source: 'outbox-relay', eventId: row.id, topic: row.topic });
    const about = describePayload(row.payload);
    try {
      await looseBus.publish('ops.alert.outbox_parked', {
        kind: 'outbox_parked',
        severity: 'error',
        agent: about.agent,
        skill: about.skill,
        radius: 'unknown',
        message: row.error.message,
        evidence: {
          eventId: row.id,
          topic: row.topic,
          bytes: row.bytes,
          ...(about.taskId === undefined ? {} : { taskId: about.taskId }),
        },
      });
    } catch (error) {
      onError(error, { source: 'outbox-relay', eventId: row.id, topic: 'ops.alert.outbox_parked' });
    }
  }

  async function relayRound(): Promise<number> {
    try {
      return options.lockRows === true
        ? await db.transaction().execute((trx) => publishRows(trx, true))
        : await publishRows(db, false);
    } catch (error) {
      if (!(error instanceof RelayPublishError)) throw error;
      // Outside the round's transaction, so the failure is recorded even when it rolls back.
      await db
        .updateTable('fleetgate_outbox')
        .set((eb) => ({
          attempts: eb('attempts', '+', 1),
          last_error: errorMessage(error.cause).slice(0, 1000),
        }))
        .where('id', '=', error.eventId)
        .execute()
        .catch((dbError: unknown) =>
          onError(dbError, { source: 'outbox-relay', eventId: error.eventId }),
        );
      throw new FleetgateError(
        'FLEETGATE_OUTBOX_RELAY_FAILED',
        `Publishing outbox event ${error.eventId} (${error.topic}) failed: ${errorMessage(error.cause)}`,
        { cause: error.cause, details: { eventId: error.eventId, topic: error.topic } },
      );
    }
  }

  function relayOnce(): Promise<number> {
    // One round at a time per relay: concurrent rounds would only produce duplicates.
    round ??= relayRound().finally(() => {
      round = undefined;
    });
    return round;
  }

  async function drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await relayOnce();
      total += n;
      if (n < batchSize) return total;
    }
  }

  function sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    }).finally(() => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      wake = undefined;
    });
  }

  async function runLoop(): Promise<void> {
    while (running) {
      notified = false;
      let delay = pollIntervalMs;
      try {
        await drain();
      } catch (error) {
        onError(error, { source: 'outbox-relay' });
        delay = retryDelayMs;
      }
      if (!running) break;
      if (notified && delay === pollIntervalMs) {
        notified = false;
        continue;
      }
      await sleep(delay);
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      loop = runLoop();
    },
    notify() {
      notified = wake === undefined;
      wake?.();
    },
    relayOnce,
    drain,
    async stop() {
      running = false;
      wake?.();
      await loop;
      loop = undefined;
      await round?.catch(() => undefined);
    },
  };
}
