/**
 * The store and the bus a URL names refuse a query option they do not take before anything
 * connects: a TCP port counts the connections made to it.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import { openBus } from './gateway-parts.js';
import { openGatewayStore } from './migrations.js';

describe('opening the store and the bus a URL names', () => {
  let server: Server;
  let port: number;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('refuses a store URL option the store does not take, before connecting, without the password', async () => {
    const error: unknown = await openGatewayStore(
      `postgres://fg:hunter2@127.0.0.1:${port}/db?shema=gw_b`,
    ).catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_STORE_URL_INVALID')).toBe(true);
    expect((error as Error).message).toBe(
      `Store URL postgres://fg:***@127.0.0.1:${port}/db?shema=gw_b: unknown query option "shema"; did you mean "schema"? (allowed: schema, sslmode, sslrootcert, sslcert, sslkey, ssl, sslnegotiation, uselibpqcompat, host, port, user, password, application_name, options)`,
    );
    await expect(
      openGatewayStore(`postgres://fg@127.0.0.1:${port}/db?schema=Bad-Schema;drop`),
    ).rejects.toSatisfy((e: unknown) => isFleetgateError(e, 'FLEETGATE_STORE_URL_INVALID'));
    expect(connections).toBe(0);
  });

  it('refuses a bus URL option the bus does not take, before connecting', async () => {
    for (const query of ['streem=X&prefx=y', 'stream=dw.bad', 'prefix=dw.x']) {
      await expect(openBus(`nats://127.0.0.1:${port}?${query}`)).rejects.toSatisfy((e: unknown) =>
        isFleetgateError(e, 'FLEETGATE_CONFIG_INVALID'),
      );
    }
    expect(connections).toBe(0);
  });
});
