/**
 * Delivery of a live (non-durable) subscription: an ordered consumer that the bus re-creates
 * itself, starting after the last event it handed on, whenever the one it reads ends or may have
 * stalled — the connection came back, the client library reset it, the server lost it.
 *
 * Why the client library's own recovery is not enough (@nats-io/jetstream 3.3): after a server
 * restart (an ordered consumer lives in memory and is gone) or a gap it re-creates the consumer,
 * but its first pull on the new one still counts the messages the dead pull request had asked
 * for, so it asks only for what is left of the batch (often one). Once those arrived nothing pulls
 * again until two idle heartbeats (15 s each) were missed: live events stalled for 30–45 s after
 * every NATS restart. And when JetStream does not answer yet right after a reconnect, it waits a
 * jittered 15–45 s before asking again.
 */
import type { Consumer, ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** Options of {@link openLiveConsumer}. */
export interface LiveConsumerOptions {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly stream: string;
  readonly filterSubject: string;
  /** Stream sequence of the first event to deliver. */
  readonly startSeq: number;
  /**
   * Called with each event in stream order and awaited before the next; never twice for one
   * stream sequence, also across re-creations.
   */
  readonly handle: (msg: JsMsg) => Promise<void>;
  /** Told when delivery ended on an error, and of the first failed re-creation of each run. */
  readonly onError: (error: unknown) => void;
}

/** A running live delivery. */
export interface LiveConsumer {
  /** Ends delivery; `done` resolves once the event in hand (if any) was handled. */
  stop(): void;
  /** Resolves when delivery ended for good: stopped, or the connection closed. */
  readonly done: Promise<void>;
}

/** Messages asked for per pull. */
const MAX_MESSAGES = 256;

/** Waits between failed re-creations; the last one repeats. */
const RETRY_MS = [100, 250, 500, 1_000, 2_000] as const;

/** How the library ends a consumer the server no longer has: expected, not worth a report. */
const CONSUMER_GONE = /consumer (not found|deleted)/iu;

/** One ordered consumer and what it delivers. */
interface Generation {
  readonly consumer: Consumer;
  readonly messages: ConsumerMessages;
}

async function open(options: LiveConsumerOptions, startSeq: number): Promise<Generation> {
  const consumer = await options.js.consumers.get(options.stream, {
    filter_subjects: options.filterSubject,
    opt_start_seq: startSeq,
  });
  // A consumer the server lost ends the messages with an error (then re-created here) instead
  // of the library re-creating it with a short pull.
  const messages = await consumer.consume({
    max_messages: MAX_MESSAGES,
    abort_on_missing_resource: true,
  });
  return { consumer, messages };
}

/**
 * Opens the ordered consumer from `startSeq` (rejects when it cannot) and delivers from it,
 * re-creating it from the next undelivered event as needed until stopped.
 */
export async function openLiveConsumer(options: LiveConsumerOptions): Promise<LiveConsumer> {
  let generation = await open(options, options.startSeq);
  let next = options.startSeq;
  let active = true;
  /** Wakes a wait between failed re-creations (a reconnect, or stop). */
  let wake: (() => void) | undefined;
  const restart = (): void => {
    generation.messages.stop();
    wake?.();
  };

  // The connection came back: whatever the consumer was doing, a new one from `next` is sure.
  const status = options.nc.status();
  const watching = (async () => {
    try {
      for await (const s of status) if (s.type === 'reconnect' && active) restart();
    } catch (error) {
      options.onError(error);
    }
  })();

  const deliver = async ({ messages }: Generation): Promise<void> => {
    // The library reset the consumer (a gap): the new one it made would get the short pull.
    const notifications = messages.status();
    const resets = (async () => {
      for await (const n of notifications) if (n.type === 'reset') messages.stop();
    })();
    try {
      for await (const msg of messages) {
        const seq = msg.info.streamSequence;
        if (seq < next) continue;
        next = seq + 1;
        await options.handle(msg);
      }
    } catch (error) {
      if (active && !CONSUMER_GONE.test(error instanceof Error ? error.message : '')) {
        options.onError(error);
      }
    }
    stopIterator(notifications);
    await resets;
  };

  const reopen = async (): Promise<Generation | undefined> => {
    for (let attempt = 0; active && !options.nc.isClosed(); attempt += 1) {
      try {
        const opened = await open(options, next);
        if (active) return opened;
        opened.messages.stop();
        return undefined;
      } catch (error) {
        if (attempt === 0 && active) options.onError(error);
        const ms = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)];
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
    return undefined;
  };

  const done = (async () => {
    for (;;) {
      await deliver(generation);
      if (!active || options.nc.isClosed()) break;
      const previous = generation.consumer;
      const reopened = await reopen();
      if (reopened === undefined) break;
      generation = reopened;
      // Usually gone with the server already; one that is not would idle on the server until
      // its inactive threshold (5 minutes). Nothing depends on this succeeding.
      previous.delete().catch(() => false);
    }
    stopIterator(status);
    await watching;
  })();

  return {
    stop: () => {
      if (!active) return;
      active = false;
      restart();
    },
    done,
  };
}

/**
 * Ends an iterator of statuses or notifications: the client returns its queued iterators, which
 * have `stop()`, typed as plain `AsyncIterable`s.
 */
function stopIterator(iterable: AsyncIterable<unknown>): void {
  const stop: unknown = Reflect.get(iterable, 'stop');
  if (typeof stop === 'function') Reflect.apply(stop, iterable, []);
}
