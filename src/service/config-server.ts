/**
 * The service's own keys of `fleetgate.yaml`: where the HTTP API listens, who may call it, how
 * live events are kept for clients, and how replicas share the card refresh. Composed into
 * `configSchema` by `config.ts`; kept apart so the gateway's keys and the server's evolve apart.
 */
import { z } from 'zod';
import { duration } from './config-values.js';

/** The roles of API tokens, narrowest first: each role may do what the ones before it may. */
export const ROLES = ['viewer', 'operator', 'approver', 'admin'] as const;

/** A role of an API token. */
export type Role = (typeof ROLES)[number];

/** `listen:` — the HTTP API's address and request limits. */
export const listenSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(7420),
    /**
     * The URL agents and browsers reach this gateway at (push callbacks point there); default
     * `http://<host>:<port>` with the port actually bound.
     */
    publicUrl: z
      .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
      .optional(),
    /** Largest request body accepted, in bytes (default 1 MiB). Checked while it streams in. */
    bodyLimit: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** How long a stopping gateway waits for requests in flight before it cuts them. */
    shutdownTimeout: duration.default(15_000),
  })
  .default({ host: '127.0.0.1', port: 7420, bodyLimit: 1024 * 1024, shutdownTimeout: 15_000 });

/** `auth:` — bearer tokens of the HTTP API, each named and given roles. */
export const authSchema = z.strictObject({
  tokens: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        tokenEnv: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
        roles: z.array(z.enum(ROLES)).min(1),
      }),
    )
    .default([]),
  /** Failed authentications allowed per client address and minute before it gets 429. */
  maxFailuresPerMinute: z.number().int().min(1).max(10_000).default(20),
});

/** `events:` — the live-event feed (`GET /api/events`). */
export const eventsSchema = z
  .strictObject({
    /**
     * Events kept in memory for `Last-Event-ID` resume (the in-process bus keeps nothing else;
     * with NATS a client further behind resumes from the JetStream stream).
     */
    retain: z.number().int().min(100).max(1_000_000).default(10_000),
    /** Most events queued for one client; a client that falls further behind is cut. */
    clientBuffer: z.number().int().min(16).max(100_000).default(1000),
    /** Time between heartbeat comments on an idle stream. */
    heartbeat: duration.default(15_000),
    /** Most live-event clients at once. */
    maxClients: z.number().int().min(1).max(100_000).default(5000),
  })
  .default({ retain: 10_000, clientBuffer: 1000, heartbeat: 15_000, maxClients: 5000 });

/** `replicas:` — how gateways sharing one store and bus split background work. */
export const replicasSchema = z
  .strictObject({
    /**
     * The card-refresh lease: one replica refreshes cards and renews the lease every third of
     * this; when it dies another takes over within this time.
     */
    leaseTtl: duration.default(15_000),
  })
  .default({ leaseTtl: 15_000 });

/** The defaults of `proxy:`. */
export const DEFAULT_PROXY = {
  holdFor: 30_000,
  role: 'operator',
  agents: {},
  push: { attempts: 5, backoff: 1000, timeout: 10_000, sweepInterval: 5000 },
} as const;

/** `proxy:` — the A2A proxy at `/a2a/:agent` (see docs/a2a-proxy.md). */
export const proxySchema = z
  .strictObject({
    /**
     * How long a blocking `SendMessage` waits for an approval before it answers with the task in
     * `input-required` (the call goes on once approved).
     */
    holdFor: duration.default(DEFAULT_PROXY.holdFor),
    /** The role a token needs to call an agent through the proxy (default `operator`). */
    role: z.enum(ROLES).default(DEFAULT_PROXY.role),
    /** Per agent (by name): the role its proxy endpoint needs instead of `role`. */
    agents: z
      .record(z.string().min(1), z.strictObject({ role: z.enum(ROLES) }))
      .default(DEFAULT_PROXY.agents),
    /** Push notifications to clients: tries per update, first retry delay (doubling), timeout. */
    push: z
      .strictObject({
        attempts: z.number().int().min(1).max(20).default(DEFAULT_PROXY.push.attempts),
        backoff: duration.default(DEFAULT_PROXY.push.backoff),
        timeout: duration.default(DEFAULT_PROXY.push.timeout),
        /**
         * How often each replica takes over deliveries whose try is due and nobody holds (a
         * replica that died or closed between tries).
         */
        sweepInterval: duration.default(DEFAULT_PROXY.push.sweepInterval),
      })
      .default(DEFAULT_PROXY.push),
  })
  .default(DEFAULT_PROXY);
