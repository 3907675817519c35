/**
 * The part of an event bus the materialiser uses, as a port of its own: `world` depends on the
 * protocol's topic map, not on `bus`. Any `EventBus` (in-memory, JetStream) satisfies it.
 */
import type { EventEnvelope, FleetgateTopics, WorldStateDeltaEvent } from '../protocol/index.js';

/** Topics the materialiser publishes. */
export type WorldPublishedTopic =
  | 'world.state.updated'
  | 'world.state.delta.rejected'
  | 'ops.alert.world_domain_full'
  | 'system.error';

/**
 * What a bus tells the handler with an event: on the in-memory bus, the events queued behind it,
 * for the materialiser to apply together in one unit of work.
 */
export interface WorldDelivery {
  takeQueued?(max: number): EventEnvelope[];
}

/** A live subscription of the materialiser. */
export interface WorldSubscription {
  unsubscribe(): Promise<void>;
}

/** What the materialiser needs of a bus: publish its topics, subscribe to `world.state.delta`. */
export interface WorldBus {
  publish<T extends WorldPublishedTopic>(
    topic: T,
    payload: FleetgateTopics[T],
    options?: { id?: string; correlationId?: string },
  ): Promise<unknown>;
  /**
   * `publish` without the promise, on a bus that accepts or refuses an event synchronously (the
   * in-memory bus): returns what `publish` resolves to and throws what it rejects with. The
   * materialiser publishes its emissions through it when the bus has it, so an event's emissions
   * cost no promise and no turn of the microtask queue each.
   */
  publishNow?<T extends WorldPublishedTopic>(
    topic: T,
    payload: FleetgateTopics[T],
    options?: { id?: string; correlationId?: string },
  ): unknown;
  subscribe(
    pattern: 'world.state.delta',
    handler: (
      event: EventEnvelope<'world.state.delta', WorldStateDeltaEvent>,
      delivery: WorldDelivery,
    ) => Promise<void>,
    options: { name: string; durable: boolean; from: 'all' },
  ): Promise<WorldSubscription>;
}
