/** Helpers of `withEffects`: the field a bad delta breaks, cost sums, and the intercepting bus. */
import type { Part } from '@a2a-js/sdk';
import type {
  AgentExecutionEvent,
  EventListener,
  ExecutionEventBus,
  ExecutionEventName,
  FinishedListener,
} from '@a2a-js/sdk/server';
import type { CostPayload } from '../protocol/index.js';
import {
  DELTA_OPS,
  PART_MIME_METADATA_KEY,
  WORLDSTATE_DELTA_MIME,
  checkDeltaDomain,
  checkDeltaPath,
} from '../protocol/index.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first field of a delta entry that breaks the rule (the reason itself is the protocol's). */
export function failingField(entry: unknown): string {
  if (!isRecord(entry)) return 'entry';
  const { domain, path, op } = entry;
  if (typeof domain !== 'string' || checkDeltaDomain(domain) !== undefined) return 'domain';
  if (typeof path !== 'string' || checkDeltaPath(path) !== undefined) return 'path';
  if (!(DELTA_OPS as readonly unknown[]).includes(op)) return 'op';
  return 'value';
}

export function addCost(total: CostPayload | undefined, sample: CostPayload): CostPayload {
  if (total === undefined) return sample;
  const out: CostPayload = { ...total };
  if (sample.usage !== undefined) {
    const usage: NonNullable<CostPayload['usage']> = { ...total.usage };
    for (const [key, value] of Object.entries(sample.usage)) {
      const before = usage[key];
      usage[key] = typeof value === 'number' && typeof before === 'number' ? before + value : value;
    }
    out.usage = usage;
  }
  if (sample.durationMs !== undefined) out.durationMs = (total.durationMs ?? 0) + sample.durationMs;
  if (sample.costUsd !== undefined) out.costUsd = (total.costUsd ?? 0) + sample.costUsd;
  if (sample.success !== undefined) out.success = sample.success;
  return out;
}

export function hasDeltaPart(parts: readonly Part[]): boolean {
  return parts.some(
    (p) =>
      p.content?.$case === 'data' &&
      isRecord(p.metadata) &&
      p.metadata[PART_MIME_METADATA_KEY] === WORLDSTATE_DELTA_MIME,
  );
}

/** An event bus that hands every published event to `publish` and everything else to `inner`. */
export class InterceptingBus implements ExecutionEventBus {
  readonly #inner: ExecutionEventBus;
  readonly #publish: (event: AgentExecutionEvent) => void;

  constructor(inner: ExecutionEventBus, publish: (event: AgentExecutionEvent) => void) {
    this.#inner = inner;
    this.#publish = publish;
  }

  publish(event: AgentExecutionEvent): void {
    this.#publish(event);
  }

  on(eventName: 'event', listener: EventListener): this;
  on(eventName: 'finished', listener: FinishedListener): this;
  on(eventName: ExecutionEventName, listener: EventListener | FinishedListener): this {
    this.#inner.on(eventName as 'event', listener);
    return this;
  }

  off(eventName: 'event', listener: EventListener): this;
  off(eventName: 'finished', listener: FinishedListener): this;
  off(eventName: ExecutionEventName, listener: EventListener | FinishedListener): this {
    this.#inner.off(eventName as 'event', listener);
    return this;
  }

  once(eventName: 'event', listener: EventListener): this;
  once(eventName: 'finished', listener: FinishedListener): this;
  once(eventName: ExecutionEventName, listener: EventListener | FinishedListener): this {
    this.#inner.once(eventName as 'event', listener);
    return this;
  }

  removeAllListeners(eventName?: ExecutionEventName): this {
    this.#inner.removeAllListeners(eventName);
    return this;
  }

  finished(): void {
    this.#inner.finished();
  }
}
