/**
 * The HTTP API of a gateway: a fastify app over the `Gateway` interface. Every route is declared
 * once with zod schemas (validated before its handler, published at `/api/openapi.json`), checked
 * against the caller's bearer token before the body is read, and answers errors as
 * `{ error: { code, message, details? } }`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { FleetgateError } from '../../protocol/index.js';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import Fastify, { LogController } from 'fastify';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Gateway, GatewayPorts } from '../gateway-types.js';
import type { ApiToken, Authenticator } from './auth.js';
import { createAuthenticator } from './auth.js';
import type { ApiContext } from './context.js';
import { createHubDispatchWatcher } from './context.js';
import { limitBodies } from './body-limit.js';
import { createHostGuard } from './host-guard.js';
import {
  MAX_PARAM_LENGTH,
  answerClientError,
  handleError,
  handleFrameworkError,
  notFoundHandler,
} from './errors.js';
import type { EventHub } from './event-hub.js';
import { createEventHub } from './event-hub.js';
import type { GatewayMetrics } from './metrics.js';
import type { Identity, RouteSpec } from './route.js';
import { openApiDocument, registerRoutes, zodValidator } from './route.js';
import { approvalRoutes } from './routes-approvals.js';
import { fleetRoutes } from './routes-fleet.js';
import { systemRoutes } from './routes-system.js';
import { worldRoutes } from './routes-world.js';
import { dashboardRoutes } from './routes-dashboard.js';
import { loadA2aProxy } from '../proxy/index.js';

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  gateway: Gateway;
  /** What the composition root hands the service layer beside the gateway. */
  ports: GatewayPorts;
  metrics: GatewayMetrics;
  logger: Logger;
  tokens: readonly ApiToken[];
  maxAuthFailuresPerMinute?: number;
  /**
   * Proxies whose `X-Forwarded-For` names the client (`listen.trustProxy`: addresses, CIDRs,
   * `loopback`…); failed authentications are counted per client address.
   */
  trustProxy?: readonly string[];
  /** The names the API answers to besides the loopback ones and `listen.host`. */
  allowedHosts?: readonly string[];
  /** Largest request body, in bytes. */
  bodyLimit: number;
  events: {
    retain: number;
    retainBytes: number;
    clientBuffer: number;
    clientBufferBytes: number;
    bufferBytes: number;
    heartbeatMs: number;
    maxClients: number;
  };
  /** True when the bus delivers log positions (NATS JetStream). */
  sequencedBus: boolean;
  version: string;
  /** False while starting and once stopping (`/readyz` answers 503). */
  ready(): boolean;
  /** False once stopping: new API requests get 503 (push callbacks are still taken). */
  accepting(): boolean;
  /** The HTTP server the app answers on (already listening); the app never listens itself. */
  server: Server;
  /**
   * The gateway's public base URL (the A2A proxy's cards point there); default the config's
   * `listen.publicUrl`, else the server's address.
   */
  publicUrl?: string;
}

/** A built app, not yet listening. */
export interface HttpApp {
  readonly app: FastifyInstance;
  readonly hub: EventHub;
  readonly routes: readonly RouteSpec[];
  readonly auth: Authenticator;
  /** Answers the server's requests from now on (until then they get 503). */
  handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  /** Ends live-event streams, then closes the app (the server is closed by its owner). */
  close(): Promise<void>;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ANONYMOUS: Identity = { name: 'anonymous', role: 'viewer', authenticated: false };

/** Builds the app: the live-event hub and metrics start here, the server does not listen yet. */
export async function createHttpApp(options: HttpAppOptions): Promise<HttpApp> {
  const { gateway } = options;
  const hub = await startEventHub(options);
  const watcher = createHubDispatchWatcher(gateway, hub);
  const auth = createAuthenticator({
    tokens: options.tokens,
    ...(options.maxAuthFailuresPerMinute === undefined
      ? {}
      : { maxFailuresPerMinute: options.maxAuthFailuresPerMinute }),
  });

  const ctx: ApiContext = {
    gateway,
    ports: options.ports,
    hub,
    metrics: options.metrics,
    watcher,
    ready: () => options.ready(),
    version: options.version,
  };
  const routes = apiRoutes(ctx);

  let routing: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const app = Fastify({
    // pino's Logger is fastify's logger; the two declare it apart.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: options.logger as FastifyBaseLogger,
    bodyLimit: options.bodyLimit,
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    // Fastify's default (100) is below the ids the route schemas take (up to 500 characters).
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // What the router refuses before any route runs, and what Node's parser refuses before a
    // request exists, are answered in the API's error shape, not fastify's.
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: answerClientError,
    ...(options.trustProxy === undefined || options.trustProxy.length === 0
      ? {}
      : { trustProxy: [...options.trustProxy] }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Keep-alive connections idle at close are ended; requests in flight finish.
    // The server is the caller's, already listening (so push callbacks know the port before the
    // gateway starts); fastify only routes its requests.
    serverFactory: (handler) => {
      routing = handler;
      return options.server;
    },
  });
  app.decorateRequest('identity', null as unknown as Identity);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    zodValidator(
      schema as z.ZodType,
      httpPart === 'querystring' ? 'querystring' : httpPart === 'params' ? 'params' : 'body',
    ),
  );
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(notFoundHandler(routes));
  limitBodies(app, options.bodyLimit);
  guardRequests(app, options, auth);
  await registerApiRoutes(app, routes);
  const proxy = await mountA2aProxy(app, options, hub, auth);

  await app.ready();
  let closing: Promise<void> | undefined;
  return {
    app,
    hub,
    routes,
    auth,
    handler: routing,
    close() {
      closing ??= (async () => {
        watcher.close();
        await proxy.close();
        await hub.close();
        await app.close();
        await options.metrics.stop();
      })();
      return closing;
    },
  };
}

/** The live-event hub over the gateway's bus, started, and the metrics started reading it. */
async function startEventHub(options: HttpAppOptions): Promise<EventHub> {
  const { gateway } = options;
  const report = (error: unknown, where: string): void =>
    options.logger.error({ err: error, where }, 'live events');
  const hub = createEventHub({
    bus: gateway.events,
    retain: options.events.retain,
    retainBytes: options.events.retainBytes,
    clientBuffer: options.events.clientBuffer,
    clientBufferBytes: options.events.clientBufferBytes,
    bufferBytes: options.events.bufferBytes,
    heartbeatMs: options.events.heartbeatMs,
    maxClients: options.events.maxClients,
    sequenced: options.sequencedBus,
    log: gateway.eventLog,
    onError: report,
  });
  await hub.start();
  options.metrics.start(gateway, options.ports, () => hub.stats());
  return hub;
}

/** Every route of the API, in the order they are registered and documented. */
function apiRoutes(ctx: ApiContext): RouteSpec[] {
  const routes: RouteSpec[] = [
    ...systemRoutes(ctx),
    ...fleetRoutes(ctx),
    ...approvalRoutes(ctx),
    ...worldRoutes(ctx),
  ];
  let document: Record<string, unknown> | undefined;
  routes.push({
    method: 'GET',
    url: '/api/openapi.json',
    access: 'public',
    tag: 'service',
    summary: 'This document',
    responses: { 200: { description: 'OpenAPI 3.0 document of the HTTP API' } },
    handler: () => {
      document ??= openApiDocument(routes, {
        title: 'Fleetgate gateway',
        version: ctx.version,
      });
      return Promise.resolve(document);
    },
  });
  routes.push(...dashboardRoutes(ctx));
  return routes;
}

/**
 * The hooks every request passes: the host and origin guard, the shutdown refusal and the auth
 * check before the body is read; the metrics and the request log once answered.
 */
function guardRequests(app: FastifyInstance, options: HttpAppOptions, auth: Authenticator): void {
  const { gateway } = options;
  const hosts = createHostGuard({
    listenHost: gateway.config.listen.host,
    allowedHosts: options.allowedHosts ?? [],
    publicUrl: options.publicUrl ?? gateway.config.listen.publicUrl,
  });
  // Auth runs before the body is read: an unauthenticated caller cannot make the gateway parse it.
  // The host and origin come first: with no tokens they are all that keeps a web page out.
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    hosts.check(request.method, request.headers.host, request.headers.origin);
    const access = request.routeOptions.config.access;
    if (!options.accepting() && access !== 'push' && access !== 'public') {
      throw new FleetgateError('FLEETGATE_GATEWAY_CLOSED', 'The gateway is shutting down.');
    }
    request.identity =
      access === undefined
        ? ANONYMOUS
        : auth.check(access, request.headers.authorization, request.ip);
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const seconds = reply.elapsedTime / 1000;
    options.metrics.observeRequest(route, request.method, reply.statusCode, seconds);
    const line = {
      method: request.method,
      route,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime),
      caller: request.identity.name,
    };
    if (reply.statusCode >= 500) request.log.error(line, 'request');
    else if (reply.statusCode >= 400) request.log.info(line, 'request');
    else request.log.debug(line, 'request');
  });
}

/** Registers the routes: JSON ones on the app, those with a raw body in a context of their own. */
async function registerApiRoutes(
  app: FastifyInstance,
  routes: readonly RouteSpec[],
): Promise<void> {
  registerRoutes(
    app,
    routes.filter((r) => r.rawBody !== true),
  );
  // Routes whose body is not JSON (push callbacks) get it unparsed, as the request stream.
  await app.register((raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    registerRoutes(
      raw,
      routes.filter((r) => r.rawBody === true),
    );
    return Promise.resolve();
  });
}

/** The A2A proxy: `/a2a/:agent/…`, the SDK's server handlers in front of the dispatch path. */
async function mountA2aProxy(
  app: FastifyInstance,
  options: HttpAppOptions,
  hub: EventHub,
  auth: Authenticator,
): Promise<{ close(): Promise<void> }> {
  const { gateway } = options;
  const { createProxyFront } = await loadA2aProxy();
  const bound = options.server.address();
  const proxy = createProxyFront({
    gateway,
    ports: options.ports,
    listen: (listener) => hub.listen(listener),
    auth,
    publicUrl:
      options.publicUrl ??
      gateway.config.listen.publicUrl ??
      `http://127.0.0.1:${typeof bound === 'object' && bound !== null ? bound.port : gateway.config.listen.port}`,
    bodyLimit: options.bodyLimit,
    registry: options.metrics.registry,
    onError: (error, where) => options.logger.error({ err: error, where }, 'a2a proxy'),
  });
  await proxy.register(app);
  return proxy;
}
