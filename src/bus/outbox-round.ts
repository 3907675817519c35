/**
 * One round of the outbox relay (`outbox-relay.ts`): reads up to a batch of unsent rows in `seq`
 * order, publishes them, marks the published ones sent after the bus acknowledged them, and parks
 * the rows no bus will ever take (`outbox-parking.ts`). See `outbox.ts` for the exactly-once
 * argument.
 */
import { FleetgateError } from '../protocol/index.js';
import type { TopicMap } from '../protocol/index.js';
import type { OutboxRow } from './outbox-direct.js';
import type { ParkedRow } from './outbox-parking.js';
import { describePayload, isPoisonError, parkedRow, readRow } from './outbox-parking.js';
import type { RelayRows, RoundRows } from './outbox-relay-rows.js';
import type { EventBus, PublishResult, UnreportedErrorHandler } from './types.js';
import { errorMessage } from './subscription-name.js';
import { defined } from '../protocol/fields/index.js';

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

/** What a relay's rounds run on; the relay builds it once from its options. */
export interface RelayRoundContext {
  /** The queries on the outbox, on the store's database (`outbox-relay-rows.ts`). */
  rows: RelayRows;
  /** The relay publishes whatever topic a row holds; rows were type-checked when written. */
  bus: EventBus<Record<string, unknown> & TopicMap>;
  batchSize: number;
  maxPayloadBytes: number | undefined;
  onError: UnreportedErrorHandler;
  /** `work`, or sooner when the relay is stopped (rows still being handled stay unsent). */
  untilStopped(work: Promise<unknown>): Promise<unknown>;
}

/** What a round did: rows marked sent, and rows it read (a full batch: more may be waiting). */
export interface RoundOutcome {
  sent: number;
  read: number;
}

/** Publishes the rows of one round through `q`; throws at the first failed publish. */
async function publishRows(ctx: RelayRoundContext, q: RoundRows): Promise<RoundOutcome> {
  const rows = await q.unsent(ctx.batchSize);
  let complete = false;
  try {
    const { sent, parked } = await publishAndMark(ctx, q, rows);
    complete = sent + parked.length === rows.length;
    for (const row of parked) await announceParked(ctx, row);
    return { sent, read: rows.length };
  } finally {
    // The round's rows all marked sent or parked, or not: what the next round may take.
    q.settled(rows, complete);
  }
}

/**
 * Publishes `rows` in order, marks the ones the bus took (and its durable subscribers handled)
 * sent and parks the poison ones; resolves how many were marked, and the parked rows. Throws at
 * the first failed publish, after marking and parking what came before it.
 */
async function publishAndMark(
  ctx: RelayRoundContext,
  q: RoundRows,
  rows: readonly OutboxRow[],
): Promise<{ sent: number; parked: ParkedRow[] }> {
  const published: OutboxRow[] = [];
  const handling: Promise<void>[] = [];
  const parked: ParkedRow[] = [];
  try {
    for (const row of rows) {
      const read = readRow(row, ctx.maxPayloadBytes);
      if ('parked' in read) {
        parked.push(read.parked);
        continue;
      }
      let result: PublishResult;
      try {
        result = await ctx.bus.publish(row.topic, read.payload, {
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
    if (handling.length > 0) await ctx.untilStopped(Promise.all(handling));
    // Marked only after the bus acknowledged them, once per round, also when a later row of
    // the round failed. A crash before this line re-sends the round's rows: their ids make the
    // copies no-ops for every consumer.
    if (published.length > 0) await q.markSent(published, Date.now());
    // Parked rows leave the outbox for good (an operator looks at them); the rows after them go
    // on.
    if (parked.length > 0) await q.park(parked, Date.now());
  }
  return { sent: published.length, parked };
}

/** Tells the operator: the error to `onError`, and an `ops.alert.outbox_parked` on the bus. */
async function announceParked(ctx: RelayRoundContext, row: ParkedRow): Promise<void> {
  const { onError } = ctx;
  onError(row.error, { source: 'outbox-relay', eventId: row.id, topic: row.topic });
  const about = describePayload(row.payload);
  try {
    await ctx.bus.publish('ops.alert.outbox_parked', {
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
        ...defined({ taskId: about.taskId }),
      },
    });
  } catch (error) {
    onError(error, { source: 'outbox-relay', eventId: row.id, topic: 'ops.alert.outbox_parked' });
  }
}

/**
 * One round (see `OutboxRelay.relayOnce`): in a transaction of its own with `lockRows`. A failed
 * publish is recorded on its row and thrown as `FLEETGATE_OUTBOX_RELAY_FAILED`.
 */
export async function relayRound(ctx: RelayRoundContext): Promise<RoundOutcome> {
  const { rows, onError } = ctx;
  try {
    return await rows.round((q) => publishRows(ctx, q));
  } catch (error) {
    if (!(error instanceof RelayPublishError)) throw error;
    // Outside the round's transaction, so the failure is recorded even when it rolls back.
    await rows
      .failed(error.eventId, errorMessage(error.cause).slice(0, 1000))
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
