/**
 * The life of a standing subscriber: it subscribes once when started (a second start does
 * nothing) and lets go when stopped, so a raiser or summary that listens to one pattern states
 * only what it does with an event.
 */
import type { EventFor, FleetgateTopics, TopicMap } from '../protocol/index.js';
import type { EventBus, EventHandler, SubscribeOptions, Subscription } from './types.js';

/** Start and stop of one subscription. */
export interface StandingSubscriber {
  /** Subscribes, unless already subscribed; resolves once delivery is set up. */
  start(): Promise<void>;
  /** Unsubscribes; starting again subscribes anew. */
  stop(): Promise<void>;
}

/**
 * A subscription of `handler` to `pattern` on `bus`, taken on start and let go on stop.
 *
 * @example
 * ```ts
 * const raiser = standingSubscriber(bus, 'skill.dispatch.failed', handle, { name: 'alerts', durable: true });
 * await raiser.start();
 * ```
 */
export function standingSubscriber<P extends string, M extends TopicMap = FleetgateTopics>(
  bus: EventBus<M>,
  pattern: P,
  handler: (...args: Parameters<EventHandler<EventFor<M, P>>>) => unknown,
  options: SubscribeOptions,
): StandingSubscriber {
  let subscription: Subscription | undefined;
  // What the handler resolves to (an alert raised, say) is its caller's, not the bus's.
  const deliver: EventHandler<EventFor<M, P>> = async (...args) => {
    await handler(...args);
  };
  return {
    async start() {
      if (subscription !== undefined) return;
      subscription = await bus.subscribe(pattern, deliver, options);
    },
    async stop() {
      const sub = subscription;
      subscription = undefined;
      await sub?.unsubscribe();
    },
  };
}
