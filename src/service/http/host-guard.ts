/**
 * The `Host` and `Origin` checks every request passes before anything else: what stands between a
 * web page and the API when no token is configured (every local caller is then an admin).
 *
 * A page can make a browser send requests to this gateway under the page's own name by rebinding
 * that name to 127.0.0.1 (DNS rebinding); the request then carries `Host: the-page's-name`. Only
 * the names the gateway is known by are answered: the loopback names, `listen.host`, the host of
 * `listen.publicUrl` and `listen.allowedHosts`. A gateway listening on every address (`0.0.0.0`,
 * `::`) also answers to any address literal, which no page can rebind.
 *
 * A page of another origin can still send a form or a `fetch` to the right name; for requests that
 * change state, an `Origin` header (which browsers send with them) must be absent or the
 * gateway's own origin.
 */
import { isIP } from 'node:net';
import { FleetgateError } from '../../protocol/index.js';

/** Options of {@link createHostGuard}. */
export interface HostGuardOptions {
  /** `listen.host`. */
  listenHost: string;
  /** `listen.allowedHosts`: names, or `.example.com` for every subdomain. */
  allowedHosts: readonly string[];
  /** `listen.publicUrl`, whose host and origin are the gateway's own too. */
  publicUrl?: string | undefined;
}

/** Checks the `Host` and `Origin` of requests. */
export interface HostGuard {
  /**
   * Throws when the request may not be answered.
   *
   * @throws FleetgateError `FLEETGATE_HTTP_HOST_NOT_ALLOWED` (421),
   *   `FLEETGATE_HTTP_ORIGIN_NOT_ALLOWED` (403).
   */
  check(method: string, host: string | undefined, origin: string | undefined): void;
}

/** Methods that never change state; any other needs an absent or same origin. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The host name of a `Host` header value (no port, no brackets, lower case, no final dot). */
export function hostName(header: string): string | undefined {
  const value = header.trim().toLowerCase();
  if (value === '') return undefined;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0) return undefined;
    const rest = value.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return value.slice(1, end);
  }
  const match = /^([^:/\s@]+)(?::\d{1,5})?$/.exec(value);
  return match === null ? undefined : match[1]!.replace(/\.$/, '');
}

function isLoopbackName(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  return name === '::1';
}

/** Builds the guard of one gateway. */
export function createHostGuard(options: HostGuardOptions): HostGuard {
  const listenHost = options.listenHost.toLowerCase().replace(/^\[|\]$/g, '');
  const wildcard = listenHost === '0.0.0.0' || listenHost === '::';
  const exact = new Set<string>([listenHost]);
  const suffixes: string[] = [];
  for (const entry of options.allowedHosts) {
    const name = entry
      .toLowerCase()
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '');
    if (name.startsWith('.')) suffixes.push(name);
    else exact.add(name);
  }
  let publicOrigin: string | undefined;
  if (options.publicUrl !== undefined) {
    const url = new URL(options.publicUrl);
    exact.add(url.hostname.replace(/^\[|\]$/g, ''));
    publicOrigin = url.origin;
  }

  const allowed = (name: string): boolean =>
    isLoopbackName(name) ||
    exact.has(name) ||
    suffixes.some((s) => name.endsWith(s)) ||
    (wildcard && isIP(name) !== 0);

  return {
    check(method, host, origin) {
      const name = host === undefined ? undefined : hostName(host);
      if (name === undefined || !allowed(name)) {
        throw new FleetgateError(
          'FLEETGATE_HTTP_HOST_NOT_ALLOWED',
          `This gateway does not answer to the host ${JSON.stringify(host ?? '')}; add it to listen.allowedHosts if it is one of the gateway's names.`,
          { details: { host: host ?? null } },
        );
      }
      if (origin === undefined || SAFE_METHODS.has(method.toUpperCase())) return;
      // Same origin: the scheme-host-port the browser loaded the page from is the one it sends
      // this request to (the Host header, on either scheme a TLS proxy may stand in front with).
      let same = false;
      try {
        const parsed = new URL(origin);
        same =
          origin !== 'null' &&
          (parsed.origin === publicOrigin ||
            ((parsed.protocol === 'http:' || parsed.protocol === 'https:') &&
              parsed.host === new URL(`${parsed.protocol}//${host!.trim()}`).host));
      } catch {
        same = false;
      }
      if (!same) {
        throw new FleetgateError(
          'FLEETGATE_HTTP_ORIGIN_NOT_ALLOWED',
          `A ${method} request from a page of ${origin} is refused: only the gateway's own pages (or clients that send no Origin) may change state.`,
          { details: { origin } },
        );
      }
    },
  };
}
