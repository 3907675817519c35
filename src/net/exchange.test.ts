import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canExchange, exchange, exchangeWhole } from './exchange.js';

const tooLarge = (size: string, status: number): Error =>
  new Error(`too large: ${size} (${status})`);

describe('agent exchange over node:http', () => {
  let server: Server;
  let base: string;
  const seen: { method: string | undefined; headers: Record<string, unknown>; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, headers: req.headers, body });
        switch (req.url) {
          case '/json':
            res.writeHead(200, { 'content-type': 'application/json', 'x-echo': 'yes' });
            res.end(JSON.stringify({ got: JSON.parse(body) as unknown }));
            return;
          case '/gzip':
            res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
            res.end(gzipSync(JSON.stringify({ zipped: true })));
            return;
          case '/chunked': {
            res.writeHead(200, { 'content-type': 'application/json' });
            for (let i = 0; i < 64; i += 1) res.write('x'.repeat(1024));
            res.end();
            return;
          }
          case '/declared':
            res.writeHead(200, { 'content-type': 'application/json', 'content-length': '999999' });
            res.write('{');
            return;
          case '/stream':
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            res.write('data: one\n\n');
            setTimeout(() => res.end('data: two\n\n'), 20);
            return;
          case '/redirect':
            res.writeHead(307, { location: '/json' }).end();
            return;
          case '/stall':
            res.writeHead(200, { 'content-type': 'application/json' });
            res.write('{"partial":');
            return;
          default:
            res.writeHead(404).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const go = (path: string, init: RequestInit = {}, signal = new AbortController().signal) =>
    exchange(new URL(path, base), init, signal, 16 * 1024, tooLarge);

  it('sends the method, headers and body, and answers a Response read whole', async () => {
    const { response, whole } = await go('/json', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: '{"a":1}',
    });
    expect(whole).toBe(true);
    expect([response.status, response.headers.get('x-echo')]).toEqual([200, 'yes']);
    expect(await response.json()).toEqual({ got: { a: 1 } });
    expect(seen.at(-1)).toMatchObject({
      method: 'POST',
      body: '{"a":1}',
      headers: { 'a2a-version': '1.0', 'content-length': '7' },
    });
  });

  it('reads an answer read whole once, by any reader, as a fetch Response does', async () => {
    const post = { method: 'POST', body: '{"b":"é"}' };
    const read = await go('/json', post);
    const { response } = read;
    expect(response).toBeInstanceOf(Response);
    expect([response.ok, response.bodyUsed]).toEqual([true, false]);
    expect(await response.text()).toBe('{"got":{"b":"é"}}');
    expect(response.bodyUsed).toBe(true);
    await expect(response.json()).rejects.toThrow(TypeError);
    await expect(response.arrayBuffer()).rejects.toThrow(/already been read/);

    const bytes = await (await go('/json', post)).response.bytes();
    expect(new TextDecoder().decode(bytes)).toBe('{"got":{"b":"é"}}');
    const buffer = await (await go('/json', post)).response.arrayBuffer();
    expect(buffer.byteLength).toBe(bytes.byteLength);

    // A stream reader or a clone gets a plain Response over the same bytes.
    const streamed = (await go('/json', post)).response;
    const copy = streamed.clone();
    expect(await new Response(streamed.body).json()).toEqual({ got: { b: 'é' } });
    expect(streamed.bodyUsed).toBe(true);
    await expect(streamed.text()).rejects.toThrow(TypeError);
    expect(await copy.json()).toEqual({ got: { b: 'é' } });
    expect(await (await go('/json', post)).response.blob().then((b) => b.size)).toBe(
      bytes.byteLength,
    );
  });

  it('decodes a compressed answer, as fetch does', async () => {
    const { response } = await go('/gzip');
    expect(await response.json()).toEqual({ zipped: true });
  });

  it('cuts an answer past the limit, declared or counted', async () => {
    await expect(go('/declared')).rejects.toThrow('too large: 999999 bytes (200)');
    await expect(go('/chunked')).rejects.toThrow('too large: more than 16384 bytes (200)');
  });

  it('keeps an event stream a stream', async () => {
    const { response, whole } = await go('/stream');
    expect(whole).toBe(false);
    expect(await response.text()).toBe('data: one\n\ndata: two\n\n');
  });

  it('hands a redirect back unread, its location with it', async () => {
    const { response } = await go('/redirect');
    expect([response.status, response.headers.get('location')]).toEqual([307, '/json']);
  });

  it('fails with the signal’s reason when aborted mid-answer', async () => {
    const controller = new AbortController();
    const pending = go('/stall', {}, controller.signal);
    setTimeout(() => controller.abort(new Error('deadline')), 50);
    await expect(pending).rejects.toThrow('deadline');
  });

  it('fails like fetch when nobody listens', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const error = (await exchange(
      new URL(`http://127.0.0.1:${port}/`),
      {},
      new AbortController().signal,
      1024,
      tooLarge,
    ).catch((e: unknown) => e)) as TypeError & { cause?: { code?: string } };
    expect(error).toBeInstanceOf(TypeError);
    expect([error.message, error.cause?.code]).toEqual(['fetch failed', 'ECONNREFUSED']);
  });

  it('leaves to fetch what it does not take', () => {
    expect(canExchange(new URL('http://x/'), { body: 'text' })).toBe(true);
    expect(canExchange(new URL('https://x/'), { body: new Uint8Array(1) })).toBe(true);
    expect(canExchange(new URL('data:text/plain,hi'), {})).toBe(false);
    expect(canExchange(new URL('http://x/'), { body: new Blob(['b']) })).toBe(false);
  });

  describe('read whole, without a Response', () => {
    const whole = (path: string, options: Partial<Parameters<typeof exchangeWhole>[1]> = {}) =>
      exchangeWhole(new URL(path, base), {
        headers: { 'a2a-version': '1.0' },
        maxBytes: 16 * 1024,
        tooLarge,
        ...options,
      });

    it('answers the status, the headers as Node parsed them and the decoded body', async () => {
      const answer = await whole('/gzip');
      expect([answer.status, answer.statusText]).toEqual([200, 'OK']);
      expect(answer.headers['content-encoding']).toBe('gzip');
      expect(JSON.parse(answer.body!.toString())).toEqual({ zipped: true });
      expect(seen.at(-1)).toMatchObject({ method: 'GET', headers: { 'a2a-version': '1.0' } });
      const moved = await whole('/redirect');
      expect([moved.status, moved.headers.location, moved.body]).toEqual([307, '/json', undefined]);
    });

    it('leaves unread the body of a status the caller does not want', async () => {
      const answer = await whole('/chunked', { maxBytes: 1024, wanted: (s) => s !== 200 });
      expect([answer.status, answer.body]).toEqual([200, undefined]);
      await expect(whole('/chunked', { maxBytes: 1024 })).rejects.toThrow(
        'too large: more than 1024 bytes (200)',
      );
      await expect(whole('/declared')).rejects.toThrow('too large: 999999 bytes (200)');
    });

    it('fails with its own deadline, or with the signal’s reason', async () => {
      await expect(
        whole('/stall', { timeoutMs: 50, timedOut: () => new Error('too slow') }),
      ).rejects.toThrow('too slow');
      const controller = new AbortController();
      const pending = whole('/stall', { signal: controller.signal, timeoutMs: 5000 });
      setTimeout(() => controller.abort(new Error('stopped')), 20);
      await expect(pending).rejects.toThrow('stopped');
      await expect(
        whole('/json', { signal: AbortSignal.abort(new Error('before')) }),
      ).rejects.toThrow('before');
    });
  });
});
