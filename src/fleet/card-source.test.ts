import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardDigest, HttpCardSource } from './card-source.js';

const CARD = JSON.stringify({ name: 'a', skills: [] });

/** The card fetches over node:http (no fetch given): the same outcomes as through fetch. */
describe('HttpCardSource over node:http', () => {
  let server: Server;
  let base: string;
  const seen: IncomingMessage['headers'][] = [];
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/plain/.well-known/agent-card.json': (req, res) => {
      if (req.headers['if-none-match'] === '"v1"') {
        res.writeHead(304, { etag: '"v1"' }).end();
        return;
      }
      res.writeHead(200, { etag: '"v1"', 'last-modified': 'Mon, 01 Dec 2025 00:00:00 GMT' });
      res.end(CARD);
    },
    '/legacy/.well-known/agent.json': (_req, res) => res.end(CARD),
    '/zipped/.well-known/agent-card.json': (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(CARD));
    },
    '/moved/.well-known/agent-card.json': (_req, res) => {
      res.writeHead(302, { location: '/plain/.well-known/agent-card.json' }).end();
    },
    '/broken/.well-known/agent-card.json': (_req, res) => {
      // An error page past the card limit: its body is not read, the status is the reason.
      res.writeHead(500, { 'content-type': 'text/html' }).end('x'.repeat(4096));
    },
    '/big/.well-known/agent-card.json': (_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 8; i += 1) res.write('x'.repeat(512));
      res.end();
    },
    '/declared/.well-known/agent-card.json': (_req, res) => {
      res.writeHead(200, { 'content-length': '999999' }).write('{');
    },
    '/drip/.well-known/agent-card.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).write('{"name":');
    },
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      const route = routes[req.url ?? ''];
      if (route === undefined) res.writeHead(404).end();
      else route(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const source = new HttpCardSource({ maxBytes: 1024, timeoutMs: 300 });
  const target = (path: string) => ({
    name: path,
    url: `${base}/${path}`,
    headers: { Authorization: 'Bearer t' },
  });

  it('fetches a card with its validators, then answers not-modified on a 304', async () => {
    const fetched = await source.fetch(target('plain'));
    expect(fetched).toEqual({
      status: 'fetched',
      url: `${base}/plain/.well-known/agent-card.json`,
      text: CARD,
      digest: cardDigest(CARD),
      validators: { etag: '"v1"', lastModified: 'Mon, 01 Dec 2025 00:00:00 GMT' },
    });
    expect(seen.at(-1)).toMatchObject({
      'a2a-version': '1.0',
      accept: 'application/json',
      authorization: 'Bearer t',
    });
    const again = await source.fetch(target('plain'), { etag: '"v1"' });
    expect(again).toEqual({ status: 'not-modified', url: fetched.url });
  });

  it('falls back to the legacy path, decodes a compressed card, follows a same-origin redirect', async () => {
    expect(await source.fetch(target('legacy'))).toMatchObject({
      url: `${base}/legacy/.well-known/agent.json`,
      text: CARD,
    });
    expect(await source.fetch(target('zipped'))).toMatchObject({ text: CARD });
    expect(await source.fetch(target('moved'))).toMatchObject({
      url: `${base}/plain/.well-known/agent-card.json`,
      text: CARD,
    });
    await expect(source.fetch(target('nowhere'))).rejects.toThrow(
      `${base}/nowhere/.well-known/agent.json: HTTP 404 Not Found (also tried ${base}/nowhere/.well-known/agent-card.json)`,
    );
  });

  it('fails an error status by its status, whatever the size of its body', async () => {
    await expect(source.fetch(target('broken'))).rejects.toMatchObject({
      code: 'FLEETGATE_CARD_FETCH_FAILED',
      message: `${base}/broken/.well-known/agent-card.json: HTTP 500 Internal Server Error`,
      details: { status: 500 },
    });
  });

  it('cuts a card past the limit, declared or counted, and one that does not arrive in time', async () => {
    await expect(source.fetch(target('big'))).rejects.toMatchObject({
      code: 'FLEETGATE_CARD_TOO_LARGE',
      message: `${base}/big/.well-known/agent-card.json: the card is more than 1024 bytes, more than the limit of 1024 bytes`,
    });
    await expect(source.fetch(target('declared'))).rejects.toMatchObject({
      code: 'FLEETGATE_CARD_TOO_LARGE',
      message: expect.stringContaining('the card is 999999 bytes'),
    });
    await expect(source.fetch(target('drip'))).rejects.toMatchObject({
      code: 'FLEETGATE_CARD_FETCH_FAILED',
      message: `${base}/drip/.well-known/agent-card.json: timed out after 300 ms`,
    });
    const controller = new AbortController();
    const pending = source.fetch(target('drip'), {}, controller.signal);
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toThrow(/: aborted$/);
  });

  it('goes through the fetch it is given instead', async () => {
    const asked: string[] = [];
    const given = new HttpCardSource({
      fetch: (input) => {
        asked.push(input as string);
        return Promise.resolve(new Response(CARD, { status: 200 }));
      },
    });
    expect(await given.fetch(target('anything'))).toMatchObject({ text: CARD });
    expect(asked).toEqual([`${base}/anything/.well-known/agent-card.json`]);
  });
});
