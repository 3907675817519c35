/**
 * The contracts of the caller-side extension runtime: what an extension is, what a hook sees, what
 * an `after` hook is told about the call, and the slice of the event bus the runtime publishes on.
 */
import type { Message, Task } from '@a2a-js/sdk';

import type { FleetgateError } from '../protocol/index.js';
import type { Declarations } from '../protocol/index.js';
import type { CallState } from './state.js';

/**
 * The part of the event bus the runtime needs. The bus issue's `EventBus` satisfies it; the runtime
 * never builds a bus of its own.
 */
export interface ExtensionEventBus {
  /**
   * Publishes one event. `id` makes the publish idempotent where a duplicate is possible;
   * `correlationId` ties the event to the call that caused it.
   */
  publish(
    topic: string,
    payload: unknown,
    options?: { id?: string; correlationId?: string },
  ): Promise<unknown>;
  /**
   * {@link publish} answered at once, by a bus that accepts or refuses an event synchronously (the
   * in-memory bus): returns what `publish` would resolve to, throws what it would reject with.
   * Hooks publish through it when it is there, so a call on such a bus awaits nothing between its
   * hooks.
   */
  publishNow?(
    topic: string,
    payload: unknown,
    options?: { id?: string; correlationId?: string },
  ): unknown;
  /**
   * Runs a side effect beyond the bus (a cost record) only if the call's terminal state is kept:
   * a bus that collects a task's events for its terminal claim keeps the effect with them and runs
   * it after the claim is won, so a path that loses the claim has no effect. Without `defer`, or
   * outside a claim, the effect runs at once (its result is returned to be awaited).
   */
  defer?(effect: () => void | Promise<void>): void | Promise<void>;
}

/** Request metadata keys an extension's `before` hook sets, and their values. */
export type Stamps = Record<string, string>;

/**
 * What every hook of one skill call sees. One context lives from the first `before` to the last
 * `after`, possibly across processes' worth of time when the task finishes later (the task tracker
 * settles the terminal task through the task terminal).
 */
export interface SkillCallContext {
  /** The agent's configured name. */
  readonly agent: string;
  /** The skill being invoked. */
  readonly skill: string;
  /** Ties every event of this call together; the caller's or a fresh UUID. */
  readonly correlationId: string;
  /**
   * Outbound request metadata (`SendMessageRequest.metadata`). Hooks add stamps with
   * {@link SkillCallContext.stamp}, never by writing here: a stamp key may be claimed once.
   */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Aborts when the caller gives up or the call times out. */
  readonly signal: AbortSignal;
  /** What the agent's card declares for the extensions (blast, hitl-mode, effect-domain …). */
  readonly declarations: Declarations;
  /** Epoch milliseconds the call started (for a resumed call: when it started originally). */
  readonly startedAt: number;
  /** Typed per-call state a `before` hook hands to `after` (see {@link createStateKey}). */
  readonly state: CallState;
  /**
   * Sets one request-metadata stamp. Stamps win over the caller's own metadata keys; two
   * extensions claiming one key fail the call with `FLEETGATE_STAMP_CONFLICT`.
   */
  stamp(key: string, value: string): void;
}

/**
 * What an `after` hook is told about the call, once, at the task's terminal state.
 *
 * - `{ ok: true }`: the agent answered and the task completed (or the agent answered with a
 *   message and no task: then `message` is set and `task` is not).
 * - `{ ok: false }`: the call failed (transport error, HTTP error, timeout, abort, a required hook
 *   failed) or the task ended `failed`, `canceled` or `rejected`. `task` is set when the agent
 *   returned one: its artifacts are still facts the agent reported.
 */
export type CallOutcome =
  | { readonly ok: true; readonly task: Task; readonly message?: undefined }
  | { readonly ok: true; readonly task?: undefined; readonly message: Message }
  | { readonly ok: false; readonly error: FleetgateError; readonly task?: Task };

/**
 * A caller-side extension: hooks that run around every skill call to an agent whose card declares
 * `uri`. The registry selects extensions by card; an extension never checks whether it was
 * declared.
 *
 * Order (implemented once, in `chain.ts`): `before` hooks run in registration order; `after`
 * hooks run in reverse registration order, only for extensions whose `before` ran, always, with
 * the call's {@link CallOutcome}.
 */
export interface Extension {
  /** Canonical extension URI (from `src/protocol`). */
  readonly uri: string;
  /** One line for humans (`fleetgate agents`, docs, errors). */
  readonly description: string;
  /** Runs before the request is sent; stamps metadata and records per-call state. */
  before?(ctx: SkillCallContext): void | Promise<void>;
  /**
   * Runs once when the call's outcome is known (terminal task, or failure). A returned promise is
   * awaited; what it resolves to is ignored (a hook may return its publish as it is).
   */
  after?(ctx: SkillCallContext, outcome: CallOutcome): void | Promise<unknown>;
}

/** How an extension is registered. */
export interface RegisterOptions {
  /**
   * A throwing hook of a required extension fails the call (`FLEETGATE_HOOK_FAILED`). A throwing
   * hook of an optional extension (the default) is published on `system.error`, counted, and the
   * remaining hooks still run.
   */
  required?: boolean;
}

/** An extension as the registry holds it. */
export interface RegisteredExtension {
  readonly extension: Extension;
  readonly required: boolean;
}
