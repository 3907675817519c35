/**
 * The proxy's HTTP front: `/a2a/:agent/…` on the gateway's fastify app. The gateway checks the
 * caller's token (the role the agent's proxy needs), the agent and the body's size and JSON before
 * anything else; then the SDK's own server handlers take the request — the card (v1.0 or v0.3 by
 * `A2A-Version`), JSON-RPC at `/a2a/:agent`, HTTP+JSON at `/a2a/:agent/rest`, each with the SDK's
 * v0.3 compatibility — with the proxy's request handler behind them. The v1.0 card, JSON-RPC of
 * both versions (with the SDK's framework-free transports, `jsonrpc-front.ts`) and v1.0 HTTP+JSON
 * (`rest-front.ts`) are answered on the fastify route itself; v0.3 HTTP+JSON and the v0.3 card go
 * through the SDK's express handlers (it keeps their codecs inside them). What the gateway refuses itself is answered in the transport's own error shape, and
 * nothing of it reaches the agent.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import express from 'express';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { AgentCard } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContextBuilder, User } from '@a2a-js/sdk/server';
import { defaultServerCallContextBuilder } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { declaredExtensionUris } from '../../agent/index.js';
import {
  FLEETGATE_GATEWAY_V1_URI,
  FleetgateError,
  isFleetgateError,
} from '../../protocol/index.js';
import type { Role } from '../config-server.js';
import type { Gateway } from '../gateway-types.js';
import type { Authenticator } from '../http/auth.js';
import { clip, statusOf } from '../http/errors.js';
import type { Identity } from '../http/route.js';
import type { ProxyMetrics } from './metrics.js';
import { agentLabel, createProxyMetrics, measured, UNKNOWN_AGENT_LABEL } from './metrics.js';
import type { JsonRpcFront } from './jsonrpc-front.js';
import { createJsonRpcFront } from './jsonrpc-front.js';
import type { RestFront } from './rest-front.js';
import { createRestFront } from './rest-front.js';
import type { TransportFrontOptions } from './transport.js';
import type { A2aProxy } from './proxy.js';
import type { A2aProxyOptions } from './proxy-core.js';
import { createA2aProxy } from './proxy.js';
import { createPushUrlPolicy } from './push-url.js';

export { createA2aProxy } from './proxy.js';
export { createProxyMetrics } from './metrics.js';
export { createPushDelivery, type PushDelivery } from './push.js';
export { createPushUrlPolicy, type PushUrlPolicy } from './push-url.js';
export { createProxyTaskStore, UNSENT_PUSH_GRACE_MS } from './task-store.js';

/** Options of {@link createProxyFront}. */
export interface ProxyFrontOptions extends Pick<
  A2aProxyOptions,
  'gateway' | 'ports' | 'listen' | 'publicUrl' | 'onError'
> {
  auth: Authenticator;
  /** Largest request body, in bytes. */
  bodyLimit: number;
  /** The gateway's metrics registry. */
  registry: Registry;
}

/** The proxy with its HTTP front. */
export interface ProxyFront {
  readonly proxy: A2aProxy;
  /** Adds `/a2a/:agent` and `/a2a/:agent/*` to the app. */
  register(app: FastifyInstance): Promise<void>;
  close(): Promise<void>;
}

/** Where a request to the proxy goes: what shape its errors take. */
type Surface = 'jsonrpc' | 'rest' | 'card';

const IDENTITY = Symbol('fleetgate.identity');

type ProxiedRequest = IncomingMessage & { body?: unknown; [IDENTITY]?: Identity };

/** The caller as the SDK sees it: the gateway token's name. */
export class GatewayUser implements User {
  readonly #identity: Identity;
  constructor(identity: Identity) {
    this.#identity = identity;
  }
  /** The token's widest role: an admin reads every caller's tasks of the agent. */
  get role(): Identity['role'] {
    return this.#identity.role;
  }
  get isAuthenticated(): boolean {
    return this.#identity.authenticated;
  }
  get userName(): string {
    return this.#identity.name;
  }
}

/** gRPC status names of HTTP statuses (google.rpc.Status, the HTTP+JSON error body). */
const GRPC_STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  503: 'UNAVAILABLE',
};

/** True for a request for the agent's public card (served without a token). */
function isCardFetch(method: string, rest: string): boolean {
  const path = rest.split('?', 1)[0]!;
  return (
    (method === 'GET' || method === 'HEAD') &&
    (path === '/.well-known/agent-card.json' || path === '/.well-known/agent.json')
  );
}

/** True when the request asks for the v0.3 protocol (no `A2A-Version`, or a `0.x` one). */
function wantsLegacy(request: FastifyRequest): boolean {
  const header = request.headers['a2a-version'];
  const version = (Array.isArray(header) ? header[0] : header)?.trim() ?? '';
  return version === '' || version.startsWith('0.');
}

function surfaceOf(method: string, rest: string): Surface {
  const path = rest.split('?', 1)[0]!;
  if (path.startsWith('/.well-known/')) return 'card';
  if (path === '' || path === '/') return method === 'POST' ? 'jsonrpc' : 'card';
  return 'rest';
}

/** The part of the URL after `/a2a/<agent>` (with its query). */
function restOf(url: string): string {
  const match = /^\/a2a\/[^/?]*(.*)$/s.exec(url);
  return match?.[1] ?? '';
}

function errorInfo(code: string): Record<string, unknown> {
  return { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: code, domain: 'fleetgate' };
}

/** Answers a request the gateway refused itself, in the shape of the transport it came on. */
function refuse(
  reply: FastifyReply,
  surface: Surface,
  status: number,
  code: string,
  message: string,
  jsonRpc?: { code: number; id?: unknown },
): FastifyReply {
  switch (surface) {
    case 'jsonrpc':
      return reply.code(status).send({
        jsonrpc: '2.0',
        id: jsonRpc?.id ?? null,
        error: { code: jsonRpc?.code ?? -32600, message, data: [errorInfo(code)] },
      });
    case 'rest':
      return reply
        .code(status)
        .header('content-type', 'application/a2a+json')
        .send({
          error: {
            code: status,
            status: GRPC_STATUS[status] ?? 'UNKNOWN',
            message,
            details: [errorInfo(code)],
          },
        });
    case 'card':
      return reply.code(status).send({ error: { code, message } });
  }
}

/** What the front's handlers share: the options, the proxy, its metrics and one app per agent. */
interface FrontContext {
  readonly options: ProxyFrontOptions;
  /** The gateway's `proxy:` configuration, as the front was built with it. */
  readonly config: Gateway['config']['proxy'];
  readonly proxy: A2aProxy;
  readonly metrics: ProxyMetrics;
  /** Each agent's request handler (the proxy's, measured), built on its first request. */
  readonly handlers: Map<string, A2ARequestHandler>;
  /** Each agent's JSON-RPC endpoint (v1.0 and v0.3), built on its first JSON-RPC request. */
  readonly jsonRpc: Map<string, JsonRpcFront>;
  /** Each agent's v1.0 HTTP+JSON endpoint, built on its first v1.0 HTTP+JSON request. */
  readonly rest: Map<string, RestFront>;
  /** The SDK's express handlers of each agent (v0.3 JSON-RPC and HTTP+JSON, the v0.3 card). */
  readonly apps: Map<string, express.Express>;
}

/** Builds the proxy and its front. */
export function createProxyFront(options: ProxyFrontOptions): ProxyFront {
  const { gateway } = options;
  const config = gateway.config.proxy;
  const metrics: ProxyMetrics = createProxyMetrics(options.registry);
  const proxy = createA2aProxy({
    gateway,
    ports: options.ports,
    listen: options.listen,
    publicUrl: options.publicUrl,
    holdForMs: config.holdFor,
    push: {
      attempts: config.push.attempts,
      backoffMs: config.push.backoff,
      timeoutMs: config.push.timeout,
      sweepMs: config.push.sweepInterval,
    },
    observe: { held: metrics.held, state: metrics.state, push: metrics.push },
    pushUrls: createPushUrlPolicy({
      allow: config.pushUrls,
      listenHost: gateway.config.listen.host,
    }),
    onError: options.onError,
  });
  const context: FrontContext = {
    options,
    config,
    proxy,
    metrics,
    handlers: new Map(),
    jsonRpc: new Map(),
    rest: new Map(),
    apps: new Map(),
  };
  return {
    proxy,
    register: (app) => register(context, app),
    close: () => proxy.close(),
  };
}

/** The role a token needs to call `agent` through the proxy. */
function roleOf(config: FrontContext['config'], agent: string): Role {
  return config.agents[agent]?.role ?? config.role;
}

/**
 * Activates, when the request arrives, the extensions the client asks for that the agent's card
 * declares (and the gateway's own): the SDK writes the response's `A2A-Extensions` header from
 * the context, on streams before the agent has answered. A blocking call adds the extensions the
 * agent echoed once it has (the proxy's `sendMessage`).
 */
function activateRequested(gateway: Gateway, agent: string): ServerCallContextBuilder {
  return (builderOptions) => {
    const context = defaultServerCallContextBuilder(builderOptions);
    const card = gateway.agents.state(agent)?.card;
    const declared =
      card === undefined || card === null || typeof card !== 'object'
        ? new Map<string, string>()
        : declaredExtensionUris(card);
    for (const uri of builderOptions.extensions ?? []) {
      if (uri === FLEETGATE_GATEWAY_V1_URI || declared.has(uri)) {
        context.addActivatedExtension(uri);
      }
    }
    return context;
  };
}

/** The proxy's request handler of `agent`, with every call counted; one for both fronts. */
function requestHandlerOf(context: FrontContext, agent: string): A2ARequestHandler {
  let handler = context.handlers.get(agent);
  if (handler === undefined) {
    handler = measured(agent, context.proxy.handler(agent), context.metrics);
    context.handlers.set(agent, handler);
  }
  return handler;
}

/** The v1.0 front of `agent` that `create` builds (JSON-RPC or HTTP+JSON), built once. */
function frontOf<F>(
  context: FrontContext,
  built: Map<string, F>,
  agent: string,
  create: (options: TransportFrontOptions) => F,
): F {
  let front = built.get(agent);
  if (front === undefined) {
    front = create({
      requestHandler: requestHandlerOf(context, agent),
      contextBuilder: activateRequested(context.options.gateway, agent),
      onError: context.options.onError,
    });
    built.set(agent, front);
  }
  return front;
}

/**
 * The SDK's express handlers of `agent` as one express app, built once: the v0.3 card and v0.3
 * HTTP+JSON (the SDK keeps their codecs inside its express middleware). Its handlers would answer
 * v1.0 and JSON-RPC too; the front sends those to its own fronts instead ({@link frontOf}).
 */
function appFor(context: FrontContext, agent: string): express.Express {
  const { apps } = context;
  let app = apps.get(agent);
  if (app !== undefined) return app;
  app = express();
  app.disable('x-powered-by');
  const requestHandler = requestHandlerOf(context, agent);
  const userBuilder = (req: express.Request): Promise<User> =>
    Promise.resolve(new GatewayUser((req as ProxiedRequest)[IDENTITY]!));
  const legacyCompat = { enabled: true };
  const contextBuilder = activateRequested(context.options.gateway, agent);
  app.use(
    ['/.well-known/agent-card.json', '/.well-known/agent.json'],
    agentCardHandler({ agentCardProvider: requestHandler, legacyCompat, cache: { maxAge: 0 } }),
  );
  app.use('/rest', restHandler({ requestHandler, userBuilder, legacyCompat, contextBuilder }));
  app.use('/', jsonRpcHandler({ requestHandler, userBuilder, legacyCompat, contextBuilder }));
  app.use((req: express.Request, res: express.Response) => {
    res.status(404).json({
      error: {
        code: 404,
        status: 'NOT_FOUND',
        message: `No A2A method at ${req.method} ${clip(req.originalUrl)}`,
        details: [errorInfo('FLEETGATE_HTTP_ROUTE_NOT_FOUND')],
      },
    });
  });
  apps.set(agent, app);
  return app;
}

/**
 * The v1.0 card in the spec's JSON form (the protobuf JSON mapping: `{"httpAuthSecurityScheme":
 * …}`, not the SDK's in-memory `{ $case, value }` union), with an ETag and no caching: the card
 * follows the agent's. A v0.3 client gets the SDK's v0.3 rendering of the same card.
 */
async function sendCard(
  context: FrontContext,
  agent: string,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { proxy, metrics } = context;
  let card: AgentCard;
  try {
    card = await proxy.card(agent)!;
  } catch (error) {
    context.options.onError(error, 'proxy.card');
    metrics.request(agent, 'card', 'agent_unavailable');
    return refuse(
      reply,
      'card',
      503,
      'FLEETGATE_AGENT_UNAVAILABLE',
      `The card of agent ${agent} does not decode; retry once the agent serves a valid one.`,
    );
  }
  const body = JSON.stringify(AgentCard.toJSON(card));
  const etag = `W/"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
  metrics.request(agent, 'card', 'ok');
  reply
    .header('etag', etag)
    .header('cache-control', 'no-cache')
    .header('vary', 'A2A-Version')
    .header('access-control-allow-origin', '*');
  if (request.headers['if-none-match'] === etag) return reply.code(304).send();
  return reply.code(200).header('content-type', 'application/json').send(body);
}

/**
 * Takes a request to `/a2a/:agent/…`: refuses what the gateway refuses itself (an unknown agent,
 * a caller without the role, a card not loaded, a body that is not JSON), serves the v1.0 card,
 * JSON-RPC and v1.0 HTTP+JSON, and hands the rest (v0.3 HTTP+JSON and card) to the agent's
 * express app.
 */
async function handle(
  context: FrontContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { options, proxy, metrics } = context;
  const agent = (request.params as { agent: string }).agent;
  const rest = restOf(request.url);
  const surface = surfaceOf(request.method, rest);
  const count = (status: string): void => metrics.request(agent, 'unknown', status);
  if (!proxy.knows(agent)) {
    // Counted under one label, not the name sent; the name is echoed, as long as the router takes
    // a path parameter (MAX_PARAM_LENGTH) at most.
    metrics.request(UNKNOWN_AGENT_LABEL, 'unknown', 'agent_unknown');
    return refuse(reply, surface, 404, 'FLEETGATE_AGENT_UNKNOWN', `No agent named ${agent}.`);
  }
  // The card holds no secret and tells clients which token to send: it is public. Every other
  // route of the agent (the extended card included) needs the agent's proxy role.
  const cardFetch = isCardFetch(request.method, rest);
  let identity: Identity;
  try {
    identity = options.auth.check(
      cardFetch ? 'public' : roleOf(context.config, agent),
      request.headers.authorization,
      request.ip,
    );
  } catch (error) {
    const coded = isFleetgateError(error)
      ? error
      : new FleetgateError('FLEETGATE_AUTH_INVALID', String(error));
    count(coded.code.replace(/^FLEETGATE_/, '').toLowerCase());
    return refuse(reply, surface, statusOf(coded.code), coded.code, coded.message);
  }
  if (proxy.card(agent) === undefined) {
    count('agent_unavailable');
    return refuse(
      reply,
      surface,
      503,
      'FLEETGATE_AGENT_UNAVAILABLE',
      `The card of agent ${agent} has not loaded; retry shortly.`,
    );
  }
  if (cardFetch && !wantsLegacy(request)) return sendCard(context, agent, request, reply);
  let body: unknown;
  const raw = request.body;
  if (Buffer.isBuffer(raw) && raw.length > 0) {
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      count('parse_error');
      return surface === 'jsonrpc'
        ? refuse(reply, surface, 200, 'FLEETGATE_HTTP_JSON_INVALID', 'Invalid JSON payload.', {
            code: -32700,
          })
        : refuse(reply, surface, 400, 'FLEETGATE_HTTP_JSON_INVALID', 'Invalid JSON payload.');
    }
  }
  if (surface === 'jsonrpc') {
    await frontOf(context, context.jsonRpc, agent, createJsonRpcFront).serve(
      request,
      reply,
      body,
      new GatewayUser(identity),
    );
    return reply;
  }
  if (surface === 'rest' && !wantsLegacy(request)) {
    const path = rest.split('?', 1)[0]!;
    const served =
      (path === '/rest' || path.startsWith('/rest/')) &&
      (await frontOf(context, context.rest, agent, createRestFront).serve(
        request,
        reply,
        path.slice('/rest'.length),
        body,
        new GatewayUser(identity),
      ));
    if (served) return reply;
    count('route_not_found');
    return refuse(
      reply,
      surface,
      404,
      'FLEETGATE_HTTP_ROUTE_NOT_FOUND',
      `No A2A method at ${request.method} ${clip(path)}`,
    );
  }
  reply.hijack();
  const req = request.raw as ProxiedRequest;
  req.url = rest === '' || rest.startsWith('?') ? `/${rest}` : rest;
  req.body = body;
  req[IDENTITY] = identity;
  appFor(context, agent)(req as express.Request, reply.raw as express.Response);
  return reply;
}

/** Answers an error of the proxy's routes (a body too large, the app's own refusals, a failure). */
function answerError(
  context: FrontContext,
  error: { code?: string },
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const { options, proxy, metrics } = context;
  const surface = surfaceOf(request.method, restOf(request.url));
  // These refusals come before `handle` checked the agent: a name it does not know is not a label.
  const agent = agentLabel((request.params as { agent?: string } | undefined)?.agent, (name) =>
    proxy.knows(name),
  );
  if (
    error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ||
    error.code === 'FLEETGATE_HTTP_BODY_TOO_LARGE'
  ) {
    metrics.request(agent, 'unknown', 'body_too_large');
    void refuse(
      reply,
      surface,
      413,
      'FLEETGATE_HTTP_BODY_TOO_LARGE',
      `The request body exceeds ${options.bodyLimit} bytes; nothing was forwarded.`,
    );
    return;
  }
  // The app's own refusals (Host, Origin), in the proxy's error shape.
  if (isFleetgateError(error) && statusOf(error.code) < 500) {
    metrics.request(agent, 'unknown', error.code.replace(/^FLEETGATE_/, '').toLowerCase());
    void refuse(reply, surface, statusOf(error.code), error.code, error.message);
    return;
  }
  options.onError(error, 'proxy.front');
  void refuse(
    reply,
    surface,
    500,
    'FLEETGATE_HTTP_INTERNAL',
    `The gateway failed to answer (request ${request.id}); see its log.`,
    { code: -32603 },
  );
}

/** Adds `/a2a/:agent` and `/a2a/:agent/*` to `app`, in a scope that keeps bodies raw. */
async function register(context: FrontContext, app: FastifyInstance): Promise<void> {
  await app.register((scope, _opts, done) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: context.options.bodyLimit },
      (_request, payload, parsed) => parsed(null, payload),
    );
    scope.setErrorHandler((error: { code?: string }, request, reply) =>
      answerError(context, error, request, reply),
    );
    for (const url of ['/a2a/:agent', '/a2a/:agent/*']) {
      scope.route({
        method: ['GET', 'POST', 'DELETE'],
        url,
        // The proxy checks the caller itself: the role it needs is the agent's.
        config: { access: 'public' },
        handler: (request, reply) => handle(context, request, reply),
      });
    }
    done();
  });
}
