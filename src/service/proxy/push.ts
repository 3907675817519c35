/**
 * Push notifications to the proxy's clients: each update of a task (each state it reaches) is
 * sent once to each configuration the client registered — v1.0 `StreamResponse` bodies, or v0.3
 * task bodies for a configuration a v0.3 client registered — with the client's token, tried again
 * with a doubling delay, and recorded `dead` after the last try (published on `system.error`).
 *
 * Deliveries live in the store, not in a process: each try is taken with a conditional update that
 * leases it (until the answer's timeout) and a failed try records when the next is due. A sweeper
 * on every replica takes over the deliveries whose lease or next try is past — those of a replica
 * that died or closed between tries — so a delivery is tried until it succeeds or goes dead, and
 * one replica holds each try.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { V1PushNotificationSerializer } from '@a2a-js/sdk/server';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { exchangeWhole } from '../../net/index.js';
import { isFleetgateError } from '../../protocol/index.js';
import type { PushUrlPolicy } from './push-url.js';
import type { DeliveryKey, ProxyPushConfig, ProxyTaskStore } from './task-store.js';

/** Options of {@link createPushDelivery}. */
export interface PushDeliveryOptions {
  store: ProxyTaskStore;
  /** Tries per update (the first included). */
  attempts: number;
  /** Delay before the second try; doubles each time. */
  backoffMs: number;
  /** Longest wait for one answer. */
  timeoutMs: number;
  /** How often this process looks for deliveries due that nobody holds (0: never). */
  sweepMs: number;
  /**
   * Checked again before each try (a name may resolve elsewhere than when it was registered); a
   * URL it refuses ends the delivery dead at once, and a try connects only to the addresses it
   * checked.
   */
  urls?: PushUrlPolicy;
  /** Sends the pushes instead (tests); by default each goes on a connection of its own. */
  fetch?: typeof fetch;
  now?: () => number;
  /** A delivery went dead (or failed to be recorded). */
  onError: (error: unknown, where: string) => void;
  /** Counts outcomes (metrics). */
  onOutcome?: (outcome: 'delivered' | 'retried' | 'dead') => void;
}

/** How {@link PushDelivery.notify} sends. */
export interface NotifyOptions {
  /** The task's configurations, when the caller read them with the change. */
  configs?: readonly ProxyPushConfig[] | undefined;
  /** Resolve only once each delivery's first try has been answered (or failed). */
  firstTry?: boolean;
}

/** Sends a task's updates to its clients' push configurations. */
export interface PushDelivery {
  /**
   * Sends `task` (its current state) to every configuration of it, once per state: `configs`
   * when the caller read them with the change (`ProxyTaskStore.update`), else they are read.
   * Resolves once the deliveries are claimed and started; with `firstTry`, once each one's first
   * try has been answered (or failed), as an SDK agent sends a task's first state before the
   * client hears of the task. Later tries go on in the background either way.
   */
  notify(task: Task, state: string, options?: NotifyOptions): Promise<void>;
  /** Takes over the deliveries due now that nobody holds (the sweeper's tick). */
  sweep(): Promise<void>;
  /** Resolves when every delivery started so far ended or paused (close, tests). */
  idle(): Promise<void>;
  /** Stops the sweeper and the tries not yet taken (they stay due for another replica). */
  stop(): void;
}

/**
 * Checks a push URL a client registers (with `CreateTaskPushNotificationConfig`, or in a
 * message's configuration) against the gateway's policy; a refused one is answered as a malformed
 * request whose error info names `FLEETGATE_PUSH_URL_REFUSED` and the reason, and nothing is
 * registered.
 */
export async function checkPushUrl(policy: PushUrlPolicy, url: string): Promise<void> {
  try {
    await policy.check(url, { unresolved: 'accept' });
  } catch (error) {
    if (!isFleetgateError(error)) throw error;
    const reason = error.details?.['reason'];
    throw new RequestMalformedError({
      message: `${error.code}: ${error.message}`,
      cause: error,
      metadata: {
        code: error.code,
        url,
        ...(typeof reason === 'string' ? { reason } : {}),
      },
    });
  }
}

/** Deliveries the sweeper takes over per tick. */
const SWEEP_BATCH = 50;
/** A try's lease outlasts its answer's timeout by this much (clock skew, a slow store). */
const LEASE_MARGIN_MS = 2000;

const serializers = {
  '1.0': new V1PushNotificationSerializer(),
  '0.3': new V03PushNotificationSerializer(),
} as const;

function authHeaders(config: ProxyPushConfig['config']): Record<string, string> {
  const auth = config.authentication;
  if (auth !== undefined && auth.scheme !== '' && auth.credentials !== '') {
    return { authorization: `${auth.scheme} ${auth.credentials}` };
  }
  return config.token === '' ? {} : { 'x-a2a-notification-token': config.token };
}

const keyOf = (key: DeliveryKey): string => `${key.taskId}\u0000${key.configId}\u0000${key.state}`;

/** What a push delivery's tries and sweeps share: the options and this process's own state. */
interface DeliveryContext {
  readonly options: PushDeliveryOptions;
  readonly store: ProxyTaskStore;
  readonly now: () => number;
  /** The deliveries started here and not yet ended or paused. */
  readonly running: Set<Promise<void>>;
  /** Deliveries this process is trying or waiting to try again. */
  readonly held: Set<string>;
  /** Wakes each wait between tries (`stop`). */
  readonly sleepers: Set<() => void>;
  stopped: boolean;
  /** The sweep under way, if any (one at a time). */
  sweeping: Promise<void> | undefined;
}

/** Builds the push delivery of the proxy (its sweeper runs until `stop`). */
export function createPushDelivery(options: PushDeliveryOptions): PushDelivery {
  const context: DeliveryContext = {
    options,
    store: options.store,
    now: options.now ?? Date.now,
    running: new Set(),
    held: new Set(),
    sleepers: new Set(),
    stopped: false,
    sweeping: undefined,
  };
  const timer =
    options.sweepMs > 0
      ? setInterval(() => {
          if (!context.stopped) void sweep(context);
        }, options.sweepMs)
      : undefined;
  timer?.unref();

  return {
    notify: (task, state, options) => notify(context, task, state, options ?? {}),
    sweep: () => sweep(context),
    async idle() {
      while (context.running.size > 0 || context.sweeping !== undefined) {
        await Promise.allSettled([
          ...context.running,
          ...(context.sweeping === undefined ? [] : [context.sweeping]),
        ]);
      }
    },
    stop() {
      context.stopped = true;
      if (timer !== undefined) clearInterval(timer);
      for (const wake of [...context.sleepers]) wake();
    },
  };
}

/** One try: the receiver's answer status, or the error it failed with. */
async function post(
  options: PushDeliveryOptions,
  url: string,
  addresses: readonly string[] | undefined,
  request: { headers: Record<string, string>; body: string },
): Promise<number> {
  if (options.fetch !== undefined) {
    const response = await options.fetch(url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    await response.body?.cancel();
    return response.status;
  }
  // The answer's body is not read: its status says it all. A redirect is not followed (it could
  // lead where the URL check would not let a push go).
  const answer = await exchangeWhole(new URL(url), {
    method: 'POST',
    headers: request.headers,
    body: request.body,
    ...(addresses === undefined || addresses.length === 0 ? {} : { addresses }),
    maxBytes: 0,
    tooLarge: () => new Error('push answer too large'),
    wanted: () => false,
    timeoutMs: options.timeoutMs,
  });
  return answer.status;
}

/** Until when a try taken now is leased. */
function lease(context: DeliveryContext): number {
  return context.now() + context.options.timeoutMs + LEASE_MARGIN_MS;
}

/** Waits `ms`, or less when stopped. */
function sleep(context: DeliveryContext, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const wake = (): void => {
      clearTimeout(timer);
      context.sleepers.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    timer.unref();
    context.sleepers.add(wake);
  });
}

/** Why a push URL may not be called now, or the addresses it may be called at. */
async function vet(
  urls: PushUrlPolicy | undefined,
  url: string,
): Promise<{ refused: string } | { addresses?: string[] }> {
  if (urls === undefined) return {};
  try {
    return { addresses: await urls.check(url) };
  } catch (error) {
    if (!isFleetgateError(error)) throw error;
    return { refused: `${error.code}: ${error.message}` };
  }
}

/**
 * Ends a delivery that is tried no more: recorded `dead` after `attempts` tries with `error`,
 * counted, and published on `system.error` as `why`.
 */
async function endDead(
  context: DeliveryContext,
  key: DeliveryKey,
  attempts: number,
  error: string,
  why: string,
): Promise<void> {
  const { options, store, now } = context;
  await store.endDelivery(key, { status: 'dead', attempts, error, at: now() });
  options.onOutcome?.('dead');
  options.onError(new Error(why), 'proxy.push');
}

/**
 * Tries a delivery whose try number `taken` this process holds, until it ends or pauses; `tried`
 * is called once the first of these tries has been answered or failed.
 */
async function deliver(
  context: DeliveryContext,
  config: ProxyPushConfig,
  key: DeliveryKey,
  task: Task,
  taken: number,
  tried: () => void,
): Promise<void> {
  const { options, store, now } = context;
  const event: StreamResponse = { payload: { $case: 'task', value: task } };
  const { body, contentType } = serializers[config.protocol].serialize(event, task);
  let attempt = taken;
  for (;;) {
    let lastError = '';
    const vetted = await vet(options.urls, config.config.url);
    if ('refused' in vetted) {
      tried();
      const why = `Push of task ${key.taskId} (${key.state}) not sent: ${vetted.refused}`;
      await endDead(context, key, attempt, vetted.refused, why);
      return;
    }
    let status: number | undefined;
    try {
      status = await post(options, config.config.url, vetted.addresses, {
        headers: { 'content-type': contentType, ...authHeaders(config.config) },
        body,
      });
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    tried();
    if (status !== undefined) {
      if (status >= 200 && status < 300) {
        await store.endDelivery(key, { status: 'delivered', attempts: attempt, at: now() });
        options.onOutcome?.('delivered');
        return;
      }
      lastError = `HTTP ${status}`;
    }
    if (attempt >= options.attempts) {
      const why = `Push of task ${key.taskId} (${key.state}) to ${config.config.url} failed ${attempt} times: ${lastError}`;
      await endDead(context, key, attempt, lastError, why);
      return;
    }
    const delay = options.backoffMs * 2 ** (attempt - 1);
    await store.retryAt(key, attempt, now() + delay, lastError);
    options.onOutcome?.('retried');
    await sleep(context, delay);
    // Stopped: the next try stays due in the store for whichever replica sweeps first.
    if (context.stopped) return;
    if (!(await store.takeAttempt(key, attempt, now(), lease(context)))) return;
    attempt += 1;
  }
}

/**
 * Starts trying a delivery this process holds, in the background (`idle` waits for it); resolves
 * once its first try has been answered or failed (or the delivery ended without one).
 */
function start(
  context: DeliveryContext,
  config: ProxyPushConfig,
  key: DeliveryKey,
  task: Task,
  taken: number,
): Promise<void> {
  const { options, held, running } = context;
  const id = keyOf(key);
  held.add(id);
  let tried!: () => void;
  const firstTry = new Promise<void>((resolve) => (tried = resolve));
  const work = deliver(context, config, key, task, taken, tried)
    .catch((error: unknown) => options.onError(error, 'proxy.push'))
    .finally(() => {
      held.delete(id);
      tried();
    });
  running.add(work);
  void work.finally(() => running.delete(work));
  return firstTry;
}

/** Claims and starts the delivery of `task` in `state` to each configuration of it. */
async function notify(
  context: DeliveryContext,
  task: Task,
  state: string,
  options: NotifyOptions,
): Promise<void> {
  const { store, now } = context;
  if (context.stopped) return;
  const firstTries: Promise<void>[] = [];
  for (const config of options.configs ?? (await store.listPush(task.id))) {
    const key = { taskId: task.id, configId: config.configId, state };
    if (!(await store.claimDelivery(key, task, now(), lease(context)))) continue;
    firstTries.push(start(context, config, key, task, 1));
  }
  if (options.firstTry === true) await Promise.all(firstTries);
}

async function sweepOnce(context: DeliveryContext): Promise<void> {
  const { options, store, now } = context;
  for (const due of await store.dueDeliveries(now(), SWEEP_BATCH)) {
    if (context.stopped) return;
    if (context.held.has(keyOf(due))) continue;
    const config = await store.getPush(due.taskId, due.configId);
    const task = due.task ?? (await store.get(due.taskId))?.task;
    const gone =
      config === undefined
        ? 'the push configuration was deleted'
        : task === undefined
          ? 'no such task'
          : due.attempts >= options.attempts
            ? `the last of ${options.attempts} tries was left unanswered (its sender stopped)`
            : undefined;
    if (gone !== undefined || config === undefined || task === undefined) {
      if (await store.takeAttempt(due, due.attempts, now(), lease(context))) {
        await store.endDelivery(due, {
          status: 'dead',
          attempts: due.attempts,
          error: gone ?? 'gone',
          at: now(),
        });
        options.onOutcome?.('dead');
      }
      continue;
    }
    if (!(await store.takeAttempt(due, due.attempts, now(), lease(context)))) continue;
    void start(context, config, due, task, due.attempts + 1);
  }
}

/** Runs a sweep, or joins the one under way. */
function sweep(context: DeliveryContext): Promise<void> {
  context.sweeping ??= sweepOnce(context)
    .catch((error: unknown) => context.options.onError(error, 'proxy.push.sweep'))
    .finally(() => {
      context.sweeping = undefined;
    });
  return context.sweeping;
}
