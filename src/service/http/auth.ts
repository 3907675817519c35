/**
 * Bearer-token auth of the HTTP API: tokens named in the config (their values from the
 * environment), roles `viewer` < `operator` < `approver` < `admin`, constant-time comparison,
 * and a per-address limit on failed attempts that refuses only unauthenticated attempts (a
 * request with a valid token always passes). The address is the client's as fastify sees it:
 * behind `listen.trustProxy` proxies, the one `X-Forwarded-For` names. Push callbacks are not checked here: they carry
 * their task's own secret, which the push receiver checks.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { FleetgateError } from '../../protocol/index.js';
import type { Role } from '../config-server.js';
import { ROLES } from '../config-server.js';
import type { Access, Identity } from './route.js';

/** A token the gateway accepts. */
export interface ApiToken {
  name: string;
  /** The secret itself (read from the environment by the caller). */
  token: string;
  roles: readonly Role[];
}

/** Options of {@link createAuthenticator}. */
export interface AuthenticatorOptions {
  tokens: readonly ApiToken[];
  /** Wrong tokens allowed per address and minute before more wrong ones get 429 (default 20). */
  maxFailuresPerMinute?: number;
  now?: () => number;
}

/** Checks requests against the configured tokens. */
export interface Authenticator {
  /** True when tokens are configured (otherwise every caller is an anonymous admin). */
  readonly enabled: boolean;
  /**
   * The caller of a request to a route with `access`, or a coded error: `FLEETGATE_AUTH_REQUIRED`
   * / `_INVALID` (401), `_FORBIDDEN` (403), `_RATE_LIMITED` (429).
   */
  check(access: Access, authorization: string | undefined, address: string): Identity;
}

const RANK: Readonly<Record<Role, number>> = { viewer: 0, operator: 1, approver: 2, admin: 3 };
const WINDOW_MS = 60_000;
/** Most addresses tracked for failures; the oldest windows are dropped first. */
const MAX_ADDRESSES = 10_000;

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** The widest of a token's roles. */
export function topRole(roles: readonly Role[]): Role {
  return roles.reduce<Role>((top, role) => (RANK[role] > RANK[top] ? role : top), 'viewer');
}

/** True when `role` may call a route open to `needed` and wider roles. */
export function allows(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}

/** Builds the authenticator of an app. */
export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const now = options.now ?? Date.now;
  const limit = options.maxFailuresPerMinute ?? 20;
  // Digests of equal length, compared one by one in constant time; every token is compared, so
  // the time taken does not tell which one (or whether one) matched.
  const known = options.tokens.map((t) => ({
    name: t.name,
    role: topRole(t.roles),
    hash: digest(t.token),
  }));
  const failures = new Map<string, { count: number; since: number }>();

  const failed = (address: string): void => {
    const at = now();
    const entry = failures.get(address);
    if (entry === undefined || at - entry.since >= WINDOW_MS) {
      failures.delete(address);
      if (failures.size >= MAX_ADDRESSES) {
        const oldest = failures.keys().next();
        if (oldest.done !== true) failures.delete(oldest.value);
      }
      failures.set(address, { count: 1, since: at });
    } else entry.count += 1;
  };

  const limited = (address: string): boolean => {
    const entry = failures.get(address);
    if (entry === undefined) return false;
    if (now() - entry.since >= WINDOW_MS) {
      failures.delete(address);
      return false;
    }
    return entry.count >= limit;
  };

  return {
    enabled: known.length > 0,
    check(access, authorization, address) {
      if (access === 'public' || access === 'push') {
        return { name: 'anonymous', role: 'viewer', authenticated: false };
      }
      if (known.length === 0) return { name: 'anonymous', role: 'admin', authenticated: false };
      // A valid token always passes: the limit stands only between an address and guessing, so
      // others' failures from behind the same NAT or load balancer never lock a valid user out.
      const match = authorization === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (match === null) {
        // No token is no guess: it is not counted, and is refused for what it is.
        throw new FleetgateError(
          'FLEETGATE_AUTH_REQUIRED',
          'Send `Authorization: Bearer <token>` (a token from the gateway configuration).',
        );
      }
      const presented = digest(match[1]!);
      let found: (typeof known)[number] | undefined;
      for (const candidate of known) {
        if (timingSafeEqual(candidate.hash, presented) && found === undefined) found = candidate;
      }
      if (found === undefined) {
        if (limited(address)) {
          throw new FleetgateError(
            'FLEETGATE_AUTH_RATE_LIMITED',
            `Too many failed authentications from ${address}; retry in a minute.`,
            { details: { address } },
          );
        }
        failed(address);
        throw new FleetgateError('FLEETGATE_AUTH_INVALID', 'The bearer token is not known.');
      }
      if (!allows(found.role, access)) {
        throw new FleetgateError(
          'FLEETGATE_AUTH_FORBIDDEN',
          `Token ${found.name} (${found.role}) may not do this; it needs the ${access} role.`,
          { details: { token: found.name, role: found.role, needed: access } },
        );
      }
      return { name: found.name, role: found.role, authenticated: true };
    },
  };
}

/** Every role, narrowest first (for docs and tests). */
export const ALL_ROLES: readonly Role[] = ROLES;
