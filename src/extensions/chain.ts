import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import type { Declarations } from '../protocol/index.js';
import { createCallState, type CallState } from './state.js';
import type {
  CallOutcome,
  ExtensionEventBus,
  RegisteredExtension,
  SkillCallContext,
  Stamps,
} from './types.js';

/** Which hook of which extension failed, for which call. */
export interface HookFailure {
  readonly uri: string;
  readonly hook: 'before' | 'after';
  readonly required: boolean;
  readonly error: unknown;
  readonly agent: string;
  readonly skill: string;
  readonly correlationId: string;
}

/** Where optional-hook failures go: never swallowed, always counted and published. */
export interface HookFailureSink {
  report(failure: HookFailure): Promise<void>;
}

/** Options of {@link createSkillCallContext}. */
export interface SkillCallContextInit {
  agent: string;
  skill: string;
  correlationId: string;
  /** The caller's own request metadata; stamps are laid over it, never under it. */
  metadata?: Readonly<Record<string, unknown>> | undefined;
  signal: AbortSignal;
  declarations: Declarations;
  /** Epoch milliseconds the call started (default now); a resumed chain passes the original. */
  startedAt?: number;
}

/** A {@link SkillCallContext} plus what the chain needs to drive it. */
export interface ChainContext extends SkillCallContext {
  /** The stamps set so far, key → value. */
  readonly stamps: Readonly<Stamps>;
  /** Caller metadata with every stamp laid over it: the outbound `SendMessageRequest.metadata`. */
  outboundMetadata(): Record<string, unknown>;
}

const NO_OWNER = '';
/** Room for the stamps of the four standard extensions (five keys) and one more, in pairs. */
const OWNER_SLOTS = 12;
const NO_METADATA: Readonly<Record<string, unknown>> = Object.freeze({});

class CallContext implements ChainContext {
  readonly agent: string;
  readonly skill: string;
  readonly correlationId: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly signal: AbortSignal;
  readonly declarations: Declarations;
  readonly startedAt: number;
  readonly state: CallState = createCallState();
  readonly stamps: Stamps = {};
  /**
   * Each stamp's key and the extension that set it, in pairs, in the order the stamps were set
   * (`[key, owner, key, owner, …]`, `#ownerCount` entries): a call has a handful of stamps, so one
   * small array, sized for them with the first stamp, beats a `Map`.
   */
  #owners: string[] | undefined;
  #ownerCount = 0;
  /** The extension whose `before` hook is running; stamps are attributed to it. */
  owner = NO_OWNER;
  sealed = false;

  constructor(init: SkillCallContextInit) {
    this.agent = init.agent;
    this.skill = init.skill;
    this.correlationId = init.correlationId;
    this.metadata = init.metadata ?? NO_METADATA;
    this.signal = init.signal;
    this.declarations = init.declarations;
    this.startedAt = init.startedAt ?? Date.now();
  }

  stamp(key: string, value: string): void {
    if (key === '__proto__') {
      throw new FleetgateError('FLEETGATE_STAMP_CONFLICT', 'A stamp key may not be __proto__.', {
        details: { key, extension: this.owner },
      });
    }
    if (this.sealed) {
      throw new FleetgateError(
        'FLEETGATE_STAMP_CONFLICT',
        `Stamp ${key} was set after the request was sent; stamps belong in a before hook.`,
        { details: { key, extension: this.owner } },
      );
    }
    const owners = (this.#owners ??= new Array<string>(OWNER_SLOTS));
    const count = this.#ownerCount;
    let at = 0;
    while (at < count && owners[at] !== key) at += 2;
    if (at === count) {
      owners[at] = key;
      owners[at + 1] = this.owner;
      this.#ownerCount = count + 2;
    } else {
      const previous = owners[at + 1]!;
      if (previous !== this.owner) {
        throw new FleetgateError(
          'FLEETGATE_STAMP_CONFLICT',
          `Extensions ${previous} and ${this.owner} both stamp request metadata key ${key}.`,
          { details: { key, extensions: [previous, this.owner] } },
        );
      }
    }
    this.stamps[key] = value;
  }

  outboundMetadata(): Record<string, unknown> {
    // Stamps win over the caller's keys.
    return this.metadata === NO_METADATA
      ? { ...this.stamps }
      : { ...this.metadata, ...this.stamps };
  }
}

/** Creates the context of one skill call. */
export function createSkillCallContext(init: SkillCallContextInit): ChainContext {
  return new CallContext(init);
}

function hookError(
  entry: RegisteredExtension,
  hook: 'before' | 'after',
  cause: unknown,
): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_HOOK_FAILED',
    `The ${hook} hook of required extension ${entry.extension.uri} failed: ${
      cause instanceof Error ? cause.message : String(cause)
    }`,
    { cause, details: { uri: entry.extension.uri, hook } },
  );
}

/**
 * The before/after chain of one skill call.
 *
 * Order — the one place it is implemented:
 * - `before` hooks run one at a time in registration order;
 * - `after` hooks run one at a time in **reverse** registration order, only for the extensions
 *   whose `before` completed (an extension without a `before` counts as completed), and they run
 *   **always**: on a terminal task, a failed task, a transport error, a timeout, or a required
 *   `before` that failed;
 * - `after` runs at most once per call ({@link runAfter} is idempotent) — the task terminal
 *   relies on this when several paths see the same terminal task.
 *
 * A throwing hook of an optional extension goes to the {@link HookFailureSink} and the remaining
 * hooks run. A throwing hook of a required extension stops the `before` phase (the call is not
 * sent) or, in the `after` phase, lets the other `after` hooks run and then fails the call.
 * A stamp conflict is a configuration error and always fails the call.
 */
export class SkillCallChain {
  readonly ctx: ChainContext;
  readonly #extensions: readonly RegisteredExtension[];
  readonly #sink: HookFailureSink;
  /**
   * The extensions whose `before` completed. While every hook succeeds that is a prefix of
   * `#extensions` and only its length is kept (`#ranCount`); the list is written out only when an
   * optional hook fails and the prefix gets a hole.
   */
  #ran: RegisteredExtension[] | undefined;
  #ranCount = 0;
  #afterStarted = false;

  constructor(
    extensions: readonly RegisteredExtension[],
    ctx: ChainContext,
    sink: HookFailureSink,
  ) {
    this.#extensions = extensions;
    this.ctx = ctx;
    this.#sink = sink;
  }

  /** The URIs of the extensions in this chain (the ones the card declares), in order. */
  get uris(): string[] {
    return this.#extensions.map((e) => e.extension.uri);
  }

  /**
   * Runs every `before` hook. Resolves when the request may be sent; rejects with
   * `FLEETGATE_HOOK_FAILED` (required hook) or `FLEETGATE_STAMP_CONFLICT` when it may not — the
   * caller must still call {@link runAfter} with a failed outcome.
   *
   * Synchronous hooks run without a microtask turn between them; the chain goes asynchronous only
   * from the first hook that returns a promise or the first optional failure to report.
   */
  runBefore(): Promise<void> {
    const ctx = this.ctx as CallContext;
    const extensions = this.#extensions;
    for (let i = 0; i < extensions.length; i += 1) {
      const entry = extensions[i]!;
      const extension = entry.extension;
      if (extension.before === undefined) {
        this.#markRan(entry);
        continue;
      }
      ctx.owner = extension.uri;
      let pending: void | Promise<void>;
      try {
        pending = extension.before(ctx);
      } catch (error) {
        return this.#beforeFrom(i, error);
      }
      if (pending !== undefined) return this.#beforeFrom(i, undefined, pending);
      this.#markRan(entry);
    }
    this.#seal(ctx);
    return RESOLVED;
  }

  /**
   * The rest of {@link runBefore}, asynchronously, from hook `index`, which either threw `thrown`
   * or returned `pending`.
   */
  async #beforeFrom(index: number, thrown: unknown, pending?: Promise<void>): Promise<void> {
    const ctx = this.ctx as CallContext;
    const extensions = this.#extensions;
    try {
      for (let i = index; i < extensions.length; i += 1) {
        const entry = extensions[i]!;
        const extension = entry.extension;
        if (i > index && extension.before === undefined) {
          this.#markRan(entry);
          continue;
        }
        ctx.owner = extension.uri;
        try {
          if (i === index) {
            if (pending === undefined) throw thrown;
            await pending;
          } else {
            // Awaited only when the hook is async: a synchronous hook costs no microtask turn.
            const next = extension.before!(ctx);
            if (next !== undefined) await next;
          }
          this.#markRan(entry);
        } catch (error) {
          if (isFleetgateError(error, 'FLEETGATE_STAMP_CONFLICT')) throw error;
          if (entry.required) throw hookError(entry, 'before', error);
          this.#skip();
          await this.#report(entry, 'before', error);
        }
      }
    } finally {
      this.#seal(ctx);
    }
  }

  #markRan(entry: RegisteredExtension): void {
    if (this.#ran === undefined) this.#ranCount += 1;
    else this.#ran.push(entry);
  }

  /** A hook failed and is left out: from now on the completed hooks are listed explicitly. */
  #skip(): void {
    this.#ran ??= this.#extensions.slice(0, this.#ranCount);
  }

  #seal(ctx: CallContext): void {
    ctx.owner = NO_OWNER;
    ctx.sealed = true;
  }

  /**
   * Marks every `before` hook as having run: the chain of a call that started in another
   * process (restart recovery, another replica), rebuilt to run its `after` hooks. Per-call state
   * handed from `before` to `after` is absent in such a chain; hooks fall back on the context
   * (`startedAt`).
   */
  resumeAfterBefore(): this {
    (this.ctx as CallContext).sealed = true;
    this.#ran = undefined;
    this.#ranCount = this.#extensions.length;
    return this;
  }

  /**
   * Runs the `after` hooks (reverse order, completed `before` only), once. Returns the failure of
   * a required `after` hook, if one failed; a second call returns `undefined` without running
   * anything.
   *
   * Like {@link runBefore}, hooks that finish synchronously run without a microtask turn between
   * them; the chain goes asynchronous only from the first hook that returns a promise or the
   * first optional failure to report.
   */
  runAfter(outcome: CallOutcome): Promise<FleetgateError | undefined> {
    if (this.#afterStarted) return NO_FAILURE;
    this.#afterStarted = true;
    const ctx = this.ctx as CallContext;
    ctx.sealed = true;
    const ran = this.#ran ?? this.#extensions;
    let failure: FleetgateError | undefined;
    for (let i = (this.#ran === undefined ? this.#ranCount : ran.length) - 1; i >= 0; i -= 1) {
      const entry = ran[i]!;
      const extension = entry.extension;
      if (extension.after === undefined) continue;
      let pending: void | Promise<unknown>;
      try {
        pending = extension.after(ctx, outcome);
      } catch (error) {
        if (entry.required) {
          failure ??= hookError(entry, 'after', error);
          continue;
        }
        return this.#afterFrom(ran, i, outcome, failure, error);
      }
      if (pending !== undefined)
        return this.#afterFrom(ran, i, outcome, failure, undefined, pending);
    }
    return failure === undefined ? NO_FAILURE : Promise.resolve(failure);
  }

  /**
   * The rest of {@link runAfter}, asynchronously, from hook `index` of `ran`, which either threw
   * `thrown` (an optional hook) or returned `pending`.
   */
  async #afterFrom(
    ran: readonly RegisteredExtension[],
    index: number,
    outcome: CallOutcome,
    failed: FleetgateError | undefined,
    thrown: unknown,
    pending?: Promise<unknown>,
  ): Promise<FleetgateError | undefined> {
    let failure = failed;
    for (let i = index; i >= 0; i -= 1) {
      const entry = ran[i]!;
      const extension = entry.extension;
      if (extension.after === undefined) continue;
      try {
        if (i === index) {
          if (pending === undefined) throw thrown;
          await pending;
        } else {
          // Awaited only when the hook is async: a synchronous hook costs no microtask turn.
          const next = extension.after(this.ctx, outcome);
          if (next !== undefined) await next;
        }
      } catch (error) {
        if (entry.required) failure ??= hookError(entry, 'after', error);
        else await this.#report(entry, 'after', error);
      }
    }
    return failure;
  }

  /** True once {@link runAfter} has started. */
  get settled(): boolean {
    return this.#afterStarted;
  }

  async #report(entry: RegisteredExtension, hook: 'before' | 'after', error: unknown) {
    await this.#sink.report({
      uri: entry.extension.uri,
      hook,
      required: false,
      error,
      agent: this.ctx.agent,
      skill: this.ctx.skill,
      correlationId: this.ctx.correlationId,
    });
  }
}

const RESOLVED: Promise<void> = Promise.resolve();
const NO_FAILURE: Promise<FleetgateError | undefined> = Promise.resolve(undefined);

/** The counting, publishing {@link HookFailureSink}. */
export interface HookFailureLog extends HookFailureSink {
  /** Failures so far, keyed `"<uri> <hook>"`. */
  counts(): Record<string, number>;
  /** Total failures so far. */
  total(): number;
}

/**
 * A {@link HookFailureSink} that counts every failure and publishes it on `system.error`. When the
 * publish itself fails, that is counted too (under `system.error publish`) and reported to
 * `onPublishError`, so nothing disappears without a trace. `report` waits for the publish only
 * within the turn of the event loop: a bus that does not answer never holds a call.
 */
export function createHookFailureLog(options: {
  bus: ExtensionEventBus;
  onPublishError?: (error: unknown, failure: HookFailure) => void;
}): HookFailureLog {
  const counts = new Map<string, number>();
  let total = 0;
  const bump = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  return {
    async report(failure) {
      total += 1;
      bump(`${failure.uri} ${failure.hook}`);
      const error = failure.error;
      const published = (async () => {
        try {
          await options.bus.publish(
            'system.error',
            {
              source: `extension:${failure.uri}`,
              message: `${failure.hook} hook failed: ${error instanceof Error ? error.message : String(error)}`,
              code: isFleetgateError(error) ? error.code : 'FLEETGATE_HOOK_ERROR',
              hook: failure.hook,
              agent: failure.agent,
              skill: failure.skill,
              correlationId: failure.correlationId,
            },
            { correlationId: failure.correlationId },
          );
        } catch (publishError) {
          bump('system.error publish');
          options.onPublishError?.(publishError, failure);
        }
      })();
      // A bus that answers at once (in memory) is waited for; one that does not (NATS down, or
      // far away) does not hold the call whose hook failed: the publish goes on without it.
      await Promise.race([published, new Promise<void>((resolve) => setImmediate(resolve))]);
    },
    counts: () => Object.fromEntries(counts),
    total: () => total,
  };
}
