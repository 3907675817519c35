import { AsyncLocalStorage } from 'node:async_hooks';
import { createEventIdGenerator } from './event-stamps.js';
import type { PublishResult } from './types.js';

/** An event published while a {@link EventCollector.collect} scope was active. */
export interface CollectedEvent {
  topic: string;
  payload: unknown;
  id: string;
  correlationId?: string;
}

/** A side effect beyond the bus (a cost record, a counter) that must happen only if kept. */
export type DeferredEffect = () => void | Promise<void>;

interface Scope {
  events: CollectedEvent[];
  effects: DeferredEffect[];
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
  readonly #scope = new AsyncLocalStorage<Scope>();
  readonly #target: PublishTarget;
  /** Ids of events published without one: in the order they are made (see the generator). */
  readonly #nextId = createEventIdGenerator();

  constructor(target: PublishTarget) {
    this.#target = target;
  }

  publish(
    topic: string,
    payload: unknown,
    options: { id?: string; correlationId?: string } = {},
  ): Promise<PublishResult> {
    const scope = this.#scope.getStore();
    if (scope === undefined) return this.#target.publish(topic, payload, options);
    const id = options.id ?? this.#nextId();
    const event: CollectedEvent = { topic, payload, id };
    if (options.correlationId !== undefined) event.correlationId = options.correlationId;
    scope.events.push(event);
    return Promise.resolve({ id, duplicate: false });
  }

  /**
   * A side effect that belongs with the events: inside a collect scope it is kept and returned
   * with them (the caller runs it only when it keeps the events, e.g. after winning a task's
   * terminal claim); outside a scope it runs at once and its result is returned, so the caller
   * awaits it and sees its failure.
   */
  defer(effect: DeferredEffect): void | Promise<void> {
    const scope = this.#scope.getStore();
    if (scope === undefined) return effect();
    scope.effects.push(effect);
    return undefined;
  }

  /** Runs `fn`, keeping every event published and every effect deferred within it. */
  async collect<T>(
    fn: () => Promise<T>,
  ): Promise<{ value: T; events: CollectedEvent[]; effects: DeferredEffect[] }> {
    const scope: Scope = { events: [], effects: [] };
    const value = await this.#scope.run(scope, fn);
    return { value, events: scope.events, effects: scope.effects };
  }
}
