/**
 * The service routes: health, readiness, metrics, the live-event stream and the A2A
 * push-notification receiver.
 */
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { parsePattern } from '../../bus/index.js';
import { FleetgateError } from '../../protocol/index.js';
import type { ApiContext } from './context.js';
import type { RouteSpec } from './route.js';
import { defineRoute, viewerGet } from './route.js';

/** Health, readiness, metrics, events and push callbacks. */
export function systemRoutes(ctx: ApiContext): RouteSpec[] {
  return [...probeRoutes(ctx), eventsRoute(ctx), pushCallbackRoute(ctx)];
}

/** `GET /healthz`, `GET /readyz` and `GET /metrics`. */
function probeRoutes(ctx: ApiContext): RouteSpec[] {
  const gw = ctx.gateway;
  return [
    defineRoute({
      method: 'GET',
      url: '/healthz',
      access: 'public',
      tag: 'service',
      summary: 'Liveness: the process answers',
      responses: {
        200: {
          description: 'alive',
          schema: z.object({ status: z.literal('ok'), version: z.string() }),
        },
      },
      handler: () => Promise.resolve({ status: 'ok', version: ctx.version }),
    }),
    defineRoute({
      method: 'GET',
      url: '/readyz',
      access: 'public',
      tag: 'service',
      summary: 'Readiness: started, store and bus open, not stopping',
      responses: {
        200: {
          description: 'ready, with the card status counts',
          schema: z.object({
            status: z.literal('ready'),
            agents: z.record(z.string(), z.number()),
            cardRefresh: z
              .enum(['lease-holder', 'follower'])
              .describe('whether this replica fetches the cards (holds the lease)'),
          }),
        },
      },
      handler: () => {
        if (!ctx.ready()) {
          throw new FleetgateError(
            'FLEETGATE_SERVICE_NOT_READY',
            'The gateway is starting or stopping.',
          );
        }
        const agents: Record<string, number> = { fresh: 0, pending: 0, failed: 0, stale: 0 };
        for (const s of gw.agents.states()) agents[s.status] = (agents[s.status] ?? 0) + 1;
        return Promise.resolve({
          status: 'ready',
          agents,
          cardRefresh: ctx.ports.leaseHeld() ? 'lease-holder' : 'follower',
        });
      },
    }),
    viewerGet({
      url: '/metrics',
      tag: 'service',
      summary: 'Prometheus metrics',
      responses: { 200: { description: 'Prometheus text exposition', type: 'text/plain' } },
      handler: async ({ reply }) => {
        const text = await ctx.metrics.scrape();
        return reply.type(ctx.metrics.registry.contentType).send(text);
      },
    }),
  ];
}

/** `GET /api/events`: live bus events as Server-Sent Events. */
function eventsRoute(ctx: ApiContext): RouteSpec {
  return viewerGet({
    url: '/api/events',
    tag: 'events',
    summary: 'Live bus events as Server-Sent Events',
    description:
      'Each event is `id: <position>` and `data: <event envelope JSON>`. Filters use NATS syntax (`*` one token, `>` the rest), comma-separated. Reconnect with `Last-Event-ID` (or `?lastEventId=`) to resume: events still retained are replayed first. Heartbeat comments keep idle streams open. A client that falls too far behind (`events.clientBuffer` events, `events.clientBufferBytes` bytes) gets a last `event: error` frame with `{ code: "FLEETGATE_EVENTS_CLIENT_TOO_SLOW", reason, message }` and is disconnected; a position that is no longer retained gets a `fleetgate.gap` event.',
    query: z.object({
      topics: z
        .string()
        .max(4000)
        .optional()
        .describe('comma-separated NATS-syntax patterns (default `>`: everything)'),
      lastEventId: z.string().max(200).optional().describe('resume after this event id'),
    }),
    responses: {
      200: { description: 'an event stream (never ends by itself)', type: 'text/event-stream' },
    },
    handler: async ({ query, request, reply }) => {
      const patterns = (query.topics ?? '>')
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      for (const p of patterns) parsePattern(p);
      if (!ctx.hub.hasRoom()) {
        throw new FleetgateError(
          'FLEETGATE_EVENTS_TOO_MANY_CLIENTS',
          'Too many live-event clients; retry later.',
        );
      }
      const header = request.headers['last-event-id'];
      const lastEventId = (Array.isArray(header) ? header[0] : header) ?? query.lastEventId;
      void reply.hijack();
      const res = reply.raw;
      request.raw.socket.setNoDelay(true);
      request.raw.socket.setTimeout(0);
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
      });
      try {
        await ctx.hub.attach(res, patterns, lastEventId);
      } catch (error) {
        // The answer has begun: the failure can only be told on the stream itself.
        request.log.error({ err: error }, 'live events: attach failed');
        const message = error instanceof Error ? error.message : String(error);
        res.end(`event: fleetgate.error\ndata: ${JSON.stringify({ message })}\n\n`);
      }
      return reply;
    },
  });
}

/** `POST /callbacks/a2a/:taskId`: the A2A push-notification receiver. */
function pushCallbackRoute(ctx: ApiContext): RouteSpec {
  const gw = ctx.gateway;
  return defineRoute({
    method: 'POST',
    url: '/callbacks/a2a/:taskId',
    access: 'push',
    tag: 'callbacks',
    summary: 'A2A push-notification receiver (v1.0 and v0.3 bodies)',
    description:
      'Authenticated by the per-task secret the gateway registered with the agent (`X-A2A-Notification-Token` or `Authorization`), not by an API token.',
    params: z.object({ taskId: z.string().min(1).max(500) }),
    rawBody: true,
    responses: {
      200: { description: 'accepted', schema: z.object({ ok: z.literal(true) }) },
    },
    handler: async ({ params, request, reply }) => {
      // The receiver authenticates from the headers before it reads a byte, then reads the
      // stream through its own byte and time limits (`limits.pushBody*`); the host buffers
      // nothing. A body it left unread is not drained: the connection closes after the answer.
      const answer = await gw.pushReceiver({
        taskId: params.taskId,
        headers: request.headers,
        body: request.body as Readable,
      });
      if (answer.discardBody === true) {
        void reply.header('connection', 'close');
        reply.raw.once('finish', () => request.raw.destroy());
      }
      return reply.code(answer.status).send(answer.body);
    },
  });
}
