/**
 * The handle `Gateway.dispatch` returns: the call's id at once, its gate decision, its status as
 * this process last saw it, its updates as an async iterable, its end and a way to cancel it.
 */
import type { StreamResponse } from '@a2a-js/sdk';
import { FleetgateError } from '../protocol/index.js';
import type { DispatchStatus } from '../protocol/index.js';
import { ENDED_STATUSES } from '../calls/index.js';
import type { CallResult } from './call-types.js';
import type { DispatchRecord } from './dispatch-records.js';
import type { GateVerdict } from './policy-gate.js';
import type { DispatchWatcher } from './watcher.js';

/** One update of a dispatch, as {@link DispatchHandle.events} yields them, in order. */
export type CallUpdate =
  /** The policy gate's decision (always the first update). */
  | { type: 'decision'; decision: GateVerdict }
  /** An event of the agent's stream, as it arrives (a call sent `streaming`). */
  | { type: 'stream'; event: StreamResponse }
  /** The agent's answer to the send (its stream ended), before the record moves on. */
  | { type: 'reply'; result: CallResult }
  /** The dispatch record moved to a new status. The last update is the one of an ended call. */
  | { type: 'status'; record: DispatchRecord };

/** What the dispatcher tells the handle of a call it sends (the handle's feed). */
export interface DispatchObserver {
  decided(decision: GateVerdict): void;
  streamed(event: StreamResponse): void;
  replied(result: CallResult): void;
}

/** A dispatch in flight. */
export interface DispatchHandle {
  /** The dispatch's id (the record's, the API's, the proxy task's). */
  readonly id: string;
  /** The dispatch's status as this process last saw it. */
  readonly status: DispatchStatus;
  /** The policy gate's decision, once taken (rejects when the dispatch could not be recorded). */
  readonly decision: Promise<GateVerdict>;
  /**
   * The record as the dispatch answered: ended, held for an approval or a veto window, waiting
   * for input, or running at the agent under its task id (the tracker follows it from there).
   */
  answered(): Promise<DispatchRecord>;
  /**
   * The record once the call ended (`completed`, `failed`, `rejected`, `canceled`), however long
   * that takes (an approval, a long task). Rejects with `signal`'s reason when it aborts, and
   * with `FLEETGATE_GATEWAY_CLOSED` when the gateway closes first (the call goes on; a restarted
   * gateway finishes it).
   */
  result(options?: { signal?: AbortSignal }): Promise<DispatchRecord>;
  /**
   * The call's updates from its start, in order, to its end; each iterator reads them all.
   * Stops early (without an error) when the gateway closes.
   */
  events(): AsyncIterableIterator<CallUpdate>;
  /**
   * Cancels the call: a held call's approval is rejected (it ends `rejected`, the agent never
   * called), a running task is canceled at the agent (it ends `canceled`, or as the agent ends
   * it). An ended call is answered as it is. A call being sent, whose task id is not known yet,
   * cannot be: `FLEETGATE_DISPATCH_NOT_CANCELABLE`, retry shortly.
   */
  cancel(reason?: string): Promise<DispatchRecord>;
}

/** What a {@link CallHandle} needs of the gateway. */
export interface CallHandleServices {
  watcher: Pick<DispatchWatcher, 'until'>;
  /** The dispatch's record as the store holds it now. */
  read(id: string): Promise<DispatchRecord | undefined>;
  cancel(
    record: DispatchRecord,
    decision: GateVerdict | undefined,
    reason: string | undefined,
  ): Promise<DispatchRecord>;
  /** Aborted when the gateway closes. */
  closing: AbortSignal;
}

function ended(record: DispatchRecord): boolean {
  return ENDED_STATUSES.has(record.status);
}

function closedError(id: string): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_GATEWAY_CLOSED',
    `The gateway closed before dispatch ${id} ended; it goes on and a restarted gateway finishes it.`,
    { details: { id } },
  );
}

/**
 * A dispatch handle fed by the dispatcher ({@link DispatchObserver}) and, once the dispatcher
 * let the call go, by the dispatch's own events (the watcher).
 */
export class CallHandle implements DispatchHandle, DispatchObserver {
  readonly id: string;
  readonly decision: Promise<GateVerdict>;
  readonly #services: CallHandleServices;
  readonly #updates: CallUpdate[] = [];
  readonly #wake = new Set<() => void>();
  #status: DispatchStatus = 'running';
  #last: DispatchRecord | undefined;
  #verdict: GateVerdict | undefined;
  #decide!: (decision: GateVerdict) => void;
  #undecided!: (error: unknown) => void;
  #answered: Promise<DispatchRecord> | undefined;
  /** The follow of the dispatch's moves after the dispatcher let it go (started on demand). */
  #following: Promise<void> | undefined;
  /** The feed is complete: the call ended, or can no longer be followed from here. */
  #done = false;

  constructor(id: string, services: CallHandleServices) {
    this.id = id;
    this.#services = services;
    this.decision = new Promise<GateVerdict>((resolve, reject) => {
      this.#decide = resolve;
      this.#undecided = reject;
    });
    // Whoever asks hears of a failure; nobody asking is no unhandled rejection.
    this.decision.catch(() => undefined);
  }

  get status(): DispatchStatus {
    return this.#status;
  }

  /** Takes the dispatcher's work: it resolves with the record as the dispatch answered. */
  begin(work: Promise<DispatchRecord>): void {
    this.#answered = work.then(
      (record) => {
        this.#moved(record);
        return record;
      },
      (error: unknown) => {
        this.#undecided(error);
        this.#finish();
        throw error;
      },
    );
    this.#answered.catch(() => undefined);
  }

  decided(decision: GateVerdict): void {
    this.#verdict = decision;
    this.#decide(decision);
    this.#push({ type: 'decision', decision });
  }

  streamed(event: StreamResponse): void {
    this.#push({ type: 'stream', event });
  }

  replied(result: CallResult): void {
    this.#push({ type: 'reply', result });
  }

  answered(): Promise<DispatchRecord> {
    return this.#answered!;
  }

  async result(options: { signal?: AbortSignal } = {}): Promise<DispatchRecord> {
    const record = await this.answered();
    if (ended(record)) return record;
    options.signal?.throwIfAborted();
    const signal =
      options.signal === undefined
        ? this.#services.closing
        : AbortSignal.any([options.signal, this.#services.closing]);
    const now = await this.#services.watcher.until(this.id, ended, { signal });
    if (now !== undefined) this.#moved(now);
    if (now !== undefined && ended(now)) return now;
    options.signal?.throwIfAborted();
    throw closedError(this.id);
  }

  async *events(): AsyncIterableIterator<CallUpdate> {
    let next = 0;
    for (;;) {
      while (next < this.#updates.length) {
        const update = this.#updates[next]!;
        next += 1;
        yield update;
      }
      if (this.#done) return;
      if (this.#last !== undefined && this.#following === undefined)
        this.#following = this.#follow();
      await new Promise<void>((resolve) => this.#wake.add(resolve));
    }
  }

  async cancel(reason?: string): Promise<DispatchRecord> {
    // Once the gate decided the record is there (a blocking call's answer may be an hour away).
    await this.decision.catch(() => undefined);
    const base = await this.#services.read(this.id);
    if (base === undefined) {
      throw new FleetgateError('FLEETGATE_DISPATCH_NOT_FOUND', `No dispatch ${this.id}.`, {
        details: { id: this.id },
      });
    }
    const after = await this.#services.cancel(base, this.#verdict, reason);
    this.#moved(after);
    return after;
  }

  /** The record as this process last read it: a new status is an update. */
  #moved(record: DispatchRecord): void {
    if (this.#last !== undefined && this.#last.status === record.status) {
      this.#last = record;
      return;
    }
    this.#last = record;
    this.#status = record.status;
    this.#push({ type: 'status', record });
    if (ended(record)) this.#finish();
  }

  async #follow(): Promise<void> {
    const signal = this.#services.closing;
    while (!this.#done && !signal.aborted) {
      const from = this.#last!.status;
      const now = await this.#services.watcher
        .until(this.id, (record) => record.status !== from, { signal })
        .catch(() => undefined);
      if (now === undefined || now.status === from) break;
      this.#moved(now);
    }
    this.#finish();
  }

  #push(update: CallUpdate): void {
    this.#updates.push(update);
    this.#signal();
  }

  #finish(): void {
    this.#done = true;
    this.#signal();
  }

  #signal(): void {
    const wake = [...this.#wake];
    this.#wake.clear();
    for (const resolve of wake) resolve();
  }
}
