/**
 * The gateway service: `createGateway` behind the HTTP API, listening, with a graceful stop —
 * stop taking requests, let those in flight finish (bounded by `listen.shutdownTimeout`), end the
 * live-event streams, then close the gateway (calls in flight end, their claims commit, the
 * outbox is flushed).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { FleetgateError, isFleetgateError } from '../protocol/index.js';
import type { FleetgateConfig } from './config.js';
import { tokenProblem } from './config.js';
import type { Gateway, GatewayDeps, GatewayPorts } from './gateway.js';
import { assembleGateway } from './gateway.js';
import type { ApiToken } from './http/auth.js';
import type { HttpApp } from './http/app.js';
import { answerClientError, envelope } from './http/errors.js';

/** Options of {@link startService}. */
export interface ServiceOptions {
  config: FleetgateConfig;
  /** Where token and agent secrets are read (the process environment). */
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  version: string;
  /** More of what `createGateway` takes (seeds, tracking) — never the gate or the store. */
  deps?: Pick<GatewayDeps, 'seeds' | 'tracking'>;
}

/** A running gateway service. */
export interface RunningService {
  /** `http://host:port` with the port actually bound. */
  url: string;
  gateway: Gateway;
  http: HttpApp;
  /** Graceful stop; idempotent. */
  close(): Promise<void>;
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

/**
 * The API tokens the config names, read from the environment.
 *
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` naming the key of a variable that is not set.
 */
export function resolveTokens(
  config: FleetgateConfig,
  env: Readonly<Record<string, string | undefined>>,
): ApiToken[] {
  const problems: string[] = [];
  const tokens: ApiToken[] = [];
  for (const [i, t] of (config.auth?.tokens ?? []).entries()) {
    const value = env[t.tokenEnv];
    const problem = tokenProblem(t.tokenEnv, value);
    if (problem !== undefined) problems.push(`auth.tokens[${i}].tokenEnv: ${problem}`);
    else tokens.push({ name: t.name, token: value!, roles: t.roles });
  }
  if (problems.length > 0) {
    const summary =
      problems.length === 1 ? problems[0]! : `${problems.length} API tokens cannot be used`;
    throw new FleetgateError(
      'FLEETGATE_CONFIG_INVALID',
      problems.length === 1 ? summary : `${summary}: ${problems.join('; ')}`,
      { details: { summary, problems } },
    );
  }
  return tokens;
}

/**
 * Cuts a request whose body has not fully arrived `ms` after its headers: answered 408 when
 * nothing was answered yet, and its connection closed, so a client trickling a body cannot hold
 * a connection (Node alone would wait for `requestTimeout`).
 */
function guardBody(req: IncomingMessage, res: ServerResponse, ms: number): void {
  const length = req.headers['content-length'];
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody || req.complete) return;
  const timer = setTimeout(() => {
    if (req.complete) return;
    const socket = req.socket;
    if (res.headersSent) {
      socket.destroy();
      return;
    }
    res.shouldKeepAlive = false;
    res.writeHead(408, { 'content-type': 'application/json', connection: 'close' });
    res.end(
      JSON.stringify(
        envelope(
          'FLEETGATE_HTTP_REQUEST_TIMEOUT',
          `The request body did not arrive within ${ms} ms of its headers (listen.timeouts.body).`,
        ),
      ),
      () => socket.destroy(),
    );
  }, ms);
  timer.unref();
  const clear = (): void => clearTimeout(timer);
  req.once('end', clear);
  req.once('close', clear);
}

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException): void => {
      reject(
        new FleetgateError(
          'FLEETGATE_LISTEN_FAILED',
          `Cannot listen on ${host}:${port}: ${error.code === 'EADDRINUSE' ? 'the port is in use (pass --port 0 for any free port, or another port)' : error.message}`,
          { cause: error, details: { host, port } },
        ),
      );
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve(server.address() as AddressInfo);
    });
  });
}

/**
 * Without tokens every caller is one identity (`anonymous`): a radius that needs more than one
 * distinct approver can then never be approved, and its calls wait until their approval expires.
 * Said once at start, with the two ways out.
 */
/** Rolled back, or an old replica restarted mid-roll: it runs on the newer store unchanged. */
function warnNewerStore(newer: readonly string[], logger: Logger): void {
  if (newer.length === 0) return;
  logger.warn(
    { migrations: newer },
    'store migrated by a newer release: running on it without its migrations (they only add)',
  );
}

function warnSingleApprover(config: FleetgateConfig, logger: Logger): void {
  const { approvers } = config.policy;
  const needs = (['fleet', 'public'] as const).filter((radius) => approvers[radius] > 1);
  if (needs.length === 0) return;
  logger.warn(
    { approvers },
    `without auth.tokens every caller is one approver (anonymous), so ${needs
      .map((radius) => `${radius} calls (policy.approvers.${radius}: ${approvers[radius]})`)
      .join(' and ')} can never be approved: configure auth.tokens for the approvers, or set ${needs
      .map((radius) => `policy.approvers.${radius}: 1`)
      .join(' and ')}`,
  );
}

/**
 * Starts a gateway service: listens first (so push callbacks know the port), then builds the
 * gateway with `createGateway`, then answers requests.
 *
 * @throws FleetgateError `FLEETGATE_LISTEN_UNSAFE` for a non-loopback address without tokens,
 *   `FLEETGATE_LISTEN_FAILED`, `FLEETGATE_CONFIG_INVALID`.
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config, logger } = options;
  const tokens = resolveTokens(config, options.env);
  if (tokens.length === 0 && !isLoopback(config.listen.host)) {
    throw new FleetgateError(
      'FLEETGATE_LISTEN_UNSAFE',
      `Refusing to listen on ${config.listen.host} without an API token: anyone who reaches it could dispatch and approve calls. Configure auth.tokens, or listen on 127.0.0.1.`,
      { details: { host: config.listen.host } },
    );
  }
  if (tokens.length === 0) warnSingleApprover(config, logger);

  // Until the app is ready the server answers 503: it listens first so the port is known.
  const answer: { handler?: (req: IncomingMessage, res: ServerResponse) => void } = {};
  const { timeouts } = config.listen;
  // Node checks the headers and request timeouts on this interval (30 s by default, which would
  // let a slow request run up to twice its timeout).
  const server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    guardBody(req, res, timeouts.body);
    if (answer.handler !== undefined) return answer.handler(req, res);
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify(envelope('FLEETGATE_SERVICE_NOT_READY', 'The gateway is starting.')));
  });
  server.headersTimeout = timeouts.headers;
  server.requestTimeout = timeouts.request;
  // A header timeout or a request Node cannot parse is answered in the API's error shape, not
  // Node's bare status line; the app brings its own listener, this one covers the start.
  server.on('clientError', answerClientError);
  const address = await listen(server, config.listen.host, config.listen.port);
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${shownHost}:${address.port}`;
  const reachable =
    address.address === '0.0.0.0' || address.address === '::'
      ? `http://127.0.0.1:${address.port}`
      : url;

  // fastify, pino and prom-client load only when a service starts, not with `fleetgate/gateway`.
  const [{ createHttpApp }, { createGatewayMetrics }] = await Promise.all([
    import('./http/app.js'),
    import('./http/metrics.js'),
  ]);
  const metrics = createGatewayMetrics();
  let gateway: Gateway;
  let ports: GatewayPorts;
  try {
    ({ gateway, parts: ports } = await assembleGateway(config, {
      ...options.deps,
      secrets: (name) => options.env[name],
      pushBaseUrl: config.listen.publicUrl ?? reachable,
      onGateDecision: (request, decision) => metrics.observeDecision(request, decision),
      consumers: [metrics.consumer],
    }));
  } catch (error) {
    closeUnstarted(server);
    throw error;
  }
  warnNewerStore(ports.store.newer, logger);
  let ready = false;
  let accepting = true;
  let http: HttpApp;
  try {
    http = await createHttpApp({
      gateway,
      ports,
      metrics,
      logger,
      tokens,
      ...(config.auth === undefined
        ? {}
        : { maxAuthFailuresPerMinute: config.auth.maxFailuresPerMinute }),
      trustProxy: config.listen.trustProxy,
      allowedHosts: config.listen.allowedHosts,
      bodyLimit: config.listen.bodyLimit,
      events: {
        retain: config.events.retain,
        retainBytes: config.events.retainBytes,
        clientBuffer: config.events.clientBuffer,
        clientBufferBytes: config.events.clientBufferBytes,
        bufferBytes: config.events.bufferBytes,
        heartbeatMs: config.events.heartbeat,
        maxClients: config.events.maxClients,
      },
      sequencedBus: config.bus !== 'memory',
      version: options.version,
      ready: () => ready,
      accepting: () => accepting,
      server,
      publicUrl: config.listen.publicUrl ?? reachable,
    });
  } catch (error) {
    await gateway.close();
    closeUnstarted(server);
    throw error;
  }
  if (http.handler !== undefined) answer.handler = http.handler;
  server.off('clientError', answerClientError);
  ready = true;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      ready = false;
      accepting = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections go as soon as their request in flight is answered.
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      await http.hub.close();
      const timeout = new Promise<'timeout'>((resolve) =>
        setTimeout(() => resolve('timeout'), config.listen.shutdownTimeout).unref(),
      );
      if ((await Promise.race([closed, timeout])) === 'timeout') {
        logger.warn(
          { timeoutMs: config.listen.shutdownTimeout },
          'requests still in flight at the shutdown timeout were cut',
        );
        server.closeAllConnections();
        await closed;
      }
      clearInterval(idle);
      await http.close();
      await gateway.close();
    })();
    return closing;
  };
  return { url, gateway, http, close };
}

/**
 * Closes the listener of a service whose start failed, with the connections clients opened to it
 * meanwhile (answered 503, kept alive): left open they would keep the process from exiting.
 */
function closeUnstarted(server: Server): void {
  server.close();
  server.closeAllConnections();
}

/** A one-line reason for an error that stopped the service. */
export function describeFailure(error: unknown): string {
  if (isFleetgateError(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
