import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BLAST_V1_URI, EFFECT_DOMAIN_V1_URI, HITL_MODE_V1_URI } from '../../src/protocol/index.js';

/** How the card server answers for one agent. */
export type CardBehaviour =
  | { type: 'card'; card: unknown; etag?: boolean }
  | { type: 'status'; status: number }
  | { type: 'hang' }
  | { type: 'text'; text: string }
  | { type: 'huge'; bytes: number }
  | { type: 'redirect'; location: string }
  /** Served only at the legacy `/.well-known/agent.json`. */
  | { type: 'legacy'; card: unknown };

/** A real HTTP server on 127.0.0.1 serving agent cards at `/agents/<name>/.well-known/…`. */
export interface CardServer {
  origin: string;
  urlOf(name: string): string;
  set(name: string, behaviour: CardBehaviour): void;
  /** Requests per agent, and how many were answered 304. */
  hits(name: string): {
    requests: number;
    notModified: number;
    headers: IncomingMessage['headers'][];
  };
  close(): Promise<void>;
}

const PATH = /^\/agents\/([^/]+)\/\.well-known\/agent(-card)?\.json$/;

export async function startCardServer(): Promise<CardServer> {
  const behaviours = new Map<string, CardBehaviour>();
  const stats = new Map<
    string,
    { requests: number; notModified: number; headers: IncomingMessage['headers'][] }
  >();
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const match = PATH.exec(req.url ?? '');
    const name = match?.[1];
    const behaviour = name === undefined ? undefined : behaviours.get(name);
    if (name === undefined || behaviour === undefined) {
      res.writeHead(404).end();
      return;
    }
    const legacyPath = match?.[2] === undefined;
    if (legacyPath !== (behaviour.type === 'legacy')) {
      res.writeHead(404).end();
      return;
    }
    const stat = stats.get(name) ?? { requests: 0, notModified: 0, headers: [] };
    stats.set(name, stat);
    stat.requests += 1;
    stat.headers.push(req.headers);
    switch (behaviour.type) {
      case 'card': {
        const text = JSON.stringify(behaviour.card);
        const etag = `"${Buffer.from(text).toString('base64url').slice(-16)}-${text.length}"`;
        if (behaviour.etag !== false && req.headers['if-none-match'] === etag) {
          stat.notModified += 1;
          res.writeHead(304, { etag }).end();
          return;
        }
        res.writeHead(200, {
          'content-type': 'application/json',
          ...(behaviour.etag === false ? {} : { etag }),
        });
        res.end(text);
        return;
      }
      case 'status':
        res.writeHead(behaviour.status).end('nope');
        return;
      case 'hang':
        hanging.add(res);
        return;
      case 'text':
        res.writeHead(200, { 'content-type': 'application/json' }).end(behaviour.text);
        return;
      case 'huge': {
        // Chunked, no content-length: the client must stop reading at its own limit.
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 32);
        let sent = 0;
        const pump = (): void => {
          while (sent < behaviour.bytes) {
            sent += chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        res.on('error', () => undefined);
        pump();
        return;
      }
      case 'redirect':
        res.writeHead(302, { location: behaviour.location }).end();
        return;
      case 'legacy':
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(behaviour.card));
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    urlOf: (name) => `${origin}/agents/${name}`,
    set: (name, behaviour) => behaviours.set(name, behaviour),
    hits: (name) => stats.get(name) ?? { requests: 0, notModified: 0, headers: [] },
    close: () =>
      new Promise((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A card declaring blast-v1 (and optionally hitl-mode-v1 / effect-domain-v1) for some skills. */
export function cardWith(
  name: string,
  blast: Record<string, string>,
  extra: { hitl?: Record<string, unknown>; domains?: Record<string, string[]> } = {},
): unknown {
  const skills = new Set([
    ...Object.keys(blast),
    ...Object.keys(extra.hitl ?? {}),
    ...Object.keys(extra.domains ?? {}),
  ]);
  const extensions: unknown[] = [
    {
      uri: BLAST_V1_URI,
      params: {
        skills: Object.fromEntries(Object.entries(blast).map(([k, radius]) => [k, { radius }])),
      },
    },
  ];
  if (extra.hitl)
    extensions.push({
      uri: HITL_MODE_V1_URI,
      params: { skills: extra.hitl },
    });
  if (extra.domains) {
    extensions.push({
      uri: EFFECT_DOMAIN_V1_URI,
      params: {
        skills: Object.fromEntries(
          Object.entries(extra.domains).map(([k, domains]) => [k, { domains }]),
        ),
      },
    });
  }
  return {
    name,
    description: `${name} test agent`,
    version: '1.0.0',
    capabilities: { extensions },
    skills: [...skills].map((id) => ({ id, name: id, description: id, tags: [] })),
  };
}
