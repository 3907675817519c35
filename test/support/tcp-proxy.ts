/**
 * A TCP proxy a test controls, in front of a real server (PostgreSQL, NATS): pass traffic, cut
 * it (every connection reset, new ones refused, as a server that died), or stall it (connections
 * accepted and kept open, nothing forwarded either way, as a server or network that hangs).
 */
import type { AddressInfo, Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';

export type ProxyMode = 'pass' | 'cut' | 'stall';

export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  readonly mode: ProxyMode;
  /** Connections reset so far by {@link cut}. */
  readonly resets: number;
  /** Resets every connection and refuses new ones until {@link pass}. */
  cut(): void;
  /** Keeps connections open but forwards nothing (new ones are accepted and hang too). */
  stall(): void;
  /** Forwards traffic again (new connections; stalled ones resume). */
  pass(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  server: Socket;
  /** Chunks that arrived while stalled, by the socket they are for. */
  toServer: Buffer[];
  toClient: Buffer[];
}

/** Starts a proxy to `host:port` on a free local port. */
export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  let mode: ProxyMode = 'pass';
  let resets = 0;
  const pairs = new Set<Pair>();
  const held = new Set<Socket>();

  function forward(client: Socket): void {
    const server = connect({ host, port });
    const pair: Pair = { client, server, toServer: [], toClient: [] };
    pairs.add(pair);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('error', drop).on('close', drop);
    server.on('error', drop).on('close', drop);
    client.on('data', (chunk: Buffer) => {
      if (mode === 'pass') server.write(chunk);
      else pair.toServer.push(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (mode === 'pass') client.write(chunk);
      else pair.toClient.push(chunk);
    });
  }

  const proxy: Server = createServer((client) => {
    client.setNoDelay(true);
    if (mode === 'cut') {
      resets += 1;
      client.resetAndDestroy();
      return;
    }
    if (mode === 'stall') {
      held.add(client);
      client.on('error', () => held.delete(client)).on('close', () => held.delete(client));
      client.pause();
      return;
    }
    forward(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const listening = (proxy.address() as AddressInfo).port;

  return {
    port: listening,
    get mode() {
      return mode;
    },
    get resets() {
      return resets;
    },
    cut() {
      mode = 'cut';
      for (const pair of pairs) {
        resets += 1;
        pair.client.resetAndDestroy();
        pair.server.destroy();
      }
      pairs.clear();
      for (const socket of held) socket.resetAndDestroy();
      held.clear();
    },
    stall() {
      mode = 'stall';
      for (const pair of pairs) {
        pair.client.pause();
        pair.server.pause();
      }
    },
    pass() {
      mode = 'pass';
      // Stalled data was held, not dropped: a stalled connection resumes where it stopped.
      for (const pair of pairs) {
        for (const chunk of pair.toServer.splice(0)) pair.server.write(chunk);
        for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk);
        pair.client.resume();
        pair.server.resume();
      }
      for (const socket of held) {
        held.delete(socket);
        forward(socket);
        socket.resume();
      }
    },
    async close() {
      proxy.close();
      for (const pair of pairs) {
        pair.client.destroy();
        pair.server.destroy();
      }
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => setTimeout(resolve, 0));
    },
  };
}
