/**
 * Push notifications to the proxy's clients: each update of a task (each state it reaches) is
 * sent once to each configuration the client registered — v1.0 `StreamResponse` bodies, or v0.3
 * task bodies for a configuration a v0.3 client registered — with the client's token, tried again
 * with a doubling delay, and recorded `dead` after the last try (published on `system.error`).
 * The delivery is claimed in the store first, so one replica sends it.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { V1PushNotificationSerializer } from '@a2a-js/sdk/server';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import type { ProxyPushConfig, ProxyTaskStore } from './task-store.js';

/** Options of {@link createPushDelivery}. */
export interface PushDeliveryOptions {
  store: ProxyTaskStore;
  /** Tries per update (the first included). */
  attempts: number;
  /** Delay before the second try; doubles each time. */
  backoffMs: number;
  /** Longest wait for one answer. */
  timeoutMs: number;
  fetch?: typeof fetch;
  now?: () => number;
  /** A delivery went dead (or failed to be recorded). */
  onError: (error: unknown, where: string) => void;
  /** Counts outcomes (metrics). */
  onOutcome?: (outcome: 'delivered' | 'retried' | 'dead') => void;
}

/** Sends a task's updates to its clients' push configurations. */
export interface PushDelivery {
  /** Sends `task` (its current state) to every configuration of it, once per state. */
  notify(task: Task, state: string): Promise<void>;
  /** Resolves when every delivery started so far ended (close, tests). */
  idle(): Promise<void>;
  stop(): void;
}

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

/** Builds the push delivery of the proxy. */
export function createPushDelivery(options: PushDeliveryOptions): PushDelivery {
  const now = options.now ?? Date.now;
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const running = new Set<Promise<void>>();
  let stopped = false;

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => setTimeout(resolve, ms).unref());

  async function deliver(config: ProxyPushConfig, task: Task, state: string): Promise<void> {
    const event: StreamResponse = { payload: { $case: 'task', value: task } };
    const { body, contentType } = serializers[config.protocol].serialize(event, task);
    let lastError = '';
    for (let attempt = 1; attempt <= options.attempts; attempt += 1) {
      if (stopped) return;
      try {
        const response = await doFetch(config.config.url, {
          method: 'POST',
          headers: { 'content-type': contentType, ...authHeaders(config.config) },
          body,
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        await response.body?.cancel();
        if (response.ok) {
          await options.store.endDelivery(
            { taskId: task.id, configId: config.configId, state },
            { status: 'delivered', attempts: attempt, at: now() },
          );
          options.onOutcome?.('delivered');
          return;
        }
        lastError = `HTTP ${response.status}`;
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error);
      }
      if (attempt < options.attempts) {
        options.onOutcome?.('retried');
        await sleep(options.backoffMs * 2 ** (attempt - 1));
      }
    }
    await options.store.endDelivery(
      { taskId: task.id, configId: config.configId, state },
      { status: 'dead', attempts: options.attempts, error: lastError, at: now() },
    );
    options.onOutcome?.('dead');
    options.onError(
      new Error(
        `Push of task ${task.id} (${state}) to ${config.config.url} failed ${options.attempts} times: ${lastError}`,
      ),
      'proxy.push',
    );
  }

  return {
    async notify(task, state) {
      if (stopped) return;
      for (const config of await options.store.listPush(task.id)) {
        if (!(await options.store.claimDelivery(task.id, config.configId, state, now()))) continue;
        const work = deliver(config, task, state).catch((error: unknown) =>
          options.onError(error, 'proxy.push'),
        );
        running.add(work);
        void work.finally(() => running.delete(work));
      }
    },
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
    stop() {
      stopped = true;
    },
  };
}
