/**
 * The service's own keys of `fleetgate.yaml`: where the HTTP API listens, who may call it, how
 * live events are kept for clients, and how replicas share the card refresh. Composed into
 * `configSchema` by `config.ts`; kept apart so the gateway's keys and the server's evolve apart.
 */
import { z } from 'zod';
import { isIP } from 'node:net';
import { duration, size } from './config-values.js';

/** The roles of API tokens, narrowest first: each role may do what the ones before it may. */
export const ROLES = ['viewer', 'operator', 'approver', 'admin'] as const;

/** A role of an API token. */
export type Role = (typeof ROLES)[number];

/** The defaults of `listen.timeouts`, in milliseconds. */
export const DEFAULT_TIMEOUTS = { headers: 15_000, body: 30_000, request: 60_000 } as const;

/** `listen.timeouts:` — how long a client may take to send its request. */
const timeoutsSchema = z
  .strictObject({
    /** From the connection (or the previous request) to the end of the headers. */
    headers: duration.default(DEFAULT_TIMEOUTS.headers),
    /** From the end of the headers to the end of the body: a body that trickles in is cut. */
    body: duration.default(DEFAULT_TIMEOUTS.body),
    /** The whole request, headers and body. */
    request: duration.default(DEFAULT_TIMEOUTS.request),
  })
  .refine((t) => t.headers >= 1000 && t.body >= 1000 && t.request >= 1000, {
    message: 'each timeout must be at least 1s',
  })
  .default(DEFAULT_TIMEOUTS);

const PROXY_WORDS = ['loopback', 'linklocal', 'uniquelocal'];

/** An address, a CIDR range or one of proxy-addr's names. */
const proxyAddress = z.string().refine(
  (value) => {
    if (PROXY_WORDS.includes(value)) return true;
    const [address, bits, more] = value.split('/');
    if (more !== undefined || address === undefined) return false;
    const family = isIP(address);
    if (family === 0) return false;
    if (bits === undefined) return true;
    return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
  },
  { error: 'must be an IP address, a CIDR range (10.0.0.0/8) or loopback, linklocal, uniquelocal' },
);

/** A host name or address, or `.example.com` for every subdomain; no port, no scheme. */
const allowedHost = z
  .string()
  .regex(/^(\.?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?|\[?[0-9A-Fa-f:.]+\]?)$/, {
    error:
      'must be a host name (gateway.example.com), .example.com for its subdomains, or an address',
  })
  .transform((value) => value.toLowerCase());

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
    /**
     * Proxies whose `X-Forwarded-For` names the client (fastify's `trustProxy`): addresses, CIDR
     * ranges, or `loopback` / `linklocal` / `uniquelocal`. The client address is what failed
     * authentications are counted by.
     */
    trustProxy: z.array(proxyAddress).default([]),
    /**
     * Host names the API answers to besides the loopback names, `listen.host` and the host of
     * `listen.publicUrl` (a leading dot allows every subdomain). Any other `Host` is refused: a
     * web page that rebinds its own name to this address cannot reach the API.
     */
    allowedHosts: z.array(allowedHost).default([]),
    /** How long a client may take to send a request: its headers, its body, all of it. */
    timeouts: timeoutsSchema,
  })
  .superRefine((listen, ctx) => {
    const { headers, body, request } = listen.timeouts;
    if (headers > request) {
      ctx.addIssue({
        code: 'custom',
        path: ['timeouts', 'headers'],
        message: `must not be longer than timeouts.request (${request} ms)`,
      });
    }
    if (body > request) {
      ctx.addIssue({
        code: 'custom',
        path: ['timeouts', 'body'],
        message: `must not be longer than timeouts.request (${request} ms)`,
      });
    }
  })
  .default({
    host: '127.0.0.1',
    port: 7420,
    bodyLimit: 1024 * 1024,
    shutdownTimeout: 15_000,
    trustProxy: [],
    allowedHosts: [],
    timeouts: DEFAULT_TIMEOUTS,
  });

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
    .default([])
    .superRefine((tokens, ctx) => {
      // A name is who approves and who is audited: two tokens of one name are one person.
      const first = new Map<string, number>();
      tokens.forEach((token, i) => {
        const at = first.get(token.name);
        if (at === undefined) first.set(token.name, i);
        else {
          ctx.addIssue({
            code: 'custom',
            path: [i, 'name'],
            message: `is already the name of auth.tokens[${at}]`,
          });
        }
      });
    }),
  /** Failed authentications allowed per client address and minute before it gets 429. */
  maxFailuresPerMinute: z.number().int().min(1).max(10_000).default(20),
});

/**
 * The byte budgets of the live-event feed: with the defaults the feed holds at most 80 MiB
 * (32 MiB retained, 48 MiB queued for clients), whatever the size of events.
 */
export const DEFAULT_EVENT_BYTES = {
  retainBytes: 32 * 1024 * 1024,
  clientBufferBytes: 8 * 1024 * 1024,
  bufferBytes: 48 * 1024 * 1024,
} as const;

/** `events:` — the live-event feed (`GET /api/events`). */
export const eventsSchema = z
  .strictObject({
    /**
     * Events kept in memory for `Last-Event-ID` resume (the in-process bus keeps nothing else;
     * with NATS a client further behind resumes from the JetStream stream).
     */
    retain: z.number().int().min(100).max(1_000_000).default(10_000),
    /**
     * Bytes of events kept for resume, whatever their count: the oldest go first once either
     * bound is reached.
     */
    retainBytes: size.default(DEFAULT_EVENT_BYTES.retainBytes),
    /** Most events queued for one client; a client that falls further behind is cut. */
    clientBuffer: z.number().int().min(16).max(100_000).default(1000),
    /** Most bytes queued for one client; a client past it is cut (and resumes on reconnect). */
    clientBufferBytes: size.default(DEFAULT_EVENT_BYTES.clientBufferBytes),
    /**
     * Most bytes queued for every client together; past it the client furthest behind is cut
     * first, so the sum stays bounded however many clients there are.
     */
    bufferBytes: size.default(DEFAULT_EVENT_BYTES.bufferBytes),
    /** Time between heartbeat comments on an idle stream. */
    heartbeat: duration.default(15_000),
    /** Most live-event clients at once. */
    maxClients: z.number().int().min(1).max(100_000).default(5000),
  })
  .superRefine((events, ctx) => {
    if (events.retainBytes < 64 * 1024) {
      ctx.addIssue({ code: 'custom', path: ['retainBytes'], message: 'must be at least 64KiB' });
    }
    if (events.clientBufferBytes < 64 * 1024) {
      ctx.addIssue({
        code: 'custom',
        path: ['clientBufferBytes'],
        message: 'must be at least 64KiB',
      });
    }
    if (events.bufferBytes < events.clientBufferBytes) {
      ctx.addIssue({
        code: 'custom',
        path: ['bufferBytes'],
        message: `must be at least events.clientBufferBytes (${events.clientBufferBytes} bytes)`,
      });
    }
  })
  .default({
    retain: 10_000,
    clientBuffer: 1000,
    heartbeat: 15_000,
    maxClients: 5000,
    ...DEFAULT_EVENT_BYTES,
  });

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

/** True when `entry` is an entry `proxy.pushUrls` may hold (what the proxy's push-URL policy
 * understands): `public`, an http(s) URL prefix, an address or CIDR range, a host name or
 * `.example.com`. */
export function isPushUrlEntry(entry: string): boolean {
  if (entry === 'public') return true;
  if (/^https?:\/\//i.test(entry)) return URL.canParse(entry);
  const [network, bits, more] = entry.split('/');
  const family = isIP(network ?? '');
  if (family !== 0) {
    if (more !== undefined) return false;
    return (
      bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128))
    );
  }
  return /^\.?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(entry);
}

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
    /**
     * The URLs clients may register for push notifications: URL prefixes, host names
     * (`.example.com` for subdomains), addresses or CIDR ranges, or `public`. Without it, a
     * gateway beyond loopback refuses loopback, link-local, private and its own addresses (see
     * docs/a2a-proxy.md).
     */
    pushUrls: z
      .array(
        z.string().refine(isPushUrlEntry, {
          error:
            'must be a URL prefix (https://hooks.example.com/), a host name, .example.com, an address, a CIDR range or public',
        }),
      )
      .optional(),
  })
  .default(DEFAULT_PROXY);
