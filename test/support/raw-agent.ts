/**
 * A raw node:http "agent" that speaks just enough A2A v1.0 JSON-RPC to be called — and then
 * misbehaves as the test tells it to: redirects elsewhere, answers with a huge body, drips its
 * answer a byte at a time, forges task ids, loops on input-required, sends malformed parts. It
 * serves a v1.0 card at `/.well-known/agent-card.json` (declaring effect-domain-v1) and takes
 * JSON-RPC at `/rpc`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EFFECT_DOMAIN_V1_URI, WORLDSTATE_DELTA_MIME } from '../../src/protocol/index.js';

/** One JSON-RPC request the raw agent received. */
export interface RawCall {
  method: string;
  params: Record<string, unknown>;
  id: unknown;
  headers: IncomingMessage['headers'];
  path: string;
}

/**
 * Answers one JSON-RPC request; returns true when it wrote the response itself. Returning false
 * (or nothing) gives the default: a completed task for `SendMessage`, the task for `GetTask`.
 */
export type RawHandler = (
  call: RawCall,
  res: ServerResponse,
  agent: RawAgent,
) => boolean | void | Promise<boolean | void>;

export interface RawAgent {
  url: string;
  /** Every JSON-RPC call received, in order. */
  calls: RawCall[];
  /** Bytes written to responses on this server so far. */
  bytesWritten(): number;
  setHandler(handler: RawHandler | undefined): void;
  close(): Promise<void>;
}

/** A v1.0 task as JSON with the given state and artifacts' parts. */
export function taskJson(
  id: string,
  state: string,
  parts: unknown[] = [],
  contextId = 'ctx',
): Record<string, unknown> {
  return {
    id,
    contextId,
    status: { state },
    artifacts: parts.length === 0 ? [] : [{ artifactId: `a-${id}`, name: 'result', parts }],
  };
}

/** A v1.0 worldstate-delta data part as JSON. */
export function deltaPartJson(deltas: unknown[]): Record<string, unknown> {
  return { data: { deltas }, metadata: { mimeType: WORLDSTATE_DELTA_MIME } };
}

/** Writes a JSON-RPC result. */
export function rpcResult(res: ServerResponse, id: unknown, result: unknown): true {
  const body = JSON.stringify({ jsonrpc: '2.0', id, result });
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  return true;
}

export async function startRawAgent(
  name: string,
  handler?: RawHandler,
  skills: readonly string[] = ['s'],
): Promise<RawAgent> {
  let current = handler;
  const calls: RawCall[] = [];
  let written = 0;
  const tasks = new Map<string, Record<string, unknown>>();
  let url = '';
  const card = (): Record<string, unknown> => ({
    name,
    description: `raw agent ${name}`,
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extensions: [{ uri: EFFECT_DOMAIN_V1_URI }],
    },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: skills.map((id) => ({ id, name: id, description: id, tags: [] })),
  });
  const agent: RawAgent = {
    url: '',
    calls,
    bytesWritten: () => written,
    setHandler(next) {
      current = next;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const write = res.write.bind(res);
    res.write = ((chunk: unknown, ...rest: never[]) => {
      if (typeof chunk === 'string' || chunk instanceof Uint8Array) {
        written += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      }
      return write(chunk, ...rest);
    }) as typeof res.write;
    if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card()));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        let message: { method?: string; params?: Record<string, unknown>; id?: unknown };
        try {
          message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof message;
        } catch {
          res.writeHead(400).end();
          return;
        }
        const call: RawCall = {
          method: message.method ?? '',
          params: message.params ?? {},
          id: message.id,
          headers: req.headers,
          path: req.url ?? '',
        };
        calls.push(call);
        if (current !== undefined && (await current(call, res, agent)) === true) return;
        if (call.method === 'SendMessage') {
          const id = randomUUID();
          const task = taskJson(id, 'TASK_STATE_COMPLETED', [{ text: 'done' }]);
          tasks.set(id, task);
          rpcResult(res, call.id, { task });
          return;
        }
        if (call.method === 'GetTask') {
          const task = tasks.get(String(call.params['id']));
          rpcResult(
            res,
            call.id,
            task ?? taskJson(String(call.params['id']), 'TASK_STATE_WORKING'),
          );
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: call.id,
            error: { code: -32601, message: 'no such method' },
          }),
        );
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  agent.url = url;
  return agent;
}
