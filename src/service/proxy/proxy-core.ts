/**
 * What a proxy's handlers share: the options, the store and its push delivery, the feed of live
 * events, the tasks this process is sending, and the reads that keep a task's row up to date with
 * its dispatch (`sync`, `follow`) as bus events and ticks wake them.
 */
import type { AgentCard } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { Kysely } from 'kysely';
import type { CallResult, DispatchRecord } from '../../dispatch/index.js';
import type { EventEnvelope, TaskStateName } from '../../protocol/index.js';
import type { Gateway, GatewayPorts } from '../gateway-types.js';
import { proxyCard } from './card.js';
import { TaskFeed } from './feed.js';
import type { PushUrlPolicy } from './push-url.js';
import { sameView } from './proxy-task-meta.js';
import { view } from './proxy-view.js';
import type { PushDelivery } from './push.js';
import { createPushDelivery } from './push.js';
import type { ProxyDatabase } from './store-tables.js';
import type { ProxyTask, ProxyTaskStore } from './task-store.js';
import { createProxyTaskStore, ended } from './task-store.js';

/** Dispatch events after which a proxy task may look different. */
const MOVES = new Set([
  'skill.dispatch.gated',
  'skill.dispatch.rejected',
  'skill.dispatch.started',
  'skill.dispatch.completed',
  'skill.dispatch.failed',
  'skill.dispatch.awaiting-input',
  'skill.dispatch.resumed',
]);

/** Options of `createA2aProxy` (`proxy.ts`). */
export interface A2aProxyOptions {
  gateway: Gateway;
  /** The gateway's store (the proxy's tables) and agent clients. */
  ports: Pick<GatewayPorts, 'store' | 'agentClient'>;
  /** Every bus event this process receives (the live-event hub's `listen`). */
  listen: (listener: (event: EventEnvelope) => void) => () => void;
  /** The gateway's public base URL: the card's interfaces and the dashboard links point there. */
  publicUrl: string;
  /** How long a blocking `SendMessage` waits for an approval. */
  holdForMs: number;
  push: { attempts: number; backoffMs: number; timeoutMs: number; sweepMs: number };
  /** Which URLs clients may register for push notifications (`proxy.pushUrls`). */
  pushUrls: PushUrlPolicy;
  /** Told of held calls and task state changes (metrics). */
  observe?: {
    held?: (agent: string, delta: 1 | -1) => void;
    state?: (agent: string, state: TaskStateName) => void;
    push?: (outcome: 'delivered' | 'retried' | 'dead') => void;
  };
  onError: (error: unknown, where: string) => void;
}

/** How often a waiting call re-reads its task when no event woke it (another replica's work). */
export const TICK_MS = 1000;
/** Ended tasks remembered, so their late events cost nothing. */
const ENDED_MEMORY = 10_000;

/** What a sync may start from instead of reading it: the record, the call's result, the row. */
export interface SyncHint {
  record?: DispatchRecord;
  result?: CallResult;
  current?: ProxyTask;
}

/** The state one proxy's handlers share, and the reads and waits over it. */
export class ProxyCore {
  readonly options: A2aProxyOptions;
  readonly gateway: Gateway;
  readonly ports: Pick<GatewayPorts, 'store' | 'agentClient'>;
  readonly store: ProxyTaskStore;
  readonly database: Kysely<ProxyDatabase>;
  readonly push: PushDelivery;
  readonly feed: TaskFeed;
  readonly #cards = new WeakMap<object, Promise<AgentCard>>();
  /** Tasks this process is dispatching right now: it syncs them itself. */
  readonly local = new Set<string>();
  /** Ended tasks (their late events are ignored). */
  readonly #done = new Set<string>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #syncing = new Map<string, Promise<ProxyTask | undefined>>();
  /**
   * Calls this process is sending to the agent, by task: resolves true once the agent answered
   * (its stream of the call ended), false when the gate held the call (nothing was sent).
   */
  readonly inflight = new Map<string, Promise<boolean>>();
  readonly #background = new Set<Promise<unknown>>();
  /** True once the proxy closes: waits and streams end at their next turn. */
  closed = false;
  /**
   * Dispatches that are not proxy tasks (API, CLI, library calls). A proxy task's row is written
   * before its dispatch starts, so one not found at a dispatch event never becomes a proxy task:
   * its later events cost no read.
   */
  readonly #foreign = new Set<string>();
  readonly #stopListening: () => void;

  constructor(options: A2aProxyOptions) {
    this.options = options;
    this.gateway = options.gateway;
    this.ports = options.ports;
    const { ports } = options;
    this.store = createProxyTaskStore(ports.store.db, { sqlite: ports.store.sqlite });
    this.database = ports.store.db as unknown as Kysely<ProxyDatabase>;
    this.push = createPushDelivery({
      store: this.store,
      attempts: options.push.attempts,
      backoffMs: options.push.backoffMs,
      timeoutMs: options.push.timeoutMs,
      sweepMs: options.push.sweepMs,
      urls: options.pushUrls,
      onError: options.onError,
      ...(options.observe?.push === undefined ? {} : { onOutcome: options.observe.push }),
    });
    this.feed = new TaskFeed();
    this.#stopListening = options.listen((event) => this.#heard(event));
  }

  /** Notes a call being sent to the agent (see `inflight`) until it settles. */
  sendingNow(id: string, sending: Promise<{ held: boolean }>): void {
    const answeredNow = sending.then(
      (sent) => !sent.held,
      () => true,
    );
    this.inflight.set(id, answeredNow);
    void answeredNow.finally(() => {
      if (this.inflight.get(id) === answeredNow) this.inflight.delete(id);
    });
  }

  #remember(id: string): void {
    this.#done.add(id);
    if (this.#done.size > ENDED_MEMORY) this.#done.delete(this.#done.values().next().value!);
  }

  #rememberForeign(id: string): void {
    this.#foreign.add(id);
    if (this.#foreign.size > ENDED_MEMORY) {
      this.#foreign.delete(this.#foreign.values().next().value!);
    }
  }

  #wake(id: string): void {
    for (const w of this.#waiters.get(id) ?? []) w();
  }

  /** Resolves on the task's next dispatch event, or after `ms`. */
  nap(id: string, ms: number): Promise<void> {
    const waiters = this.#waiters;
    return new Promise((resolve) => {
      let set = waiters.get(id);
      if (set === undefined) {
        set = new Set();
        waiters.set(id, set);
      }
      const timer = setTimeout(done, Math.max(0, ms));
      function done(): void {
        clearTimeout(timer);
        set!.delete(done);
        if (set!.size === 0) waiters.delete(id);
        resolve();
      }
      set.add(done);
    });
  }

  /** Runs `work` in the background: its failure goes to `onError`, and `close` waits for it. */
  keep(work: Promise<unknown>, where: string): void {
    const tracked = work.catch((error: unknown) => this.options.onError(error, where));
    this.#background.add(tracked);
    void tracked.finally(() => this.#background.delete(tracked));
  }

  /** A bus event: wakes the task's waiters, and syncs a task another process moved. */
  #heard(event: EventEnvelope): void {
    if (!event.topic.startsWith('skill.dispatch.')) return;
    const call = event.payload as Pick<DispatchRecord, 'id' | 'door'> | null;
    const id = call?.id;
    const door = call?.door;
    if (typeof id !== 'string') return;
    this.#wake(id);
    if (
      // A call that came through another door is no proxy task: no read to find that out. (One
      // recorded by an earlier release names no door, and is looked up.)
      (door !== undefined && door !== 'a2a-proxy') ||
      this.closed ||
      this.local.has(id) ||
      this.#done.has(id) ||
      this.#foreign.has(id) ||
      !MOVES.has(event.topic)
    ) {
      return;
    }
    this.keep(
      this.sync(id).then((task) => {
        if (task === undefined) this.#rememberForeign(id);
      }),
      'proxy.sync',
    );
  }

  /** The dashboard's page of an approval. */
  dashboardLink(approvalId: string): string {
    return `${this.options.publicUrl.replace(/\/+$/, '')}/#/approvals/${encodeURIComponent(approvalId)}`;
  }

  /** The proxy's card of an agent (cached per card the agent serves); undefined until it loads. */
  card(agent: string): Promise<AgentCard> | undefined {
    const source = this.gateway.agents.state(agent)?.card;
    if (source === undefined || source === null || typeof source !== 'object') return undefined;
    let card = this.#cards.get(source);
    if (card === undefined) {
      card = proxyCard({ agent, card: source, publicUrl: this.options.publicUrl });
      this.#cards.set(source, card);
    }
    return card;
  }

  /** The proxy's card of an agent; refused while it has not loaded. */
  async cardOf(agent: string): Promise<AgentCard> {
    const pending = this.card(agent);
    if (pending === undefined) {
      throw new UnsupportedOperationError(`The card of agent ${agent} has not loaded yet.`);
    }
    return pending;
  }

  /** Brings a task's row up to date with its dispatch; tells the clients what changed. */
  sync(id: string, hint?: SyncHint): Promise<ProxyTask | undefined> {
    const running = this.#syncing.get(id);
    if (running !== undefined && hint === undefined) return running;
    const work = this.#syncNow(id, hint);
    this.#syncing.set(id, work);
    // Its callers see a failure; this bookkeeping must not raise it again unhandled (a read that
    // failed while the database was away ended the process).
    const forget = (): void => {
      if (this.#syncing.get(id) === work) this.#syncing.delete(id);
    };
    work.then(forget, forget);
    return work;
  }

  /** The work of one `sync`. */
  async #syncNow(id: string, hint: SyncHint | undefined): Promise<ProxyTask | undefined> {
    const current = hint?.current ?? (await this.store.get(id));
    if (current === undefined || ended(current.state)) {
      if (current !== undefined) this.#remember(id);
      return current;
    }
    const record = hint?.record ?? (await this.gateway.dispatchRecord(id));
    if (record === undefined) return current;
    const next = await view(this, current, record, hint?.result);
    if (next === undefined) return current;
    if (sameView(current.task, next.task)) return current;
    const { changed, task, pushes } = await this.store.update(id, {
      task: next.task,
      at: Date.now(),
    });
    if (task === undefined) return current;
    if (ended(task.state)) this.#remember(id);
    if (changed) {
      this.options.observe?.state?.(task.agent, task.state);
      if (task.state !== current.state)
        await this.push.notify(task.task, task.state, { configs: pushes });
    }
    return task;
  }

  /**
   * The agent's own id of a task, once the agent made one: its dispatch's, the one place the
   * gateway keeps it.
   */
  async agentTaskId(id: string): Promise<string | null> {
    return (await this.gateway.dispatchRecord(id))?.taskId ?? null;
  }

  /** Re-reads the task until `stop` says so or the deadline passes; resolves the last read. */
  async follow(
    id: string,
    until: (task: ProxyTask) => boolean,
    deadline: number,
  ): Promise<ProxyTask | undefined> {
    for (;;) {
      const task = await this.sync(id);
      if (task === undefined || until(task) || this.closed) return task;
      const left = deadline - Date.now();
      if (left <= 0) return task;
      await this.nap(id, Math.min(TICK_MS, left));
    }
  }

  /** Stops listening, wakes every wait, lets background work and push deliveries settle. */
  async close(): Promise<void> {
    this.closed = true;
    this.#stopListening();
    for (const id of [...this.#waiters.keys()]) this.#wake(id);
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
    // Tries not yet taken stay due in the store: another replica, or the next start, sends them.
    this.push.stop();
    await this.push.idle();
  }
}
