/**
 * Push deliveries go only where the push-URL policy lets them, at each try and not only at
 * registration: a name that now resolves to the gateway's own network ends the delivery dead
 * without a request, and a receiver's redirect is not followed (it could lead anywhere). A real
 * SQLite store and real HTTP receivers on loopback.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskState, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetgateError } from '../src/protocol/index.js';
import { loadA2aProxy, type ProxyTaskStore } from '../src/service/proxy/index.js';
type PushUrlPolicy =
  Awaited<ReturnType<typeof loadA2aProxy>> extends {
    createPushUrlPolicy: (...args: never[]) => infer P;
  }
    ? P
    : never;
import { uniqueName } from './support/services.js';
import { openTestStore, type TestStore } from './support/stores.js';

const { createProxyTaskStore, createPushDelivery, createPushUrlPolicy } = await loadA2aProxy();

function task(id: string): Task {
  return {
    id,
    contextId: `ctx-${id}`,
    status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: undefined, message: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

describe('push deliveries and the push-URL policy', () => {
  let opened: TestStore;
  let tasks: ProxyTaskStore;
  let receiver: Server;
  let redirector: Server;
  let hits = 0;
  let receiverUrl: string;
  let redirectUrl: string;

  beforeAll(async () => {
    opened = await openTestStore({ kind: 'sqlite', direct: true, skip: false }, 'fgpushurl', 1);
    tasks = createProxyTaskStore(opened.store.db, { sqlite: opened.store.sqlite });
    receiver = createServer((req, res) => {
      hits += 1;
      req.resume();
      req.on('end', () => res.writeHead(200).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    redirector = createServer((req, res) => {
      req.resume();
      res.writeHead(307, { location: receiverUrl }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
    redirectUrl = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/go`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    await new Promise<void>((resolve) => redirector.close(() => resolve()));
    await opened.remove();
  });

  async function deliver(url: string, refuse: (url: string) => boolean, urls?: PushUrlPolicy) {
    const id = uniqueName('push-url');
    const now = Date.now();
    await tasks.claim({
      id,
      agent: 'ops',
      caller: 'alice',
      messageId: `m-${id}`,
      contextId: `ctx-${id}`,
      state: 'working',
      task: task(id),
      protocol: '1.0',
      createdAt: now,
    });
    await tasks.setPush(
      {
        taskId: id,
        configId: 'hook',
        config: { tenant: '', id: 'hook', taskId: id, url, token: 't', authentication: undefined },
        protocol: '1.0',
      } as never,
      now,
    );
    const errors: string[] = [];
    const sender = createPushDelivery({
      store: tasks,
      attempts: 2,
      backoffMs: 10,
      timeoutMs: 2000,
      sweepMs: 0,
      urls: urls ?? {
        check: (given) =>
          refuse(given)
            ? Promise.reject(
                new FleetgateError('FLEETGATE_PUSH_URL_REFUSED', `Push URL ${given} is refused.`),
              )
            : Promise.resolve([]),
      },
      onError: (error) => errors.push(String(error)),
    });
    await sender.notify(task(id), 'completed');
    await sender.idle();
    sender.stop();
    return { deliveries: await tasks.deliveries(id), errors };
  }

  it('ends a delivery whose URL is refused at the time of the try, sending nothing', async () => {
    const before = hits;
    const { deliveries, errors } = await deliver(receiverUrl, () => true);
    expect(hits).toBe(before);
    expect(deliveries).toMatchObject([{ status: 'dead', attempts: 1 }]);
    expect(errors.join('\n')).toContain('FLEETGATE_PUSH_URL_REFUSED');
  });

  it('does not follow a redirect', async () => {
    const before = hits;
    const { deliveries } = await deliver(redirectUrl, () => false);
    expect(hits).toBe(before);
    expect(deliveries).toMatchObject([{ status: 'dead', attempts: 2 }]);
  });

  it('delivers to a URL the policy allows', async () => {
    const before = hits;
    const { deliveries } = await deliver(receiverUrl, () => false);
    expect(hits).toBe(before + 1);
    expect(deliveries).toMatchObject([{ status: 'delivered', attempts: 1 }]);
  });

  it('connects to the address it checked, not to what the name resolves to at connect time', async () => {
    const before = hits;
    const port = new URL(receiverUrl).port;
    // The policy's resolver vets the name (loopback, allowed on a loopback gateway); the system's
    // resolver knows no such name: a delivery that resolved it again could not connect.
    let resolved = 0;
    const urls = createPushUrlPolicy({
      listenHost: '127.0.0.1',
      ownAddresses: [],
      resolve: (host) => {
        resolved += 1;
        return Promise.resolve(host === 'receiver.invalid' ? ['127.0.0.1'] : []);
      },
    });
    const { deliveries, errors } = await deliver(
      `http://receiver.invalid:${port}/hook`,
      () => false,
      urls,
    );
    expect(errors).toEqual([]);
    expect(deliveries).toMatchObject([{ status: 'delivered', attempts: 1 }]);
    expect(hits).toBe(before + 1);
    expect(resolved).toBe(1);
  });
});
