/**
 * A proxied stream is counted once however it ends: `ok` at its end, the error's reason when it
 * fails, `cancelled` when the client leaves before its end (the stream is `return()`ed at a yield).
 */
import type { StreamResponse } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import type { ProxyMetrics } from './metrics.js';
import { measured } from './metrics.js';

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
