/**
 * The outbox relay: publishes unsent `fleetgate_outbox` rows in order and marks them sent after
 * the bus acknowledged them (see `outbox.ts` for the exactly-once argument); a row no bus will
 * ever take is parked (`outbox-parking.ts`) and the round goes on.
 */
import type { Kysely } from 'kysely';
import { FleetgateError } from '../protocol/index.js';
import type { FleetgateTopics, TopicMap } from '../protocol/index.js';
import type { OutboxDatabase, OutboxRelayDatabase } from './outbox.js';
import type { OutboxSqlite } from './outbox-direct.js';
import { SELECT_UNSENT, markOutboxRowsSent } from './outbox-direct.js';
import type { ParkedRow } from './outbox-parking.js';
import { describePayload, isPoisonError, parkRows, parkedRow, readRow } from './outbox-parking.js';
import type { EventBus, PublishResult, UnreportedErrorHandler } from './types.js';
import { warnUnreportedError } from './types.js';
import { errorMessage } from './subscription-name.js';

/** The columns of an outbox row a round reads. */
interface OutboxRow {
  seq: number;
  id: string;
  topic: string;
  payload: string;
  correlation_id: string;
  time: string;
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

/** Options of {@link createOutboxRelay}. */
export interface OutboxRelayOptions<M extends TopicMap> {
  /** The store's database (any schema that includes the outbox table). */
  db: OutboxRelayDatabase;
  /**
   * A SQLite store's direct access (`store.sqlite`): rounds read and mark rows with prepared
   * statements, and a round's mark joins the writes committed with it (group commit). Not with
   * `lockRows`.
   */
  sqlite?: OutboxSqlite | undefined;
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
  /**
   * Wakes the loop, e.g. right after committing a transaction that wrote events: on the next turn
   * of the event loop, after what the caller does next.
   */
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
  /**
   * Stops the loop and waits for the round in progress. A round still waiting for durable
   * subscribers to handle its events (in-memory bus) stops waiting: those rows stay unsent and go
   * out again on the next start, where consumers skip the ids they already applied.
   */
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
  let wakeSoon = false;
  let stopping: (() => void) | undefined;
  let stopped = new Promise<void>((resolve) => (stopping = resolve));

  /** `work`, or sooner when the relay is stopped (rows still being handled stay unsent). */
  function untilStopped(work: Promise<unknown>): Promise<unknown> {
    return Promise.race([work, stopped]);
  }

  const direct = options.lockRows === true ? undefined : options.sqlite;

  /** The unsent rows of one round, in order (locked with `lock`). */
  function selectRows(q: Kysely<OutboxDatabase>, lock: boolean): Promise<OutboxRow[]> {
    if (direct !== undefined) {
      return direct.read((sql) => sql.all<OutboxRow>(SELECT_UNSENT, [batchSize]));
    }
    let select = q
      .selectFrom('fleetgate_outbox')
      .select(['seq', 'id', 'topic', 'payload', 'correlation_id', 'time'])
      .where('sent_at', 'is', null)
      .orderBy('seq')
      .limit(batchSize);
    if (lock) select = select.forUpdate().skipLocked();
    return select.execute();
  }

  /** Marks the round's published rows sent, in one statement (one commit, not one per row). */
  async function markSent(q: Kysely<OutboxDatabase>, published: OutboxRow[]): Promise<void> {
    const at = Date.now();
    if (direct !== undefined) {
      // By position (the table's own key), joining the claims and world updates committed in
      // the same turn of the loop.
      const seqs = published.map((row) => row.seq);
      await direct.write((sql) => markOutboxRowsSent(sql, seqs, at), { group: 'loop' });
      return;
    }
    await q
      .updateTable('fleetgate_outbox')
      .set({ sent_at: at, last_error: null })
      .where(
        'id',
        'in',
        published.map((row) => row.id),
      )
      .where('sent_at', 'is', null)
      .execute();
  }

  /** Publishes the rows of one round through `q`; throws at the first failed publish. */
  async function publishRows(q: Kysely<OutboxDatabase>, lock: boolean): Promise<number> {
    const rows = await selectRows(q, lock);
    const published: OutboxRow[] = [];
    const handling: Promise<void>[] = [];
    const parked: ParkedRow[] = [];
    try {
      for (const row of rows) {
        const read = readRow(row, options.maxPayloadBytes);
        if ('parked' in read) {
          parked.push(read.parked);
          continue;
        }
        let result: PublishResult;
        try {
          result = await looseBus.publish(row.topic, read.payload, {
            id: row.id,
            correlationId: row.correlation_id,
            time: row.time,
            outboxSeq: Number(row.seq),
          });
        } catch (error) {
          if (isPoisonError(error)) {
            parked.push(parkedRow(row, error));
            continue;
          }
          throw new RelayPublishError(row.id, row.topic, error);
        }
        const handled = result.handled;
        if (handled === undefined) published.push(row);
        // A bus that keeps nothing (in-memory) accepted the event, but only its durable
        // subscribers' handling makes it safe: the row is marked after that, so a crash before
        // (or a database outage the handler waits out) re-sends it instead of losing it.
        else handling.push(handled.then((ok) => void (ok && published.push(row))));
      }
    } finally {
      if (handling.length > 0) await untilStopped(Promise.all(handling));
      // Marked only after the bus acknowledged them, once per round, also when a later row of
      // the round failed. A crash before this line re-sends the round's rows: their ids make the
      // copies no-ops for every consumer.
      if (published.length > 0) await markSent(q, published);
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
      stopped = new Promise<void>((resolve) => (stopping = resolve));
      loop = runLoop();
    },
    notify() {
      // On the next turn of the event loop: the caller that committed (a call about to return)
      // goes on first; the notices of one turn wake the loop once.
      if (wakeSoon) return;
      wakeSoon = true;
      setImmediate(() => {
        wakeSoon = false;
        notified = wake === undefined;
        wake?.();
      });
    },
    relayOnce,
    drain,
    async stop() {
      running = false;
      stopping?.();
      wake?.();
      await loop;
      loop = undefined;
      await round?.catch(() => undefined);
    },
  };
}
