import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { PublishResult } from './types.js';

/** An event published while a {@link EventCollector.collect} scope was active. */
export interface CollectedEvent {
  topic: string;
  payload: unknown;
  id: string;
  correlationId?: string;
}

/** Where the collector publishes outside a collect scope. */
export interface PublishTarget {
  publish(
    topic: string,
    payload: unknown,
    options?: { id?: string; correlationId?: string },
  ): Promise<PublishResult>;
}

/**
 * A publisher that, inside {@link collect}, keeps events instead of publishing them, so the
 * caller can write them to the outbox in the same transaction as the state change they describe
 * (the terminal claim of a task); outside a scope it publishes straight to the bus. Scopes follow
 * the async context, so concurrent calls never see each other's events.
 */
export class EventCollector implements PublishTarget {
  readonly #scope = new AsyncLocalStorage<CollectedEvent[]>();
  readonly #target: PublishTarget;

  constructor(target: PublishTarget) {
    this.#target = target;
  }

  publish(
    topic: string,
    payload: unknown,
    options: { id?: string; correlationId?: string } = {},
  ): Promise<PublishResult> {
    const events = this.#scope.getStore();
    if (events === undefined) return this.#target.publish(topic, payload, options);
    const id = options.id ?? randomUUID();
    const event: CollectedEvent = { topic, payload, id };
    if (options.correlationId !== undefined) event.correlationId = options.correlationId;
    events.push(event);
    return Promise.resolve({ id, duplicate: false });
  }

  /** Runs `fn`, keeping every event published within it (and what it awaits). */
  async collect<T>(fn: () => Promise<T>): Promise<{ value: T; events: CollectedEvent[] }> {
    const events: CollectedEvent[] = [];
    const value = await this.#scope.run(events, fn);
    return { value, events };
  }
}
