/**
 * The proxy's metrics, on the gateway's registry: requests by agent, A2A method and outcome, the
 * states the proxy's tasks reach, the time to the first event of a stream, the calls held for
 * approval right now, and push deliveries.
 */
import type { Registry } from 'prom-client';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { A2AError } from '@a2a-js/sdk/errors';
import type { TaskStateName } from '../../protocol/index.js';
import { instrumentsOn } from '../http/metrics-instruments.js';

/**
 * The `agent` label of a request for an agent the gateway does not know. The name comes from the
 * URL, before any token is checked: counted by it, every caller could add a series per name it
 * makes up (up to the router's 512 characters each). No configured agent can be named this (agent
 * names are `[a-z0-9][a-z0-9_-]*`).
 */
export const UNKNOWN_AGENT_LABEL = '(unknown)';

/** The `agent` label of a request for `agent`: its name if `knows` it, else {@link UNKNOWN_AGENT_LABEL}. */
export function agentLabel(agent: string | undefined, knows: (agent: string) => boolean): string {
  return agent !== undefined && knows(agent) ? agent : UNKNOWN_AGENT_LABEL;
}

/** The proxy's metrics. */
export interface ProxyMetrics {
  /**
   * Counts one request (`status`: `ok`, `cancelled` for a stream the client left, or the A2A error
   * reason in lower case). `agent` is a known agent's name or {@link UNKNOWN_AGENT_LABEL}.
   */
  request: (agent: string, method: string, status: string) => void;
  state: (agent: string, state: TaskStateName) => void;
  held: (agent: string, delta: 1 | -1) => void;
  firstByte: (agent: string, method: string, seconds: number) => void;
  push: (outcome: 'delivered' | 'retried' | 'dead') => void;
}

/** The outcome label of an error. */
export function errorStatus(error: unknown): string {
  return error instanceof A2AError ? error.reason.toLowerCase() : 'internal';
}

/** Registers the proxy's metrics on `registry`. */
export function createProxyMetrics(registry: Registry): ProxyMetrics {
  const metric = instrumentsOn(registry);
  const requests = metric.counter(
    'a2a_proxy_requests_total',
    `A2A proxy requests by agent (${UNKNOWN_AGENT_LABEL} for every name the gateway does not know), A2A method and outcome (ok, cancelled: a stream the client left, or the A2A error reason)`,
    ['agent', 'method', 'status'],
  );
  const states = metric.counter(
    'a2a_proxy_task_states_total',
    'States the proxy tasks reached, by agent',
    ['agent', 'state'],
  );
  const held = metric.gauge(
    'a2a_proxy_held_for_approval',
    'Client calls this process holds while their approval is pending, by agent',
    ['agent'],
  );
  const firstByte = metric.histogram(
    'a2a_proxy_stream_first_byte_seconds',
    'Time from a streaming request to its first event, by agent and method',
    ['agent', 'method'],
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  );
  const pushes = metric.counter(
    'a2a_proxy_push_deliveries_total',
    'Push deliveries to proxy clients by outcome (delivered, retried, dead)',
    ['outcome'],
  );
  return {
    request: (agent, method, status) => requests.inc({ agent, method, status }),
    state: (agent, state) => states.inc({ agent, state }),
    held: (agent, delta) => held.inc({ agent }, delta),
    firstByte: (agent, method, seconds) => firstByte.observe({ agent, method }, seconds),
    push: (outcome) => pushes.inc({ outcome }),
  };
}

/** The request handler with every call counted (and streams timed to their first event). */
export function measured(
  agent: string,
  handler: A2ARequestHandler,
  metrics: ProxyMetrics,
): A2ARequestHandler {
  const unary =
    <A extends unknown[], R>(method: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        const result = await fn(...args);
        metrics.request(agent, method, 'ok');
        return result;
      } catch (error) {
        metrics.request(agent, method, errorStatus(error));
        throw error;
      }
    };
  const streamed = <A extends unknown[], T>(
    method: string,
    fn: (...args: A) => AsyncGenerator<T, void, undefined>,
  ) =>
    async function* (...args: A): AsyncGenerator<T, void, undefined> {
      const started = performance.now();
      let first = true;
      // A stream the client left (`return()` at a yield) ends neither ok nor failed: `cancelled`.
      let counted = false;
      try {
        for await (const event of fn(...args)) {
          if (first) {
            first = false;
            metrics.firstByte(agent, method, (performance.now() - started) / 1000);
          }
          yield event;
        }
        counted = true;
        metrics.request(agent, method, 'ok');
      } catch (error) {
        counted = true;
        metrics.request(agent, method, errorStatus(error));
        throw error;
      } finally {
        if (!counted) metrics.request(agent, method, 'cancelled');
      }
    };
  return {
    getAgentCard: () => handler.getAgentCard(),
    getAuthenticatedExtendedAgentCard: unary('GetExtendedAgentCard', (p, c) =>
      handler.getAuthenticatedExtendedAgentCard(p, c),
    ),
    sendMessage: unary('SendMessage', (p, c) => handler.sendMessage(p, c)),
    sendMessageStream: streamed('SendStreamingMessage', (p, c) => handler.sendMessageStream(p, c)),
    getTask: unary('GetTask', (p, c) => handler.getTask(p, c)),
    cancelTask: unary('CancelTask', (p, c) => handler.cancelTask(p, c)),
    createTaskPushNotificationConfig: unary('CreateTaskPushNotificationConfig', (p, c) =>
      handler.createTaskPushNotificationConfig(p, c),
    ),
    getTaskPushNotificationConfig: unary('GetTaskPushNotificationConfig', (p, c) =>
      handler.getTaskPushNotificationConfig(p, c),
    ),
    listTaskPushNotificationConfigs: unary('ListTaskPushNotificationConfigs', (p, c) =>
      handler.listTaskPushNotificationConfigs(p, c),
    ),
    deleteTaskPushNotificationConfig: unary('DeleteTaskPushNotificationConfig', (p, c) =>
      handler.deleteTaskPushNotificationConfig(p, c),
    ),
    resubscribe: streamed('SubscribeToTask', (p, c) => handler.resubscribe(p, c)),
    listTasks: unary('ListTasks', (p, c) => handler.listTasks(p, c)),
  };
}
