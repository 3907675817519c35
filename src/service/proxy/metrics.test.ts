/**
 * A proxied stream is counted once however it ends: `ok` at its end, the error's reason when it
 * fails, `cancelled` when the client leaves before its end (the stream is `return()`ed at a yield).
 * A request for an agent the gateway does not know is labelled `(unknown)`, never by the name sent.
 */
import type { StreamResponse } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { ProxyMetrics } from './metrics.js';
import { agentLabel, createProxyMetrics, measured, UNKNOWN_AGENT_LABEL } from './metrics.js';

const EVENT = { payload: undefined } as unknown as StreamResponse;

/** A handler whose stream yields `events` events, then ends or throws. */
function streaming(events: number, fail?: Error): A2ARequestHandler {
  return {
    async *sendMessageStream() {
      for (let i = 0; i < events; i += 1) yield await Promise.resolve(EVENT);
      if (fail !== undefined) throw fail;
    },
  } as unknown as A2ARequestHandler;
}

function counting(): { metrics: ProxyMetrics; counted: string[] } {
  const counted: string[] = [];
  const metrics = {
    request: (_agent: string, method: string, status: string) =>
      counted.push(`${method} ${status}`),
    firstByte: () => undefined,
  } as unknown as ProxyMetrics;
  return { metrics, counted };
}

const params = {} as Parameters<A2ARequestHandler['sendMessageStream']>[0];
const context = {} as ServerCallContext;

describe('measured streams', () => {
  it('counts a stream the client left as cancelled, once', async () => {
    const { metrics, counted } = counting();
    const stream = measured('a', streaming(5), metrics).sendMessageStream(params, context);
    await stream.next();
    await stream.return(undefined);
    expect(counted).toEqual(['SendStreamingMessage cancelled']);
  });

  it('counts a stream read to its end as ok, and a failed one by its reason', async () => {
    const { metrics, counted } = counting();
    for await (const _event of measured('a', streaming(2), metrics).sendMessageStream(
      params,
      context,
    )) {
      // read to the end
    }
    const failing = measured('a', streaming(1, new TaskNotFoundError('gone')), metrics);
    await expect(
      (async () => {
        for await (const _event of failing.sendMessageStream(params, context)) {
          // read until it fails
        }
      })(),
    ).rejects.toThrow('gone');
    expect(counted).toEqual(['SendStreamingMessage ok', 'SendStreamingMessage task_not_found']);
  });
});

describe('agentLabel', () => {
  const knows = (agent: string): boolean => agent === 'ops';

  it('labels a known agent by its name, and every other name (or none) with one value', () => {
    expect(agentLabel('ops', knows)).toBe('ops');
    expect(agentLabel('x'.repeat(512), knows)).toBe(UNKNOWN_AGENT_LABEL);
    expect(agentLabel('unknown', knows)).toBe(UNKNOWN_AGENT_LABEL);
    expect(agentLabel(undefined, knows)).toBe(UNKNOWN_AGENT_LABEL);
  });

  it('is a value no configured agent can be named, and the help text names it', async () => {
    expect(UNKNOWN_AGENT_LABEL).not.toMatch(/^[a-z0-9][a-z0-9_-]{0,62}$/);
    const registry = new Registry();
    createProxyMetrics(registry).request(UNKNOWN_AGENT_LABEL, 'unknown', 'agent_unknown');
    const text = await registry.metrics();
    expect(text).toMatch(/^# HELP a2a_proxy_requests_total .*\(unknown\) for every name/m);
    expect(text).toContain(
      'a2a_proxy_requests_total{agent="(unknown)",method="unknown",status="agent_unknown"} 1',
    );
  });
});
