import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { answerClientError, handleError, handleNotFound, notFoundHandler } from './errors.js';

/** An error as fastify raises its own: a `FST_ERR_*` code and the status it chose. */
function fastifyError(code: string, statusCode: number, message: string): Error {
  return Object.assign(new Error(message), { code, statusCode });
}

describe('handleError with fastify errors', () => {
  const apps: FastifyInstance[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  async function answerTo(error: Error) {
    const app = Fastify();
    apps.push(app);
    app.setErrorHandler(handleError);
    app.get('/x', () => Promise.reject(error));
    const response = await app.inject({ method: 'GET', url: '/x' });
    return {
      status: response.statusCode,
      body: response.json<{ error: { code: string; message: string } }>(),
    };
  }

  it('keeps the status fastify chose for a refusal no code fits, as FLEETGATE_HTTP_REQUEST_INVALID', async () => {
    const { status, body } = await answerTo(
      fastifyError('FST_ERR_SOMETHING_NEW', 405, `Refused ${'x'.repeat(5000)}`),
    );
    expect(status).toBe(405);
    expect(body.error.code).toBe('FLEETGATE_HTTP_REQUEST_INVALID');
    expect(body.error.message).toContain('FST_ERR_SOMETHING_NEW');
    expect(body.error.message.length).toBeLessThan(300);
  });

  it('answers a 5xx fastify error (the gateway at fault) FLEETGATE_HTTP_INTERNAL', async () => {
    const { status, body } = await answerTo(
      fastifyError('FST_ERR_REP_INVALID_PAYLOAD_TYPE', 500, 'payload'),
    );
    expect(status).toBe(500);
    expect(body.error.code).toBe('FLEETGATE_HTTP_INTERNAL');
  });
});

describe('handleNotFound', () => {
  async function notFound(url: string) {
    const app = Fastify();
    app.setNotFoundHandler(handleNotFound);
    try {
      const response = await app.inject({ method: 'GET', url });
      return {
        status: response.statusCode,
        body: response.json<{ error: { code: string; message: string } }>(),
      };
    } finally {
      await app.close();
    }
  }

  it('echoes a short path whole, without its query', async () => {
    const { status, body } = await notFound('/api/nowhere?token=secret');
    expect(status).toBe(404);
    expect(body.error).toEqual({
      code: 'FLEETGATE_HTTP_ROUTE_NOT_FOUND',
      message: 'No route GET /api/nowhere; see /api/openapi.json.',
    });
  });

  it('names the route a missed path was probably meant for: a typo away, or another method', async () => {
    const routes = [
      { method: 'POST', url: '/api/dispatch' },
      { method: 'GET', url: '/api/dispatches' },
      { method: 'GET', url: '/api/dispatches/:id' },
      { method: 'POST', url: '/api/approvals/:id/approve' },
      { method: 'GET', url: '/assets/:file' },
    ];
    const missed = async (method: 'GET' | 'POST', url: string): Promise<string> => {
      const app = Fastify();
      app.setNotFoundHandler(notFoundHandler(routes));
      try {
        const response = await app.inject({ method, url });
        expect(response.statusCode).toBe(404);
        return response.json<{ error: { message: string } }>().error.message;
      } finally {
        await app.close();
      }
    };
    expect(await missed('GET', '/api/dispatch')).toBe(
      'No route GET /api/dispatch (did you mean GET /api/dispatches, or POST /api/dispatch?); see /api/openapi.json.',
    );
    expect(await missed('GET', '/api/dispatch/0a1b?wait=1s')).toBe(
      'No route GET /api/dispatch/0a1b (did you mean GET /api/dispatches/0a1b?); see /api/openapi.json.',
    );
    expect(await missed('POST', '/api/approvals/a1/aprove')).toBe(
      'No route POST /api/approvals/a1/aprove (did you mean POST /api/approvals/a1/approve?); see /api/openapi.json.',
    );
    // Nothing close: no guess.
    expect(await missed('GET', '/api/nowhere')).toBe(
      'No route GET /api/nowhere; see /api/openapi.json.',
    );
  });

  it('echoes the first 200 characters of a long path, then an ellipsis', async () => {
    const path = `/api/${'a'.repeat(195)}${'b'.repeat(10_000)}`;
    const { status, body } = await notFound(path);
    expect(status).toBe(404);
    expect(body.error.message).toBe(
      `No route GET /api/${'a'.repeat(195)}…; see /api/openapi.json.`,
    );
  });
});

describe('answerClientError', () => {
  /** A socket stand-in: what was written to it, and whether it was destroyed. */
  function socket(inFlight?: { headersSent: boolean }) {
    const stream = Object.assign(new PassThrough(), { _httpMessage: inFlight ?? null });
    let written = '';
    stream.on('data', (d: Buffer) => (written += d.toString()));
    return { stream, written: () => written };
  }

  it('writes 408 FLEETGATE_HTTP_REQUEST_TIMEOUT for a timeout, then closes', async () => {
    const s = socket();
    answerClientError(
      Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }),
      s.stream,
    );
    await new Promise((resolve) => s.stream.once('close', resolve));
    expect(s.written()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(s.written()).toContain('"code":"FLEETGATE_HTTP_REQUEST_TIMEOUT"');
    expect(s.stream.destroyed).toBe(true);
  });

  it('closes without writing when an answer is already on the wire', () => {
    const s = socket({ headersSent: true });
    answerClientError(Object.assign(new Error('parse'), { code: 'HPE_INVALID_METHOD' }), s.stream);
    expect(s.written()).toBe('');
    expect(s.stream.destroyed).toBe(true);
  });

  it('writes nothing for a socket error (a reset peer), and leaves an answered socket alone', () => {
    const reset = socket();
    answerClientError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), reset.stream);
    expect(reset.written()).toBe('');
    expect(reset.stream.destroyed).toBe(true);

    const answered = socket();
    answered.stream.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    answerClientError(
      Object.assign(new Error('parse'), { code: 'HPE_INVALID_METHOD' }),
      answered.stream,
    );
    expect(answered.stream.destroyed).toBe(false);
  });
});
