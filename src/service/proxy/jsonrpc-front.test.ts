import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentCard, Task, type StreamResponse } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { UnauthenticatedUser, defaultServerCallContextBuilder } from '@a2a-js/sdk/server';
import { createJsonRpcFront } from './jsonrpc-front.js';

const CARD = AgentCard.fromJSON({
  name: 'fake',
  supportedInterfaces: [
    { url: 'http://127.0.0.1/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  ],
});

const EVENT: StreamResponse = {
  payload: {
    $case: 'task',
    value: Task.fromJSON({ id: 't1', contextId: 'c1', status: { state: 'TASK_STATE_WORKING' } }),
  },
};

/** A request handler whose only stream is the one a test gives it. */
class StreamingHandler implements A2ARequestHandler {
  constructor(readonly events: () => AsyncGenerator<StreamResponse, void, undefined>) {}
  getAgentCard = (): Promise<AgentCard> => Promise.resolve(CARD);
  sendMessageStream = (): AsyncGenerator<StreamResponse, void, undefined> => this.events();
  resubscribe = (): AsyncGenerator<StreamResponse, void, undefined> => this.events();
  getAuthenticatedExtendedAgentCard = unsupported;
  sendMessage = unsupported;
  getTask = unsupported;
  cancelTask = unsupported;
  createTaskPushNotificationConfig = unsupported;
  getTaskPushNotificationConfig = unsupported;
  listTaskPushNotificationConfigs = unsupported;
  deleteTaskPushNotificationConfig = unsupported;
  listTasks = unsupported;
}

function unsupported(): Promise<never> {
  return Promise.reject(new UnsupportedOperationError());
}

const STREAM_BODY = {
  jsonrpc: '2.0',
  id: 'st',
  method: 'SendStreamingMessage',
  params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
};

let app: FastifyInstance | undefined;

afterEach(async () => {
  // fetch may leave a spare keep-alive socket that never carried a request: not ours to wait for.
  app?.server.closeAllConnections();
  await app?.close();
  app = undefined;
});

/** The front on a fastify app of its own; `onClose` hears each response's `close`. */
async function serve(
  handler: A2ARequestHandler,
  onError: (error: unknown, where: string) => void,
  onClose: () => void = () => undefined,
): Promise<string> {
  const front = createJsonRpcFront({
    requestHandler: handler,
    contextBuilder: defaultServerCallContextBuilder,
    onError,
  });
  app = Fastify();
  app.addHook('onRequest', async (_request, reply) => {
    reply.raw.once('close', onClose);
  });
  app.post('/', (request, reply) =>
    front.serve(request, reply, request.body, new UnauthenticatedUser()),
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`;
}

function post(url: string, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify(STREAM_BODY),
    ...(signal === undefined ? {} : { signal }),
  });
}

describe('v1.0 JSON-RPC front', () => {
  it('ends a stream that fails after its first event with an SSE error event', async () => {
    const onError = vi.fn();
    const url = await serve(
      new StreamingHandler(async function* () {
        yield EVENT;
        await Promise.resolve();
        throw new Error('the agent went away');
      }),
      onError,
    );
    const response = await post(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const blocks = (await response.text()).split('\n\n').filter((b) => b !== '');
    expect(blocks).toHaveLength(2);
    expect(JSON.parse(blocks[0]!.slice('data: '.length))).toMatchObject({
      id: 'st',
      result: { task: { id: 't1' } },
    });
    const [event, data] = blocks[1]!.split('\n');
    expect(event).toBe('event: error');
    expect(JSON.parse(data!.slice('data: '.length))).toEqual({
      jsonrpc: '2.0',
      id: 'st',
      error: { code: -32603, message: 'the agent went away' },
    });
    expect(onError).toHaveBeenCalledWith(expect.any(Error), 'proxy.jsonrpc.stream');
  });

  it('stops following the stream once the client hangs up', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let stopped: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (stopped = resolve));
    let asked = 0;
    const url = await serve(
      new StreamingHandler(async function* () {
        try {
          for (;;) {
            asked += 1;
            yield EVENT;
            // The agent's next event comes once the client has gone.
            await released;
          }
        } finally {
          stopped();
        }
      }),
      () => undefined,
      () => release(),
    );
    const abort = new AbortController();
    const response = await post(url, abort.signal);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"t1"');
    abort.abort();
    // Without `return()` the front would ask for the next event for ever; with it the
    // stream's `finally` runs at the event after the hang-up.
    await ended;
    expect(asked).toBe(2);
  });
});
