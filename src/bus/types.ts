/** The `EventBus` role interface every backend implements (in-memory, NATS JetStream). */
import type {
  EventEnvelope,
  EventFor,
  FleetgateTopics,
  TopicMap,
  TopicOf,
} from '../protocol/index.js';

/** Options of {@link EventBus.publish}. */
export interface PublishOptions {
  /**
   * Event id. Pass a deterministic id ({@link deterministicEventId}) wherever the same event may
   * be published twice (retries, several replicas, outbox re-sends): the bus accepts it once
   * within its duplicate window and reports the others with `duplicate: true`.
   */
  id?: string;
  /** Correlates the event with the call or event that caused it; defaults to the event id. */
  correlationId?: string;
  /** RFC 3339 time of the event; defaults to now. The outbox keeps the original time. */
  time?: string;
  /**
   * The outbox row the event is relayed from (the relay sets it). The in-memory bus, which keeps
   * no log of its own, hands it to subscribers as {@link Delivery.outboxSeq}: a position in the
   * store's durable log of the event. JetStream ignores it (its stream sequence is the position).
   */
  outboxSeq?: number;
}

/** What {@link EventBus.publish} resolves to once the bus accepted the event. */
export interface PublishResult {
  id: string;
  /** True when an event with this id was already accepted within the duplicate window. */
  duplicate: boolean;
  /** Position in the backend's log, when it has one (JetStream stream sequence). */
  sequence?: number;
  /**
   * In-memory bus only, when durable subscriptions match the event: resolves `true` once each of
   * them ran its handler on it (a failing handler counts: it was reported), `false` when one let
   * it go unhandled (unsubscribed, the bus closed, or `drop-oldest` dropped it). The bus keeps
   * nothing across a restart, so a publisher that must not lose the event (the outbox relay)
   * marks it done only then. Never rejects. Absent on JetStream: the server keeps the event for
   * its durable consumers.
   */
  handled?: Promise<boolean>;
}

/** Where an event sits in the backend's log, for consumers that resume by position. */
export interface Delivery {
  /** The JetStream stream sequence; absent on the in-memory bus, which keeps no log. */
  sequence?: number;
  /**
   * In-memory bus: the outbox row the event was relayed from ({@link PublishOptions.outboxSeq}),
   * absent for an event published straight to the bus.
   */
  outboxSeq?: number;
  /**
   * In-memory bus: takes up to `max` more events queued for this subscription, in order, for the
   * handler to handle with this one (a consumer that applies several events in one transaction).
   * They are done with when the handler's promise settles, as this event is: handled when it
   * resolves, reported with it when it rejects. Absent on JetStream, which delivers one event at a
   * time.
   */
  takeQueued?(max: number): EventEnvelope[];
}

/** A subscription handler; a returned promise is awaited before the next event is delivered. */
export type EventHandler<E = EventEnvelope> = (
  event: E,
  delivery: Delivery,
) => void | Promise<void>;

/**
 * Where a new subscription starts: only events published from now on, all retained ones, or the
 * retained ones from a log position on (a live view resuming where its client left off; the
 * in-memory bus retains nothing, so there it means `new`).
 */
export type StartFrom = 'new' | 'all' | { sequence: number };

/**
 * What the in-memory bus does when a subscription's queue is full:
 * - `reject` (default): `publish()` rejects with `FLEETGATE_BUS_OVERFLOW` and the event is given
 *   to no subscriber, so the publisher (for example the outbox relay) retries later; nothing is
 *   lost silently.
 * - `drop-oldest`: the oldest queued event of that subscription is dropped to make room, and the
 *   drop is reported on `system.error`; for live views (`tail`, dashboards) that want the latest.
 */
export type OverflowPolicy = 'reject' | 'drop-oldest';

/** Options of {@link EventBus.subscribe}. */
export interface SubscribeOptions {
  /**
   * Names the subscription in errors and `system.error` events, and names the durable consumer
   * on JetStream. Letters, digits, `-` and `_`, at most 64 characters.
   */
  name: string;
  /**
   * JetStream: a durable consumer that survives restarts and resumes where it left off; several
   * processes subscribing with the same durable name share the work (each event handled once).
   * Handler failures are retried a bounded number of times, then dead-lettered. When false
   * (default), an ordered ephemeral consumer for live views: no retry, no state on the server.
   * The in-memory bus keeps nothing across restarts; there a durable subscription's handling is
   * what {@link PublishResult.handled} waits for.
   */
  durable?: boolean;
  /**
   * `new` (default): events published after the subscription is set up. `all`: every event the
   * backend still retains (JetStream stream contents; the in-memory bus retains none). A durable
   * subscription that already exists resumes where it left off regardless.
   */
  from?: StartFrom;
  /** In-memory bus: most events queued for this subscription (default: the bus's `maxQueue`). */
  maxQueue?: number;
  /** In-memory bus: what happens when the queue is full (default: the bus's `overflow`). */
  overflow?: OverflowPolicy;
}

/** A live subscription. */
export interface Subscription {
  readonly name: string;
  readonly pattern: string;
  /**
   * Stops delivery. Resolves once the handler call in progress (if any) has finished; after that
   * the handler is never called again. Events still queued in memory are discarded (a durable
   * JetStream subscription keeps them on the server for its next start). Idempotent.
   */
  unsubscribe(): Promise<void>;
}

/**
 * Publishes typed events and delivers them to subscriptions by NATS-syntax pattern.
 *
 * Guarantees of every implementation (checked by the contract suite `eventBusContract`):
 * - topics and patterns are validated at the call (`FLEETGATE_TOPIC_INVALID`, thrown
 *   synchronously by `publish` and `subscribe`);
 * - each subscription receives events in publish order, one at a time (handlers are awaited);
 * - a throwing or rejecting handler never stops delivery to other subscriptions or to later
 *   events, and is reported on `system.error` (a failing `system.error` handler is not reported
 *   on `system.error` again, but to the bus's `onUnreportedError`);
 * - an event published with an id already accepted within the duplicate window is delivered
 *   once, and the second `publish` resolves with `duplicate: true`.
 *
 * @example
 * ```ts
 * const sub = await bus.subscribe('world.state.>', async (event) => {
 *   if (event.topic === 'world.state.delta') await materialise(event.payload);
 * }, { name: 'materialiser', durable: true });
 * await bus.publish('world.state.delta', payload, { id: deterministicEventId(agent, taskId) });
 * ```
 */
export interface EventBus<M extends TopicMap = FleetgateTopics> {
  /**
   * Publishes one event. Resolves when the bus accepted it: queued for every matching in-memory
   * subscription, or stored and acknowledged by the JetStream server.
   */
  publish<T extends TopicOf<M>>(
    topic: T,
    payload: M[T],
    options?: PublishOptions,
  ): Promise<PublishResult>;
  /** Subscribes `handler` to `pattern`; resolves once delivery is set up. */
  subscribe<P extends string>(
    pattern: P,
    handler: EventHandler<EventFor<M, P>>,
    options: SubscribeOptions,
  ): Promise<Subscription>;
  /** Stops accepting events, lets handlers in progress finish, releases resources. Idempotent. */
  close(): Promise<void>;
  /**
   * The largest message the bus carries, in bytes (envelope and headers included), when it has
   * one: the NATS server's `max_payload` for JetStream; none for the in-memory bus. A publish over
   * it fails with `FLEETGATE_EVENT_TOO_LARGE`.
   */
  readonly maxPayloadBytes?: number | undefined;
}

/** Called for an error the bus cannot report on `system.error` (for example, inside one). */
export type UnreportedErrorHandler = (error: unknown, context: Record<string, unknown>) => void;

/** The default {@link UnreportedErrorHandler}: a process warning, never silence. */
export const warnUnreportedError: UnreportedErrorHandler = (error, context) => {
  const message = error instanceof Error ? error.message : String(error);
  process.emitWarning(`Fleetgate bus: ${message} ${JSON.stringify(context)}`, {
    type: 'FleetgateBusWarning',
  });
};
