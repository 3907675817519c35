/**
 * The distributed bus: NATS JetStream, for several gateway replicas sharing one fleet.
 *
 * - One stream holds `<prefix>.>` (events) and `<dlqPrefix>.>` (dead letters); it is created or
 *   updated on connect. Topic `a.b` travels on subject `<prefix>.a.b`.
 * - `publish` sends with `Nats-Msg-Id` = event id and resolves on the server's acknowledgement;
 *   a re-send of the same id within the stream's duplicate window is dropped by the server and
 *   resolves with `duplicate: true`.
 * - Durable subscriptions are durable pull consumers (one filter subject each: nats-server 2.9 has
 *   no multi-filter consumers) with explicit acks sent after the handler resolved, redelivery with
 *   a delay on failure, and after `maxDeliver` failed tries the event goes to the dead-letter
 *   subject `<dlqPrefix>.<topic>`. Handlers run at least once per event; dedupe by event id.
 * - Non-durable subscriptions are ordered ephemeral consumers (live tails): no acks, no retry;
 *   re-created by the bus from the next event when the connection comes back (`live-consumer.ts`).
 * - The connection reconnects forever; acknowledged events are on the server, and consumers
 *   resume from their position after a reconnect.
 *
 * Needs nats-server 2.9.4 or later (the simplified consumer API); uses nothing from 2.10.
 */
import type {
  ConsumerConfig,
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from '@nats-io/jetstream';
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { headers, nanos } from '@nats-io/transport-node';
import { FleetgateError, isFleetgateError } from '../../protocol/index.js';
import { DuplicateWindow } from '../duplicate-window.js';
import { createClock, createEventIdGenerator, stampEnvelope } from '../event-stamps.js';
import { checkSubscriptionName, errorMessage } from '../subscription-name.js';
import { parseTopic } from '../topic-pattern.js';
import { busClosed, checkEventId, checkSubscription } from '../bus-checks.js';
import { createFailureReporter, type ReportFailure } from '../failure-reporter.js';
import type {
  EventEnvelope,
  EventFor,
  FleetgateTopics,
  TopicMap,
  TopicOf,
} from '../../protocol/index.js';
import type {
  EventBus,
  EventHandler,
  PublishOptions,
  PublishResult,
  SubscribeOptions,
  Subscription,
  UnreportedErrorHandler,
} from '../types.js';
import { DEAD_LETTER_HEADERS, decodeEnvelope, encodeEnvelope } from './codec.js';
import { openLiveConsumer } from './live-consumer.js';
import type { DeadLetter, ResolvedJetStreamOptions } from './options.js';

interface ActiveSubscription extends Subscription {
  stop(): Promise<void>;
  /**
   * Ids this durable subscription already handled. A server that crashes can lose recent acks
   * (consumer state is flushed asynchronously) and redeliver; those redeliveries are acked again
   * without calling the handler. Bounded, and per process: handlers still dedupe by id.
   */
  readonly handled: DuplicateWindow | undefined;
}

/** Bytes kept free for the headers of a message (`Nats-Msg-Id` and the header block). */
const HEADER_ALLOWANCE = 64;

function tooLarge(
  topic: string,
  id: string,
  bytes: number,
  max: number | undefined,
  cause: unknown,
): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_EVENT_TOO_LARGE',
    `Event ${id} (${topic}) is ${bytes} bytes, more than NATS carries` +
      (max === undefined ? '' : ` (max_payload ${max})`) +
      '; it was not published.',
    { cause, details: { topic, eventId: id, bytes, maxPayload: max } },
  );
}

/** Redelivery delay of events a stopping durable subscription had pulled but not handled. */
const STOP_NAK_DELAY_MS = 1_000;

/** Most ids a durable subscription remembers as handled. */
const HANDLED_IDS = 10_000;

/**
 * The NATS JetStream {@link EventBus}. Build it with {@link createJetStreamEventBus}, which
 * connects and sets up the stream.
 */
export class JetStreamEventBus<M extends TopicMap = FleetgateTopics> implements EventBus<M> {
  readonly #nc: NatsConnection;
  readonly #ownsConnection: boolean;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #options: ResolvedJetStreamOptions;
  readonly #onUnreported: UnreportedErrorHandler;
  readonly #report: ReportFailure;
  readonly #nextId = createEventIdGenerator();
  readonly #clock = createClock();
  readonly #subscriptions = new Set<ActiveSubscription>();
  readonly #pendingReports = new Set<Promise<void>>();
  /** Set once close() stopped every subscription: later failures can no longer be published. */
  #reportsClosed = false;
  #closed: Promise<void> | undefined;

  /** Use `createJetStreamEventBus`, which connects and sets up the stream first. */
  constructor(
    nc: NatsConnection,
    ownsConnection: boolean,
    js: JetStreamClient,
    jsm: JetStreamManager,
    options: ResolvedJetStreamOptions,
    onUnreported: UnreportedErrorHandler,
  ) {
    this.#nc = nc;
    this.#ownsConnection = ownsConnection;
    this.#js = js;
    this.#jsm = jsm;
    this.#options = options;
    this.#onUnreported = onUnreported;
    this.#report = createFailureReporter({
      // Failures while closing (handlers finishing) are still published; after that they cannot be.
      reportsClosed: () => this.#reportsClosed,
      publishReport: (payload, publishOptions, onRefused) => {
        const report = this.#publish('system.error', payload, publishOptions).then(
          () => undefined,
          onRefused,
        );
        // close() waits for these, so a failure reported just before shutdown still reaches the bus.
        this.#pendingReports.add(report);
        void report.finally(() => this.#pendingReports.delete(report));
      },
      onUnreported,
    });
  }

  /** The resolved options (stream name, prefixes, limits). */
  get options(): ResolvedJetStreamOptions {
    return this.#options;
  }

  /** The server's `max_payload` (envelope and headers included), once connected. */
  get maxPayloadBytes(): number | undefined {
    return this.#nc.info?.max_payload;
  }

  /** The NATS connection (for tooling and tests). */
  get connection(): NatsConnection {
    return this.#nc;
  }

  /** The NATS subject a topic travels on. */
  subjectOf(topic: string): string {
    return `${this.#options.subjectPrefix}.${topic}`;
  }

  /** The dead-letter subject of a topic. */
  deadLetterSubjectOf(topic: string): string {
    return `${this.#options.deadLetterPrefix}.${topic}`;
  }

  publish<T extends TopicOf<M>>(
    topic: T,
    payload: M[T],
    options: PublishOptions = {},
  ): Promise<PublishResult> {
    parseTopic(topic);
    checkEventId(options.id);
    if (this.#closed !== undefined) return Promise.reject(busClosed({ topic }));
    return this.#publish(topic, payload, options);
  }

  async #publish(topic: string, payload: unknown, options: PublishOptions): Promise<PublishResult> {
    const id = options.id ?? this.#nextId();
    const event = stampEnvelope(id, topic, payload, options, this.#clock);
    const data = encodeEnvelope(event);
    const max = this.maxPayloadBytes;
    // The Nats-Msg-Id header travels with the message and counts against max_payload too.
    if (max !== undefined && data.byteLength + HEADER_ALLOWANCE + id.length > max) {
      throw tooLarge(topic, id, data.byteLength, max, undefined);
    }
    try {
      const ack = await this.#js.publish(this.subjectOf(topic), data, {
        msgID: id,
        timeout: this.#options.publishTimeoutMs,
      });
      return { id, duplicate: ack.duplicate, sequence: ack.seq };
    } catch (cause) {
      // The client's own size check, or the stream's max_msg_size on the server.
      if (
        /max_payload|maximum payload|message size exceeds|max_msg_size/i.test(errorMessage(cause))
      ) {
        throw tooLarge(topic, id, data.byteLength, max, cause);
      }
      throw new FleetgateError(
        'FLEETGATE_BUS_PUBLISH_FAILED',
        `Publishing ${topic} ${id} to JetStream failed: ${errorMessage(cause)}`,
        { cause, details: { topic, eventId: id, stream: this.#options.stream } },
      );
    }
  }

  subscribe<P extends string>(
    pattern: P,
    handler: EventHandler<EventFor<M, P>>,
    options: SubscribeOptions,
  ): Promise<Subscription> {
    const onEvent = handler as EventHandler;
    return this.#subscribe(this.subjectOf(pattern), pattern, options, (msg, sub) =>
      this.#handleEvent(msg, sub, onEvent, options.durable === true),
    );
  }

  /**
   * Subscribes to dead letters whose topic matches `pattern` (a durable or live subscription like
   * any other; its own failures are reported but never dead-lettered again).
   */
  subscribeDeadLetters(
    pattern: string,
    handler: (deadLetter: DeadLetter) => void | Promise<void>,
    options: SubscribeOptions,
  ): Promise<Subscription> {
    const prefixLength = this.#options.deadLetterPrefix.length + 1;
    const subject = this.deadLetterSubjectOf(pattern);
    return this.#subscribe(subject, pattern, options, async (msg, sub) => {
      try {
        const event = decodeEnvelope(msg.data, msg.subject.slice(prefixLength));
        await handler({
          event,
          subscription: msg.headers?.get(DEAD_LETTER_HEADERS.subscription) ?? '',
          deliveries: Number(msg.headers?.get(DEAD_LETTER_HEADERS.deliveries) ?? 0),
          error: msg.headers?.get(DEAD_LETTER_HEADERS.error) ?? '',
        });
        if (options.durable === true) await msg.ackAck();
      } catch (error) {
        this.#onUnreported(error, { source: `dead-letters:${sub.name}`, subject: msg.subject });
        if (options.durable === true) msg.nak(this.#options.redeliveryDelayMs);
      }
    });
  }

  /** Deletes a durable subscription's consumer (its position is lost). */
  async deleteDurable(name: string): Promise<void> {
    checkSubscriptionName(name);
    await this.#jsm.consumers.delete(this.#options.stream, name);
  }

  /** Checks a subscription (throwing at the call), refuses it once closed, then consumes. */
  #subscribe(
    filterSubject: string,
    pattern: string,
    options: SubscribeOptions,
    onMessage: (msg: JsMsg, sub: ActiveSubscription) => Promise<void>,
  ): Promise<Subscription> {
    const name = checkSubscription(pattern, options);
    if (this.#closed !== undefined) return Promise.reject(busClosed({ pattern }));
    return this.#consume(filterSubject, pattern, name, options, onMessage);
  }

  async #consume(
    filterSubject: string,
    pattern: string,
    name: string,
    options: SubscribeOptions,
    onMessage: (msg: JsMsg, sub: ActiveSubscription) => Promise<void>,
  ): Promise<Subscription> {
    const stream = this.#options.stream;
    const durable = options.durable === true;
    let active = true;
    let inFlight: Promise<void> = Promise.resolve();
    /** Durable: messages pulled and not yet handled, the one being handled first. */
    const held: JsMsg[] = [];
    let current: JsMsg | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    let stopDelivery = (): void => undefined;
    let delivered: Promise<void> = Promise.resolve();
    const sub: ActiveSubscription = {
      name,
      pattern,
      handled: durable
        ? new DuplicateWindow(this.#options.duplicateWindowMs, HANDLED_IDS)
        : undefined,
      unsubscribe: async () => {
        await sub.stop();
      },
      stop: async () => {
        if (active) {
          active = false;
          this.#subscriptions.delete(sub);
          stopDelivery();
        }
        await delivered;
        await inFlight;
        if (heartbeat !== undefined) clearInterval(heartbeat);
      },
    };
    const handle = async (msg: JsMsg): Promise<void> => {
      if (!active) {
        // Pulled but not handled: hand it back now instead of after ack_wait. The short delay
        // lets the server drop this subscription's pull request first; an immediate nak can be
        // redelivered into that stale request and then waits for ack_wait after all.
        if (durable) msg.nak(STOP_NAK_DELAY_MS);
        return;
      }
      current = msg;
      inFlight = onMessage(msg, sub);
      try {
        await inFlight;
      } finally {
        current = undefined;
      }
    };
    const onLoopError = (error: unknown): void => {
      if (active) this.#onUnreported(error, { source: `subscription:${name}`, pattern });
    };

    try {
      if (durable) {
        await this.#ensureDurable(name, filterSubject, options.from === 'all' ? 'all' : 'new');
        const consumer = await this.#js.consumers.get(stream, name);
        const messages = await consumer.consume({ max_messages: 256 });
        stopDelivery = () => messages.stop();
        delivered = this.#consumeHeld(messages, held, handle, () => active, onLoopError);
        // A slow handler is not a failed one (the materialiser waits out a database outage):
        // every message this subscription holds is reported in progress well within ack_wait,
        // so the server neither redelivers it nor counts a delivery toward maxDeliver meanwhile.
        heartbeat = setInterval(
          () => {
            current?.working();
            for (const msg of held) msg.working();
          },
          Math.max(100, Math.floor(this.#options.ackWaitMs / 3)),
        );
        heartbeat.unref();
      } else {
        // "new" is pinned to the stream's last sequence now, so a consumer that is re-created
        // (after a reconnect) before its first event never replays history.
        const from = options.from ?? 'new';
        const startSeq =
          from === 'all'
            ? 1
            : typeof from === 'object'
              ? Math.max(1, Math.trunc(from.sequence))
              : (await this.#jsm.streams.info(stream)).state.last_seq + 1;
        const live = await openLiveConsumer({
          nc: this.#nc,
          js: this.#js,
          stream,
          filterSubject,
          startSeq,
          handle,
          onError: onLoopError,
        });
        stopDelivery = () => live.stop();
        delivered = live.done;
      }
    } catch (cause) {
      if (isFleetgateError(cause)) throw cause;
      throw new FleetgateError(
        'FLEETGATE_BUS_CONNECT_FAILED',
        `Could not set up subscription ${name} on ${pattern}: ${errorMessage(cause)}`,
        { cause, details: { subscription: name, pattern, stream } },
      );
    }
    this.#subscriptions.add(sub);
    return sub;
  }

  /**
   * A durable subscription's loop: messages are taken from the client's buffer as they arrive
   * into `held` (where the heartbeat can reach them) and handled one at a time, in order. `held`
   * is bounded by the consumer's `max_ack_pending`.
   */
  async #consumeHeld(
    messages: ConsumerMessages,
    held: JsMsg[],
    handle: (msg: JsMsg) => Promise<void>,
    isActive: () => boolean,
    onError: (error: unknown) => void,
  ): Promise<void> {
    let wake: (() => void) | undefined;
    let ended = false;
    const reader = (async () => {
      try {
        for await (const msg of messages) {
          held.push(msg);
          wake?.();
        }
      } catch (error) {
        if (isActive()) onError(error);
      } finally {
        ended = true;
        wake?.();
      }
    })();
    for (;;) {
      const msg = held.shift();
      if (msg === undefined) {
        if (ended) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      try {
        await handle(msg);
      } catch (error) {
        onError(error);
      }
    }
    await reader;
  }

  async #ensureDurable(name: string, filterSubject: string, from: 'new' | 'all'): Promise<void> {
    const stream = this.#options.stream;
    const existing = await this.#jsm.consumers.info(stream, name).catch(() => undefined);
    if (existing !== undefined) {
      if (existing.config.filter_subject !== filterSubject) {
        throw new FleetgateError(
          'FLEETGATE_BUS_SUBSCRIPTION_INVALID',
          `Durable subscription ${name} exists with filter ${String(existing.config.filter_subject)}, not ${filterSubject}; delete it first (deleteDurable)`,
          {
            details: {
              subscription: name,
              existing: existing.config.filter_subject,
              wanted: filterSubject,
            },
          },
        );
      }
      return;
    }
    const config: Partial<ConsumerConfig> = {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: from === 'all' ? DeliverPolicy.All : DeliverPolicy.New,
      filter_subject: filterSubject,
      // One more than the client's limit: if a process dies during the last try, the next
      // delivery (over the limit) goes straight to the dead-letter subject.
      max_deliver: this.#options.maxDeliver + 1,
      ack_wait: nanos(this.#options.ackWaitMs),
      max_ack_pending: 1000,
    };
    try {
      await this.#jsm.consumers.add(stream, config);
    } catch (cause) {
      // Another replica may have created it at the same moment; accept it if it matches.
      const raced = await this.#jsm.consumers.info(stream, name).catch(() => undefined);
      if (raced?.config.filter_subject !== filterSubject) throw cause;
    }
  }

  async #handleEvent(
    msg: JsMsg,
    sub: ActiveSubscription,
    handler: EventHandler,
    durable: boolean,
  ): Promise<void> {
    const topic = msg.subject.slice(this.#options.subjectPrefix.length + 1);
    let event: EventEnvelope;
    try {
      event = decodeEnvelope(msg.data, topic);
    } catch (error) {
      this.#report(error, `subscription:${sub.name}`, topic, msg.headers?.get('Nats-Msg-Id'));
      // A body that cannot be decoded will never decode: dead-letter it instead of retrying.
      if (durable) await this.#deadLetter(msg, sub, topic, errorMessage(error));
      return;
    }
    if (sub.handled?.has(event.id) === true) {
      await this.#ack(msg, sub, event.id);
      return;
    }
    const deliveries = msg.info.deliveryCount;
    const maxDeliver = this.#options.maxDeliver;
    if (durable && deliveries > maxDeliver) {
      await this.#deadLetter(msg, sub, topic, 'delivered more often than maxDeliver');
      return;
    }
    try {
      await handler(event, { sequence: msg.info.streamSequence });
    } catch (error) {
      const wrapped = new FleetgateError(
        'FLEETGATE_BUS_HANDLER_FAILED',
        `Handler of subscription ${sub.name} failed on ${topic} ${event.id} (try ${deliveries}): ${errorMessage(error)}`,
        { cause: error, details: { subscription: sub.name, topic, eventId: event.id, deliveries } },
      );
      this.#report(wrapped, `subscription:${sub.name}`, topic, event.id, event.correlationId);
      if (!durable) return;
      if (deliveries >= maxDeliver) await this.#deadLetter(msg, sub, topic, errorMessage(error));
      else msg.nak(this.#options.redeliveryDelayMs);
      return;
    }
    if (durable) {
      sub.handled?.add(event.id);
      await this.#ack(msg, sub, event.id);
    }
  }

  async #ack(msg: JsMsg, sub: ActiveSubscription, eventId: string): Promise<void> {
    // Double ack: resolves once the server received the ack, so a restarted subscriber does not
    // get the event again (a crashed server may still lose it: see ActiveSubscription.handled).
    await msg.ackAck().catch((error: unknown) => {
      this.#onUnreported(error, { source: `subscription:${sub.name}`, eventId, ack: true });
    });
  }

  async #deadLetter(
    msg: JsMsg,
    sub: ActiveSubscription,
    topic: string,
    reason: string,
  ): Promise<void> {
    const h = headers();
    h.set(DEAD_LETTER_HEADERS.subscription, sub.name);
    h.set(DEAD_LETTER_HEADERS.deliveries, String(msg.info.deliveryCount));
    h.set(DEAD_LETTER_HEADERS.error, reason.replace(/[\r\n]+/gu, ' ').slice(0, 1000));
    h.set(DEAD_LETTER_HEADERS.streamSequence, String(msg.info.streamSequence));
    const eventId = msg.headers?.get('Nats-Msg-Id') ?? `seq-${msg.info.streamSequence}`;
    try {
      await this.#js.publish(this.deadLetterSubjectOf(topic), msg.data, {
        headers: h,
        // Dead-lettering the same event for the same subscription twice stores it once.
        msgID: `${eventId}:dead-letter:${sub.name}`,
        timeout: this.#options.publishTimeoutMs,
      });
    } catch (error) {
      this.#onUnreported(error, { source: `subscription:${sub.name}`, eventId, deadLetter: true });
      msg.nak(this.#options.redeliveryDelayMs);
      return;
    }
    msg.term(`dead-lettered: ${reason}`.slice(0, 200));
    this.#report(
      new FleetgateError(
        'FLEETGATE_BUS_DEAD_LETTERED',
        `Event ${eventId} on ${topic} moved to ${this.deadLetterSubjectOf(topic)} after ${msg.info.deliveryCount} deliveries to ${sub.name}: ${reason}`,
        { details: { subscription: sub.name, topic, eventId } },
      ),
      `subscription:${sub.name}`,
      topic,
      eventId,
    );
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    await Promise.all([...this.#subscriptions].map((s) => s.stop()));
    await Promise.all([...this.#pendingReports]);
    this.#reportsClosed = true;
    // drain() flushes pending acks before closing, so handled events are not redelivered.
    if (this.#ownsConnection && !this.#nc.isClosed()) await this.#nc.drain();
  }
}
