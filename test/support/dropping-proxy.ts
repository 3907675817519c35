/**
 * A TCP-level stand-in for a flaky network in front of an agent: an HTTP proxy that forwards every
 * request as it came (headers included) and cuts the first streaming response after its first
 * event, so the caller must resume the task's stream with SubscribeToTask.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the proxy forwarded: its JSON-RPC method (or REST path) and the agent's status. */
export interface ProxiedExchange {
  method: string;
  status: number;
}

/** A running {@link startDroppingProxy}. */
export interface DroppingProxy {
  url: string;
  /** Streams cut so far (at most one). */
  cut: () => number;
  /** Every exchange forwarded so far, oldest first. */
  exchanges: ProxiedExchange[];
  close: () => Promise<void>;
}

/**
 * Forwards to the agent; the first SendStreamingMessage response is cut after its first chunk
 * (unless `drop` is false). `onResubscribed` runs once the agent accepted a SubscribeToTask (its
 * stream is attached).
 */
export async function startDroppingProxy(
  target: string,
  onResubscribed: () => void = () => undefined,
  options: { drop?: boolean } = {},
): Promise<DroppingProxy> {
  const { hostname, port } = new URL(target);
  let cut = options.drop === false ? 1 : 0;
  const exchanges: ProxiedExchange[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const dropThis = cut === 0 && body.toString().includes('SendStreamingMessage');
      const resubscribe = body.toString().includes('SubscribeToTask');
      const method =
        /"method"\s*:\s*"([^"]+)"/.exec(body.toString())?.[1] ?? `${req.method} ${req.url}`;
      const upstream = httpRequest(
        { hostname, port, path: req.url, method: req.method, headers: req.headers },
        (up) => {
          const status = up.statusCode ?? 502;
          exchanges.push({ method, status });
          res.writeHead(status, up.headers);
          if (resubscribe && status < 300) onResubscribed();
          up.on('data', (chunk: Buffer) => {
            if (!dropThis) {
              res.write(chunk);
              return;
            }
            if (cut > 0) return;
            cut += 1;
            up.destroy();
            // Cut the connection once the first event reached the client.
            res.write(chunk, () => setTimeout(() => res.socket?.destroy(), 20));
          });
          up.on('end', () => res.end());
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: () => (options.drop === false ? 0 : cut),
    exchanges,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
