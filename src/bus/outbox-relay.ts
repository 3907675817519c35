/**
 * The outbox relay: publishes unsent `fleetgate_outbox` rows in order and marks them sent after
 * the bus acknowledged them (see `outbox.ts` for the exactly-once argument); a row no bus will
 * ever take is parked (`outbox-parking.ts`) and the round goes on. The loop is here; one round is
 * `outbox-round.ts`.
 */
import type { Kysely } from 'kysely';
import type { FleetgateTopics, TopicMap } from '../protocol/index.js';
import type { OutboxDatabase, OutboxRelayDatabase } from './outbox.js';
import type { SqliteAccess } from '../store/index.js';
import { tapOutbox } from './outbox-direct.js';
import { OutboxHandover } from './outbox-handover.js';
import { kyselyRelayRows, sqliteRelayRows } from './outbox-relay-rows.js';
import type { RelayRoundContext, RoundOutcome } from './outbox-round.js';
import { relayRound } from './outbox-round.js';
import type { EventBus, UnreportedErrorHandler } from './types.js';
import { warnUnreportedError } from './types.js';

/** Options of {@link createOutboxRelay}. */
export interface OutboxRelayOptions<M extends TopicMap> {
  /** The store's database (any schema that includes the outbox table). */
  db: OutboxRelayDatabase;
  /**
   * A SQLite store's direct access (`store.sqlite`): rounds read and mark rows with prepared
   * statements, and a round's mark joins the writes committed with it (group commit). Not with
   * `lockRows`. Buys `store-paths`' `relay_direct_saves_us_per_call` (~75 µs a round of one call's
   * rows, ~5% of a proxied call's gateway CPU), and the handover (`outbox-handover.ts`).
   */
  sqlite?: SqliteAccess | undefined;
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
  let round: Promise<RoundOutcome> | undefined;
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
  // The rows the writers commit on a SQLite store, told to the relay while it runs.
  const handover = direct === undefined ? undefined : new OutboxHandover();
  let untap: Promise<() => void> | undefined;
  const context: RelayRoundContext = {
    rows:
      direct === undefined || handover === undefined
        ? kyselyRelayRows(db, options.lockRows === true)
        : sqliteRelayRows(direct, handover),
    bus: looseBus,
    batchSize,
    maxPayloadBytes: options.maxPayloadBytes,
    onError,
    untilStopped,
  };

  function oneRound(): Promise<RoundOutcome> {
    // One round at a time per relay: concurrent rounds would only produce duplicates.
    round ??= relayRound(context).finally(() => {
      round = undefined;
    });
    return round;
  }

  async function drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const { sent, read } = await oneRound();
      total += sent;
      // A full batch read (rows parked among them included): more may be waiting.
      if (read < batchSize) return total;
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
      if (direct !== undefined && handover !== undefined) {
        untap = tapOutbox(direct, (rows) => handover.add(rows)).catch((error: unknown) => {
          // Without the handover every round reads the table, as on PostgreSQL.
          onError(error, { source: 'outbox-relay' });
          return () => undefined;
        });
      }
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
    relayOnce: () => oneRound().then((outcome) => outcome.sent),
    drain,
    async stop() {
      running = false;
      stopping?.();
      wake?.();
      await loop;
      loop = undefined;
      await round?.catch(() => undefined);
      if (untap !== undefined) (await untap)();
      untap = undefined;
      handover?.clear();
    },
  };
}
