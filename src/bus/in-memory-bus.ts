/**
 * The embedded default bus: one process, no broker. Subscriptions are found through a token trie;
 * each subscription has its own bounded FIFO queue drained by one asynchronous loop, so handlers
 * are awaited one event at a time, in publish order, and a slow subscription never delays another.
 */
import {
  FleetgateError,
  type EventEnvelope,
  type EventFor,
  type FleetgateTopics,
  type TopicMap,
  type TopicOf,
} from '../protocol/index.js';
import { Deque } from './deque.js';
import { DuplicateWindow } from './duplicate-window.js';
import { createClock, createEventIdGenerator, stampEnvelope } from './event-stamps.js';
import { parseTopic } from './topic-pattern.js';
import { TopicTrie } from './topic-trie.js';
import {
  warnUnreportedError,
  type Delivery,
  type EventBus,
  type EventHandler,
  type OverflowPolicy,
  type PublishOptions,
  type PublishResult,
  type SubscribeOptions,
  type Subscription,
  type UnreportedErrorHandler,
} from './types.js';
import { errorMessage } from './subscription-name.js';
import { busClosed, checkEventId, checkSubscription } from './bus-checks.js';
import { createFailureReporter, type ReportFailure } from './failure-reporter.js';
import { remember } from '../protocol/caches/index.js';

/** Options of {@link createInMemoryEventBus}. */
export interface InMemoryEventBusOptions {
  /** Default most events queued per subscription (default 10,000). */
  maxQueue?: number;
  /** Default overflow policy (default `reject`); see {@link OverflowPolicy}. */
  overflow?: OverflowPolicy;
  /** How long an explicit event id is remembered for duplicate detection (default 2 minutes). */
  duplicateWindowMs?: number;
  /** Most ids remembered for duplicate detection (default 100,000). */
  duplicateWindowSize?: number;
  /** Receives errors that cannot go to `system.error` (default: a process warning). */
  onUnreportedError?: UnreportedErrorHandler;
  /** Clock in epoch milliseconds, for the duplicate window (tests pass a fake). */
  now?: () => number;
}

/** Counters of an {@link InMemoryEventBus}, for metrics and tests. */
export interface InMemoryBusStats {
  published: number;
  duplicates: number;
  delivered: number;
  handlerFailures: number;
  overflows: number;
  dropped: number;
  subscriptions: number;
}

const DEFAULT_MAX_QUEUE = 10_000;
const MATCH_CACHE_LIMIT = 4_096;

/**
 * The handling of one event by the durable subscriptions it was queued for: `handled` resolves
 * once each ran its handler on it (true), or false as soon as one let it go unhandled
 * (unsubscribed, closed, or dropped it from a full queue).
 */
class DurableHandling {
  remaining: number;
  ok = true;
  readonly handled: Promise<boolean>;
  #resolve!: (ok: boolean) => void;

  constructor(count: number) {
    this.remaining = count;
    this.handled = new Promise<boolean>((resolve) => (this.#resolve = resolve));
  }

  /** One durable subscription is done with the event: handled it, or let it go. */
  done(handled: boolean): boolean {
    if (!handled) this.ok = false;
    this.remaining -= 1;
    if (this.remaining > 0) return false;
    this.#resolve(this.ok);
    return true;
  }
}

class MemorySubscription implements Subscription {
  readonly queue = new Deque<EventEnvelope>();
  active = true;
  running = false;
  /** Resolvers waiting for this subscription to become idle. */
  idleWaiters: (() => void)[] = [];
  /** Events the handler in progress took from the queue besides the one it was given. */
  readonly taken: EventEnvelope[] = [];
  /**
   * What every handler call of this subscription gets: no log position (the bus keeps no log),
   * and the queued events to take along.
   */
  readonly delivery: Delivery = {
    takeQueued: (max: number): EventEnvelope[] => {
      const out: EventEnvelope[] = [];
      while (out.length < max && this.active) {
        const next = this.queue.shift();
        if (next === undefined) break;
        out.push(next);
        this.taken.push(next);
      }
      return out;
    },
  };

  constructor(
    readonly name: string,
    readonly pattern: string,
    readonly handler: EventHandler,
    readonly maxQueue: number,
    readonly overflow: OverflowPolicy,
    /** Publishers may wait for its handling ({@link PublishResult.handled}). */
    readonly durable: boolean,
    private readonly remove: (sub: MemorySubscription) => Promise<void>,
  ) {}

  unsubscribe(): Promise<void> {
    return this.remove(this);
  }

  whenIdle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

/**
 * The in-process {@link EventBus}. Build it with {@link createInMemoryEventBus}.
 *
 * Overflow: each subscription queues at most `maxQueue` events; see {@link OverflowPolicy} for
 * what happens beyond. Duplicates: an event published with an explicit `id` seen within the
 * duplicate window is not delivered again and resolves with `duplicate: true`. Close: new
 * publishes are refused, queued events are still delivered, then the bus resolves.
 * Events are shared between subscribers: handlers must not mutate them.
 */
export class InMemoryEventBus<M extends TopicMap = FleetgateTopics> implements EventBus<M> {
  readonly #trie = new TopicTrie<MemorySubscription>();
  readonly #subscriptions = new Set<MemorySubscription>();
  /** Subscriptions with a drain loop scheduled or running (idle() must not scan them all). */
  readonly #running = new Set<MemorySubscription>();
  /** topic → matching subscriptions; cleared whenever subscriptions change. */
  readonly #matchCache = new Map<string, MemorySubscription[]>();
  /** Events queued for durable subscriptions, until each of them is done with it. */
  readonly #handling = new Map<EventEnvelope, DurableHandling>();
  /** The outbox row of each event relayed from one, for its deliveries. */
  readonly #outboxSeqs = new WeakMap<EventEnvelope, number>();
  /** The same, by explicit event id: a duplicate publish waits for the first one's handling. */
  readonly #handlingById = new Map<string, DurableHandling>();
  readonly #duplicates: DuplicateWindow;
  /** The duplicate window's clock, read once per publish with an explicit id (check and record). */
  readonly #now: () => number;
  readonly #nextId = createEventIdGenerator();
  readonly #clock = createClock();
  readonly #maxQueue: number;
  readonly #overflow: OverflowPolicy;
  readonly #onUnreported: UnreportedErrorHandler;
  readonly #reportError: ReportFailure;
  #state: 'open' | 'closing' | 'closed' = 'open';
  #closed: Promise<void> | undefined;
  readonly #stats: Omit<InMemoryBusStats, 'subscriptions'> = {
    published: 0,
    duplicates: 0,
    delivered: 0,
    handlerFailures: 0,
    overflows: 0,
    dropped: 0,
  };

  constructor(options: InMemoryEventBusOptions = {}) {
    this.#maxQueue = positiveInt(options.maxQueue ?? DEFAULT_MAX_QUEUE, 'maxQueue');
    this.#overflow = options.overflow ?? 'reject';
    this.#onUnreported = options.onUnreportedError ?? warnUnreportedError;
    this.#reportError = createFailureReporter({
      reportsClosed: () => this.#state === 'closed',
      publishReport: (payload, publishOptions, onRefused) => {
        try {
          const subs = this.#match('system.error');
          const refused = this.#deliver('system.error', payload, publishOptions, subs);
          // Told a turn later, as a rejected publish would tell it.
          if (refused instanceof FleetgateError) queueMicrotask(() => onRefused(refused));
        } catch (reportError) {
          onRefused(reportError);
        }
      },
      onUnreported: this.#onUnreported,
    });
    this.#now = options.now ?? Date.now;
    this.#duplicates = new DuplicateWindow(
      options.duplicateWindowMs ?? 120_000,
      options.duplicateWindowSize ?? 100_000,
      this.#now,
    );
  }

  /** A snapshot of the bus counters. */
  stats(): InMemoryBusStats {
    return { ...this.#stats, subscriptions: this.#subscriptions.size };
  }

  publish<T extends TopicOf<M>>(
    topic: T,
    payload: M[T],
    options: PublishOptions = {},
  ): Promise<PublishResult> {
    const subs = this.#match(topic);
    if (this.#state !== 'open') return Promise.reject(busClosed({ topic }));
    const accepted = this.#deliver(topic, payload, options, subs);
    return accepted instanceof FleetgateError
      ? Promise.reject(accepted)
      : Promise.resolve(accepted);
  }

  /**
   * {@link publish} without the promise, for a hot path that can take the answer at once: this bus
   * accepts or refuses an event synchronously, so `publishNow` returns what `publish` resolves to
   * and throws what it rejects with (`FLEETGATE_BUS_CLOSED`, `FLEETGATE_BUS_OVERFLOW`). The
   * extension runtime publishes through it when the bus has it: no promise to settle, nothing to
   * await between the hooks of a call. (A subclass that changes `publish` changes this too.)
   */
  publishNow<T extends TopicOf<M>>(
    topic: T,
    payload: M[T],
    options: PublishOptions = {},
  ): PublishResult {
    const subs = this.#match(topic);
    if (this.#state !== 'open') throw busClosed({ topic });
    const accepted = this.#deliver(topic, payload, options, subs);
    if (accepted instanceof FleetgateError) throw accepted;
    return accepted;
  }

  subscribe<P extends string>(
    pattern: P,
    handler: EventHandler<EventFor<M, P>>,
    options: SubscribeOptions,
  ): Promise<Subscription> {
    const name = checkSubscription(pattern, options);
    const maxQueue = positiveInt(options.maxQueue ?? this.#maxQueue, 'maxQueue');
    if (this.#state !== 'open') return Promise.reject(busClosed({ pattern }));
    const sub = new MemorySubscription(
      name,
      pattern,
      // The handler's event type is the union EventFor<M, P>; the trie guarantees the topic fits.
      handler as EventHandler,
      maxQueue,
      options.overflow ?? this.#overflow,
      options.durable === true,
      (s) => this.#unsubscribe(s),
    );
    this.#trie.add(pattern, sub);
    this.#subscriptions.add(sub);
    this.#matchCache.clear();
    return Promise.resolve(sub);
  }

  /** Resolves when every queue is empty and no handler is running (tests wait on this). */
  async idle(): Promise<void> {
    for (;;) {
      if (this.#running.size === 0) return;
      await Promise.all([...this.#running].map((s) => s.whenIdle()));
    }
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    this.#state = 'closing';
    // Queued events are delivered; handler failures during this still reach system.error.
    await this.idle();
    this.#state = 'closed';
    for (const sub of this.#subscriptions) {
      sub.active = false;
      this.#letGo(sub);
    }
    this.#subscriptions.clear();
    this.#matchCache.clear();
  }

  /** Clears a subscription's queue; durable handling of what it held ends unhandled. */
  #letGo(sub: MemorySubscription): void {
    if (sub.durable) {
      for (let event = sub.queue.shift(); event !== undefined; event = sub.queue.shift()) {
        this.#done(event, false);
      }
    }
    sub.queue.clear();
  }

  /** A durable subscription is done with `event` (handled or not). */
  #done(event: EventEnvelope, handled: boolean): void {
    const handling = this.#handling.get(event);
    if (handling === undefined || !handling.done(handled)) return;
    this.#handling.delete(event);
    if (this.#handlingById.get(event.id) === handling) this.#handlingById.delete(event.id);
  }

  #match(topic: string): MemorySubscription[] {
    return (
      this.#matchCache.get(topic) ??
      remember(
        this.#matchCache,
        MATCH_CACHE_LIMIT,
        topic,
        this.#trie.matchTokens(parseTopic(topic)),
      )
    );
  }

  #deliver(
    topic: string,
    payload: unknown,
    options: PublishOptions,
    subs: readonly MemorySubscription[],
  ): PublishResult | FleetgateError {
    const explicitId = options.id;
    checkEventId(explicitId);
    // A duplicate is answered first; then every queue is checked before any is touched, so a
    // rejected event reaches no subscriber at all and its id is not recorded.
    let full: MemorySubscription | undefined;
    for (const sub of subs) {
      if (sub.queue.length >= sub.maxQueue && sub.overflow === 'reject') {
        full = sub;
        break;
      }
    }
    if (explicitId !== undefined) {
      const now = this.#now();
      const duplicate =
        full === undefined
          ? !this.#duplicates.admit(explicitId, now)
          : this.#duplicates.has(explicitId, now);
      if (duplicate) {
        this.#stats.duplicates += 1;
        // Still being handled: the duplicate's publisher waits for the same handling.
        const pending = this.#handlingById.get(explicitId);
        return pending === undefined
          ? { id: explicitId, duplicate: true }
          : { id: explicitId, duplicate: true, handled: pending.handled };
      }
    }
    if (full !== undefined) {
      this.#stats.overflows += 1;
      const error = new FleetgateError(
        'FLEETGATE_BUS_OVERFLOW',
        `Subscription ${full.name} has ${full.queue.length} queued events (limit ${full.maxQueue}); ${topic} was not published`,
        { details: { subscription: full.name, topic, maxQueue: full.maxQueue } },
      );
      this.#reportError(error, `subscription:${full.name}`, topic, explicitId);
      return error;
    }
    const id = explicitId ?? this.#nextId();
    this.#stats.published += 1;
    // Nobody listens: no envelope to build (and no clock to read for its time).
    if (subs.length === 0) return { id, duplicate: false };
    const event = stampEnvelope(id, topic, payload, options, this.#clock);
    if (options.outboxSeq !== undefined) this.#outboxSeqs.set(event, options.outboxSeq);
    let durable = 0;
    for (const sub of subs) if (sub.durable) durable += 1;
    let handling: DurableHandling | undefined;
    if (durable > 0) {
      handling = new DurableHandling(durable);
      this.#handling.set(event, handling);
      if (explicitId !== undefined) this.#handlingById.set(explicitId, handling);
    }
    for (const sub of subs) {
      if (sub.queue.length >= sub.maxQueue) {
        const dropped = sub.queue.shift();
        if (dropped !== undefined && sub.durable) this.#done(dropped, false);
        this.#stats.dropped += 1;
        const error = new FleetgateError(
          'FLEETGATE_BUS_OVERFLOW',
          `Subscription ${sub.name} is full (limit ${sub.maxQueue}); dropped its oldest queued event`,
          { details: { subscription: sub.name, droppedEventId: dropped?.id } },
        );
        this.#reportError(error, `subscription:${sub.name}`, dropped?.topic, dropped?.id);
      }
      sub.queue.push(event);
      if (!sub.running) {
        sub.running = true;
        this.#running.add(sub);
        queueMicrotask(() => void this.#drain(sub));
      }
    }
    return handling === undefined
      ? { id, duplicate: false }
      : { id, duplicate: false, handled: handling.handled };
  }

  async #drain(sub: MemorySubscription): Promise<void> {
    while (sub.active) {
      const event = sub.queue.shift();
      if (event === undefined) break;
      try {
        const outboxSeq = this.#outboxSeqs.get(event);
        const result = sub.handler(
          event,
          outboxSeq === undefined ? sub.delivery : { ...sub.delivery, outboxSeq },
        );
        // Only a returned promise costs an await; synchronous handlers stay on the fast path.
        if (result !== undefined) await result;
        this.#stats.delivered += 1 + sub.taken.length;
      } catch (error) {
        this.#stats.handlerFailures += 1;
        const wrapped = new FleetgateError(
          'FLEETGATE_BUS_HANDLER_FAILED',
          `Handler of subscription ${sub.name} failed on ${event.topic} ${event.id}` +
            (sub.taken.length === 0
              ? ''
              : ` and the ${sub.taken.length} events it took along (${sub.taken.map((e) => e.id).join(', ')})`) +
            `: ${errorMessage(error)}`,
          {
            cause: error,
            details: {
              subscription: sub.name,
              topic: event.topic,
              eventId: event.id,
              // The events it took along failed with it.
              ...(sub.taken.length === 0 ? {} : { takenEventIds: sub.taken.map((e) => e.id) }),
            },
          },
        );
        this.#reportError(
          wrapped,
          `subscription:${sub.name}`,
          event.topic,
          event.id,
          event.correlationId,
        );
      }
      // A failed handler is reported and done with the event, as a dead letter is on JetStream;
      // so are the events it took along.
      if (sub.durable) this.#done(event, true);
      if (sub.taken.length > 0) {
        if (sub.durable) for (const other of sub.taken) this.#done(other, true);
        sub.taken.length = 0;
      }
    }
    sub.running = false;
    this.#running.delete(sub);
    const waiters = sub.idleWaiters;
    sub.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  async #unsubscribe(sub: MemorySubscription): Promise<void> {
    if (sub.active) {
      sub.active = false;
      this.#letGo(sub);
      this.#trie.remove(sub.pattern, sub);
      this.#subscriptions.delete(sub);
      this.#matchCache.clear();
    }
    await sub.whenIdle();
  }
}

function positiveInt(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new FleetgateError(
      'FLEETGATE_BUS_SUBSCRIPTION_INVALID',
      `${what} must be a positive integer`,
      {
        details: { [what]: value },
      },
    );
  }
  return value;
}

/**
 * Creates the embedded in-process event bus.
 *
 * @example
 * ```ts
 * const bus = createInMemoryEventBus({ maxQueue: 1000 });
 * await bus.subscribe('ops.alert.>', (e) => console.log(e.payload.message), { name: 'log' });
 * ```
 */
export function createInMemoryEventBus<M extends TopicMap = FleetgateTopics>(
  options: InMemoryEventBusOptions = {},
): InMemoryEventBus<M> {
  return new InMemoryEventBus<M>(options);
}
